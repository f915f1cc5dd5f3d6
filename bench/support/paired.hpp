#pragma once
// Paired, interleaved timing of cujit against its floor, and the statistics behind the
// ratio it reports.
//
// A benchmark that compares two programs one after the other measures the machine's drift
// as much as the programs: NVRTC's noise alone (cv 12-20 %) is larger than most effects.
// Here each round times both sides back to back, alternating which goes first, and the
// figure is the ratio cujit / floor estimated over the per-round ratios (Hodges-Lehmann on
// their logarithms) with a distribution-free 95 % interval (Wilcoxon signed rank). Rounds
// continue, like NVBench's stopping criterion, until the interval is narrow enough or the
// time budget is spent, never fewer than min_rounds.
//
// Before anything is timed, both sides run once and their outputs must be byte-identical:
// a floor that produces something else does different work and is not a floor.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace cujit::bench {

// An estimate with its 95 % interval.
struct Interval {
  double estimate = 0;
  double low = 0;
  double high = 0;
};

// Order-statistic interval for the median of `samples` (sign test, exact binomial): the
// estimate is the sample median. Needs at least 6 samples for a 95 % interval; with fewer
// the interval is the whole range.
Interval median_interval(std::vector<double> samples);

// Hodges-Lehmann estimate of the centre of `values` (median of the Walsh averages) with
// the Wilcoxon signed-rank 95 % interval (exact distribution up to 300 values, normal
// approximation beyond).
Interval hodges_lehmann(const std::vector<double>& values);

// cujit / floor from paired per-round seconds: Hodges-Lehmann on log(cujit_i / floor_i),
// exponentiated. Both vectors have one entry per round, all positive.
Interval paired_ratio(const std::vector<double>& cujit_seconds, const std::vector<double>& floor_seconds);

// Relative half width of an interval around its estimate: (high - low) / 2 / estimate.
double relative_half_width(const Interval& interval);

// Where the two outputs first differ, or nullopt when they are identical.
std::optional<std::string> first_difference(const std::string& cujit_output, const std::string& floor_output);

// When to stop adding rounds.
struct StopRule {
  int min_rounds = 9;
  int max_rounds = 400;
  double target_noise = 0.02;  // relative half width of the ratio's interval
  double budget_seconds = 4;   // wall time of the timed rounds
};

// The stop rule for this run's mode (quick: a short budget; full: the defaults);
// CUJIT_PAIR_BUDGET_SECONDS replaces the budget (the A/B gate's short rounds).
StopRule stop_rule();

// The two sides of a pair; each returns its output (PTX, cubin, ...), which must match.
struct Pair {
  std::function<std::string()> cujit;
  std::function<std::string()> floor;
};

struct PairedResult {
  Interval ratio;
  Interval cujit_seconds;  // median with its interval
  Interval floor_seconds;
  int rounds = 0;
  bool stopped_by_noise = false;  // false: by budget or max_rounds
};

// Times `pair` round by round (after the output check and one untimed run of each side).
// `clock` returns seconds; tests pass a fake one.
PairedResult run_pair(const Pair& pair, const StopRule& rule,
                      const std::function<double()>& clock = {});

// Registers `pair/<name>`: one entry whose counters are ratio, ratio_low, ratio_high,
// rounds, cujit_s, floor_s, cujit_noise, floor_noise, same_output (docs/benchmarks.md).
// `make` builds the pair when the benchmark runs (not at registration). A pair whose outputs
// differ is reported as an error naming the difference.
void register_pair(const std::string& name, std::function<Pair()> make);

}  // namespace cujit::bench
