#include "support/paired.hpp"

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "support/bench_main.hpp"

namespace cujit::bench {
namespace {

constexpr double alpha = 0.05;  // two-sided: a 95 % interval

double median_of_sorted(const std::vector<double>& sorted) {
  const std::size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

// The number of lowest order statistics to cut on each side of a sign-test interval:
// the largest c with P(Binomial(n, 1/2) <= c - 1) <= alpha / 2, so that the interval
// [x_(c), x_(n-c+1)] (1-based) covers the median with probability >= 95 %. 0 when even the
// whole range cannot reach that.
std::size_t sign_test_cut(std::size_t n) {
  // log-space binomial probabilities: n can be hundreds.
  double cumulative = 0;
  std::size_t cut = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const double log_p = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
                         std::lgamma(static_cast<double>(n - k) + 1) - static_cast<double>(n) * std::log(2.0);
    cumulative += std::exp(log_p);
    if (cumulative > alpha / 2) break;
    cut = k + 1;
  }
  return cut;
}

// The lower critical value of the Wilcoxon signed-rank statistic for n values: the
// largest c with P(T <= c) <= alpha / 2 (T = sum of the ranks of the positive values under
// a symmetric null). -1 when no c qualifies (n < 6). Exact by counting subsets of ranks
// up to 300 values, the normal approximation with continuity correction beyond.
long signed_rank_critical(std::size_t n) {
  const std::size_t total = n * (n + 1) / 2;
  if (n > 300) {
    const double mean = static_cast<double>(total) / 2;
    const auto size = static_cast<double>(n);
    const double sd = std::sqrt(size * (size + 1) * (2 * size + 1) / 24.0);
    return static_cast<long>(std::floor(mean - 1.959963984540054 * sd - 0.5));
  }
  // ways[t]: subsets of {1..k} whose sum is t, scaled by 2^-k as k grows (doubles stay in
  // range and end up as probabilities).
  std::vector<double> ways(total + 1, 0.0);
  ways[0] = 1;
  std::size_t reach = 0;
  for (std::size_t k = 1; k <= n; ++k) {
    reach += k;
    for (std::size_t t = reach; t >= k; --t) ways[t] = (ways[t] + ways[t - k]) / 2;
    for (std::size_t t = k; t-- > 0;) ways[t] /= 2;
  }
  double cumulative = 0;
  long critical = -1;
  for (std::size_t t = 0; t <= total; ++t) {
    cumulative += ways[t];
    if (cumulative > alpha / 2) break;
    critical = static_cast<long>(t);
  }
  return critical;
}

}  // namespace

Interval median_interval(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("median_interval: no samples");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const std::size_t cut = sign_test_cut(n);
  Interval interval;
  interval.estimate = median_of_sorted(samples);
  interval.low = cut == 0 ? samples.front() : samples[cut - 1];
  interval.high = cut == 0 ? samples.back() : samples[n - cut];
  return interval;
}

Interval hodges_lehmann(const std::vector<double>& values) {
  if (values.empty()) throw std::invalid_argument("hodges_lehmann: no values");
  const std::size_t n = values.size();
  std::vector<double> walsh;
  walsh.reserve(n * (n + 1) / 2);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i; j < n; ++j) walsh.push_back((values[i] + values[j]) / 2);
  }
  std::sort(walsh.begin(), walsh.end());
  const long critical = signed_rank_critical(n);
  Interval interval;
  interval.estimate = median_of_sorted(walsh);
  if (critical < 0) {
    interval.low = walsh.front();
    interval.high = walsh.back();
  } else {
    // [W_(c+1), W_(M-c)], 1-based.
    const auto c = static_cast<std::size_t>(critical);
    interval.low = walsh[c];
    interval.high = walsh[walsh.size() - 1 - c];
  }
  return interval;
}

Interval paired_ratio(const std::vector<double>& cujit_seconds, const std::vector<double>& floor_seconds) {
  if (cujit_seconds.size() != floor_seconds.size() || cujit_seconds.empty()) {
    throw std::invalid_argument("paired_ratio: needs one time per side for each round");
  }
  std::vector<double> logs;
  logs.reserve(cujit_seconds.size());
  for (std::size_t i = 0; i < cujit_seconds.size(); ++i) {
    if (!(cujit_seconds[i] > 0) || !(floor_seconds[i] > 0)) {
      throw std::invalid_argument("paired_ratio: round " + std::to_string(i) + " has a time that is not positive");
    }
    logs.push_back(std::log(cujit_seconds[i] / floor_seconds[i]));
  }
  const Interval in_logs = hodges_lehmann(logs);
  return Interval{std::exp(in_logs.estimate), std::exp(in_logs.low), std::exp(in_logs.high)};
}

