#pragma once
// GPU time from CUPTI activity records: kernels (CONCURRENT_KERNEL), memcpy and memset,
// and, opt-in with CUJIT_CUPTI_GRAPH_TRACE=1, whole graph launches (GRAPH_TRACE). CUPTI's activity API is process-wide, so there is
// one timer: enable() once per benchmark (enabling costs far more than a kernel, so doing
// it per iteration would distort what is timed), then mark() / read() around each
// iteration, disable() at the end.

#include <cstdint>

namespace cujit::bench {

struct GpuTimes {
  std::uint64_t kernels = 0;         // records
  std::uint64_t graph_launches = 0;  // records
  double kernel_ns = 0;              // sum of kernel durations
  double copy_ns = 0;                // sum of memcpy and memset durations
  double graph_ns = 0;               // sum of graph launch durations
  double span_ns = 0;                // first start to last end over all records
  double busy_ns() const { return kernel_ns + copy_ns; }
};

class CuptiTimer {
 public:
  static CuptiTimer& instance();
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  void enable();
  void disable();
  // Flushes and forgets what was recorded so far.
  void mark();
  // Flushes and returns what was recorded since mark().
  GpuTimes read();

 private:
  CuptiTimer();
  bool enabled_ = false;
};

}  // namespace cujit::bench
