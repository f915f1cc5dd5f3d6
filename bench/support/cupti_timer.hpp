#pragma once
// GPU time from CUPTI activity records: kernels (CONCURRENT_KERNEL), memcpy and memset,
// and whole graph launches (GRAPH_TRACE). start() enables the kinds, stop() flushes and
// returns what was recorded in between. One timer per process (CUPTI's activity API is
// process-wide).

#include <cstdint>
#include <string>

namespace cujit::bench {

struct GpuTimes {
  std::uint64_t kernels = 0;         // records
  std::uint64_t graph_launches = 0;  // records
  double kernel_ns = 0;              // sum of kernel durations
  double copy_ns = 0;                // sum of memcpy and memset durations
  double graph_ns = 0;               // sum of graph launch durations
  double span_ns = 0;                // first start to last end over all records
};

class CuptiTimer {
 public:
  // Registers the buffer callbacks; throws std::runtime_error naming the CUPTI call.
  CuptiTimer();
  ~CuptiTimer();
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  void start();
  GpuTimes stop();  // flushes, disables, returns the records since start()

};

}  // namespace cujit::bench