double relative_half_width(const Interval& interval) {
  return interval.estimate > 0 ? (interval.high - interval.low) / 2 / interval.estimate : INFINITY;
}

std::optional<std::string> first_difference(const std::string& cujit_output, const std::string& floor_output) {
  if (cujit_output == floor_output) return std::nullopt;
  const auto mismatch = std::mismatch(cujit_output.begin(), cujit_output.end(), floor_output.begin(), floor_output.end());
  const auto offset = static_cast<std::size_t>(mismatch.first - cujit_output.begin());
  return "cujit's output has " + std::to_string(cujit_output.size()) + " bytes, the floor's " +
         std::to_string(floor_output.size()) + "; they first differ at byte " + std::to_string(offset);
}

StopRule stop_rule() {
  StopRule rule;
  if (quick()) {
    rule.budget_seconds = 1;
    rule.target_noise = 0.05;
  }
  // The A/B gate runs a pair as one short process per round and judges the rounds itself
  // (reports/cujit_reports/ab_gate.py): it asks for a shorter budget.
  if (const char* text = std::getenv("CUJIT_PAIR_BUDGET_SECONDS"); text != nullptr && *text != '\0') {
    const std::string value(text);
    double seconds = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error != std::errc{} || end != value.data() + value.size() || !(seconds > 0 && seconds <= 3600)) {
      throw std::invalid_argument("CUJIT_PAIR_BUDGET_SECONDS='" + value + "' is not a number of seconds in (0, 3600]");
    }
    rule.budget_seconds = seconds;
  }
  return rule;
}

PairedResult run_pair(const Pair& pair, const StopRule& rule, const std::function<double()>& clock) {
  const std::function<double()> now = clock ? clock : [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  std::vector<double> cujit_times;
  std::vector<double> floor_times;
  PairedResult result;
  const double start = now();
  // How often the interval is recomputed (it sorts n^2 / 2 Walsh averages): every round
  // at first, every tenth of the rounds so far later.
  int next_check = rule.min_rounds;
  for (int round = 0; round < rule.max_rounds; ++round) {
    // Alternate who goes first, so neither side always runs on the other's warm caches.
    const bool cujit_first = round % 2 == 0;
    for (int turn = 0; turn < 2; ++turn) {
      const bool cujit_turn = (turn == 0) == cujit_first;
      const double before = now();
      std::string output = cujit_turn ? pair.cujit() : pair.floor();
      benchmark::DoNotOptimize(output);
      (cujit_turn ? cujit_times : floor_times).push_back(now() - before);
    }
    const int rounds = round + 1;
    if (rounds < rule.min_rounds) continue;
    if (rounds >= next_check) {
      next_check = rounds + std::max(1, rounds / 10);
      if (relative_half_width(paired_ratio(cujit_times, floor_times)) <= rule.target_noise) {
        result.stopped_by_noise = true;
        break;
      }
    }
    if (now() - start >= rule.budget_seconds) break;
  }
  result.rounds = static_cast<int>(cujit_times.size());
  result.ratio = paired_ratio(cujit_times, floor_times);
  result.cujit_seconds = median_interval(cujit_times);
  result.floor_seconds = median_interval(floor_times);
  return result;
}

void register_pair(const std::string& name, std::function<Pair()> make) {
  benchmark::RegisterBenchmark(("pair/" + name).c_str(), [make](benchmark::State& state) {
    const Pair pair = make();
    // The output check doubles as each side's warm-up.
    const std::optional<std::string> difference = first_difference(pair.cujit(), pair.floor());
    if (difference) {
      state.SkipWithError(("the floor does different work: " + *difference).c_str());
      for (auto _ : state) {
      }
      return;
    }
    PairedResult result;
    for (auto _ : state) {
      result = run_pair(pair, stop_rule());
      state.SetIterationTime(result.cujit_seconds.estimate);
    }
    state.counters["ratio"] = result.ratio.estimate;
    state.counters["ratio_low"] = result.ratio.low;
    state.counters["ratio_high"] = result.ratio.high;
    state.counters["rounds"] = result.rounds;
    state.counters["cujit_s"] = result.cujit_seconds.estimate;
    state.counters["floor_s"] = result.floor_seconds.estimate;
    state.counters["cujit_noise"] = relative_half_width(result.cujit_seconds);
    state.counters["floor_noise"] = relative_half_width(result.floor_seconds);
    state.counters["same_output"] = 1;
    state.counters["stopped_by_noise"] = result.stopped_by_noise ? 1 : 0;
  })->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
}

}  // namespace cujit::bench
