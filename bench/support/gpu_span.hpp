#pragma once
// GPU time from correlated activity records, without CUPTI: which records belong to a timed
// window, what they add up to, and whether the window got exactly the records its API
// calls must produce. support/cupti_timer.cpp feeds it what CUPTI delivered; the rules live
// here so that they are tested on a CPU (bench/tests/test_gpu_span.cpp).
//
// A window is one timed iteration. CUPTI's callbacks note the correlation id of every
// launch and copy call made while a window is open; the activity records (kernels, memcpy,
// memset) carry the id of the call that issued them. Only records whose id was noted in a
// window count for it: warm-up work, other iterations and other streams are ignored.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::bench {

struct GpuTimes {
  std::uint64_t kernels = 0;  // kernel records
  std::uint64_t copies = 0;   // memcpy and memset records
  double kernel_ns = 0;       // sum of kernel durations
  double copy_ns = 0;         // sum of memcpy and memset durations
  double span_ns = 0;         // earliest start to latest end over the window's records
  double busy_ns() const { return kernel_ns + copy_ns; }
};

// What an API call must produce, decided by its name (classify_api).
enum class CallKind {
  kernel_launch,  // exactly one kernel record (cuLaunchKernel, cudaLaunchKernel, ...)
  graph_launch,   // one or more records of any kind (cuGraphLaunch, multi-device launches)
  copy,           // one or more memcpy / memset records, no kernel
};

// The kind of a driver ("cu...") or runtime ("cuda...") API function by its name, or none
// for functions that produce no GPU activity record (cuLaunchHostFunc) or are not traced.
std::optional<CallKind> classify_api(std::string_view function);

// One traced API call, as the callback saw it at the call's exit.
struct IssuedCall {
  std::uint32_t correlation_id = 0;
  // The correlation id of the outermost traced call it ran inside: its own id, or, for a
  // driver call the runtime made inside cudaLaunchKernel, the runtime call's id. A group
  // of nested calls must produce what its outermost call's kind says, once.
  std::uint32_t group = 0;
  CallKind kind = CallKind::kernel_launch;
  int status = 0;                   // CUresult / cudaError_t; 0 is success
  const char* function = nullptr;   // a constant string owned by CUPTI, or null
  std::size_t window = 0;           // index of the window it was issued in
};

enum class RecordKind { kernel, copy };

// One activity record reduced to what the figures need.
struct ActivityRecord {
  std::uint32_t correlation_id = 0;
  RecordKind kind = RecordKind::kernel;
  std::uint64_t start = 0;  // ns; 0 means CUPTI had no timestamp
  std::uint64_t end = 0;
};

// What a window must contain beyond the per-call rules: the benchmark knows that a chain
// of N makes N kernel records.
struct WindowExpectation {
  std::optional<std::uint64_t> kernels;
};

struct WindowResult {
  GpuTimes times;
  std::string error;  // empty when the window's records are exactly what its calls make
  bool ok() const { return error.empty(); }
};

struct Attribution {
  std::vector<WindowResult> windows;  // one per expectation, in order
  std::uint64_t uncorrelated = 0;     // records that belong to no window (warm-up, ...)
};

// Attributes `records` to the windows of `calls` (IssuedCall::window indexes
// `expectations`) and checks every window: each kernel launch has exactly one kernel
// record, each graph launch and copy at least one record of its sort, no call failed,
// every record has timestamps, and the kernel count matches the expectation if given.
Attribution attribute_records(const std::vector<ActivityRecord>& records, const std::vector<IssuedCall>& calls,
                              const std::vector<WindowExpectation>& expectations);

}  // namespace cujit::bench
