#pragma once
// GPU time from CUPTI, correlated by id (docs/benchmarks.md, "GPU time").
//
// CUPTI is attached to a process once and stays attached: the activity API records kernels,
// memcpy and memset, and the callback API notes the correlation id of every launch and copy
// call (driver and runtime) made while a timing window is open. A repetition times all its
// iterations, each in its own window, then flushes once; each window counts only the
// records whose ids it noted (support/gpu_span.hpp), and a window whose records are not
// exactly what its calls issue is an error, never a number.
//
// Attaching changes the driver's launch path for the rest of the process, so host-time
// figures must run before it: host_time_refused() says when they cannot.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <optional>

#include "support/gpu_span.hpp"

namespace cujit::bench {

// True once CUPTI has been attached to this process (it is never detached).
bool cupti_attached();

class CuptiTimer {
 public:
  // Attaches CUPTI on the first call (activity buffers, record kinds, API callbacks) and
  // returns the timer. Throws std::runtime_error when CUPTI cannot attach (another
  // subscriber such as Nsight holds it, or no CUPTI for this driver).
  static CuptiTimer& attach();
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  // Until close_window(), the launch and copy calls this process makes belong to a new
  // window; `expected` is what the window must hold beyond the per-call rules.
  void open_window(WindowExpectation expected);
  void close_window();

  // One flush (forced, after the caller synchronised) and the attribution of everything
  // delivered since the last collect() or discard() to the windows opened since. Throws
  // std::runtime_error when CUPTI dropped records or a window is still open.
  Attribution collect();

  // Flushes and forgets records and windows (after traced work that is not timed here).
  void discard();

 private:
  CuptiTimer();
};

// What a GPU-time iteration's figure is.
enum class GpuMetric {
  span,  // first record start to last record end: the timeline, gaps included
  busy,  // sum of kernel, memcpy and memset durations
};

// The loop of a GPU-time benchmark (UseManualTime, fixed iterations): attaches CUPTI, runs
// `work` once untimed, then each iteration's `work` in its own window; after the loop one
// flush, and the sum of the iterations' figures goes to state.SetIterationTime. `work`
// must leave the device synchronised. Any window in error, dropped records or a CUPTI
// failure make the benchmark SkipWithError with the reason instead of a figure. Counters:
// `gpu_records` (correlated records per iteration), `uncorrelated_records` (records in the
// flush that belong to no window, warm-up included).
void time_on_gpu(benchmark::State& state, GpuMetric metric, WindowExpectation expected,
                 const std::function<void()>& work);

// For a host-time benchmark: when CUPTI is already attached in this process, marks it
// SkipWithError (its figure would carry CUPTI's cost) and returns true.
bool host_time_refused(benchmark::State& state);

}  // namespace cujit::bench
