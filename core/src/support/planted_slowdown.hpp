#pragma once
// The regression gate's planted slowdown (docs/benchmarks.md, "Measuring the gate").
//
// A gate whose power is only simulated is trusted for nothing, so the gate is measured
// against a real slowdown of cujit's own code: with CUJIT_PLANTED_SLOWDOWN=F (a fraction
// in (0, 1]) the entry points that the benchmark families time take F more time. Slow
// operations (a compile, a link, a module load, its kernel lookup and its unload, a launch, a
// build) spin for F times their own elapsed time at the end of the outermost such operation;
// a memo hit, which is faster than two clock reads, is repeated once every 1/F calls instead
// (the clock would cost more than the slowdown it measures). Unset or 0: one load of a constant per call.
//
// Only the gate's arms set it; the value is read once per process.

#include <chrono>

namespace cujit::detail {

// CUJIT_PLANTED_SLOWDOWN as read when the library was loaded: F, 0 when unset, NaN when
// it is not a fraction in [0, 1]. The hooks test it inline: off, a memo hit pays one load
// and one compare (a function-local static cost the 50 ns hit 4.6% in the A/B gate).
extern const double planted_fraction;

// F, or 0 when unset. Throws Error(usage, "environment") naming the value when it is not
// a fraction in [0, 1].
double planted_slowdown();

// Spins for F times the scope's own elapsed time when it closes, if it is the outermost
// open scope of its thread (a link inside a kernel build is not slowed twice).
class PlantedDelay {
 public:
  PlantedDelay() {
    if (planted_fraction != 0) open();
  }
  ~PlantedDelay() {
    if (planted_fraction != 0) close();
  }
  PlantedDelay(const PlantedDelay&) = delete;
  PlantedDelay& operator=(const PlantedDelay&) = delete;

 private:
  void open();
  void close();
  bool outermost_ = false;
  std::chrono::steady_clock::time_point start_;
};

// True once every 1/F calls in this thread (the fractions accumulate, so over many calls
// the extra work is F of them); always false when F is 0.
bool planted_repeat_due();
inline bool planted_repeat() { return planted_fraction != 0 && planted_repeat_due(); }

}  // namespace cujit::detail
