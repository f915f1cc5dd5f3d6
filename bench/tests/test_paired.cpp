// The statistics and the pairing behind every `pair/...` benchmark figure: the intervals
// are checked against brute force and published tables, the pairing against a fake
// clock, and the output check through Google Benchmark itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/paired.hpp"

namespace cujit::bench {
namespace {

std::vector<double> walsh_averages(const std::vector<double>& values) {
  std::vector<double> walsh;
  for (std::size_t i = 0; i < values.size(); ++i) {
    for (std::size_t j = i; j < values.size(); ++j) walsh.push_back((values[i] + values[j]) / 2);
  }
  std::sort(walsh.begin(), walsh.end());
  return walsh;
}

// The signed-rank lower critical value by enumerating all 2^n sign patterns.
long brute_force_critical(int n) {
  const int total = n * (n + 1) / 2;
  std::vector<double> count(static_cast<std::size_t>(total) + 1, 0);
  for (unsigned pattern = 0; pattern < (1u << n); ++pattern) {
    int sum = 0;
    for (int rank = 1; rank <= n; ++rank) {
      if ((pattern >> (rank - 1)) & 1u) sum += rank;
    }
    count[static_cast<std::size_t>(sum)] += 1;
  }
  double cumulative = 0;
  long critical = -1;
  for (int t = 0; t <= total; ++t) {
    cumulative += count[static_cast<std::size_t>(t)] / static_cast<double>(1u << n);
    if (cumulative > 0.025) break;
    critical = t;
  }
  return critical;
}

// Spread-out values whose Walsh averages are all distinct, so positions are unambiguous.
std::vector<double> distinct_values(int n) {
  std::vector<double> values;
  for (int i = 0; i < n; ++i) values.push_back(std::pow(1.7, i));
  return values;
}

TEST(PairedStatistics, SignTestIntervalOfTheMedian) {
  // n = 9: P(B <= 1) = 10/512 <= 0.025 < P(B <= 2): the interval is [x(2), x(8)].
  const Interval nine = median_interval({9, 1, 8, 2, 7, 3, 6, 4, 5});
  EXPECT_EQ(nine.estimate, 5);
  EXPECT_EQ(nine.low, 2);
  EXPECT_EQ(nine.high, 8);
  // n = 5: even [x(1), x(5)] covers only 93.75 %: the whole range is all one can say.
  const Interval five = median_interval({3, 1, 2, 5, 4});
  EXPECT_EQ(five.low, 1);
  EXPECT_EQ(five.high, 5);
  EXPECT_EQ(median_interval({4, 1, 3, 2, 6, 5}).estimate, 3.5);
  EXPECT_THROW(median_interval({}), std::invalid_argument);
}

TEST(PairedStatistics, SignedRankIntervalMatchesBruteForceAndTables) {
  for (int n = 1; n <= 16; ++n) {
    const std::vector<double> values = distinct_values(n);
    const std::vector<double> walsh = walsh_averages(values);
    const long critical = brute_force_critical(n);
    const Interval interval = hodges_lehmann(values);
    SCOPED_TRACE("n = " + std::to_string(n));
    if (critical < 0) {
      EXPECT_EQ(interval.low, walsh.front());
      EXPECT_EQ(interval.high, walsh.back());
    } else {
      EXPECT_EQ(interval.low, walsh[static_cast<std::size_t>(critical)]);
      EXPECT_EQ(interval.high, walsh[walsh.size() - 1 - static_cast<std::size_t>(critical)]);
    }
    const std::size_t m = walsh.size();
    EXPECT_EQ(interval.estimate, m % 2 ? walsh[m / 2] : (walsh[m / 2 - 1] + walsh[m / 2]) / 2);
  }
  // Published two-sided 5 % critical values of the signed-rank statistic.
  for (const auto& [n, critical] : std::vector<std::pair<int, std::size_t>>{{9, 5}, {10, 8}, {20, 52}, {30, 137}}) {
    const std::vector<double> walsh = walsh_averages(distinct_values(n));
    EXPECT_EQ(hodges_lehmann(distinct_values(n)).low, walsh[critical]) << "n = " << n;
  }
}

TEST(PairedStatistics, LargeSamplesUseTheNormalApproximationSmoothly) {
  // Around the switch (300 values) the interval's width must not jump.
  std::mt19937 random(7);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> values(301);
  for (double& value : values) value = noise(random);
  const Interval exact = hodges_lehmann(std::vector<double>(values.begin(), values.begin() + 300));
  const Interval approximate = hodges_lehmann(values);
  const double exact_width = exact.high - exact.low;
  EXPECT_NEAR(approximate.high - approximate.low, exact_width, 0.05 * exact_width);
}

TEST(PairedStatistics, RatioOfExactMultiplesIsExact) {
  const std::vector<double> floor{1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0, 55.0};
  std::vector<double> cujit;
  for (double f : floor) cujit.push_back(1.25 * f);
  const Interval ratio = paired_ratio(cujit, floor);
  EXPECT_DOUBLE_EQ(ratio.estimate, 1.25);
  EXPECT_DOUBLE_EQ(ratio.low, 1.25);
  EXPECT_DOUBLE_EQ(ratio.high, 1.25);
  EXPECT_THROW(paired_ratio({1.0}, {1.0, 2.0}), std::invalid_argument);
  EXPECT_THROW(paired_ratio({0.0}, {1.0}), std::invalid_argument);
}

TEST(PairedStatistics, RatioIntervalCoversTheTruthAtItsNominalRate) {
  // Drift common to both sides (the machine) cancels; per-side noise does not.
  std::mt19937 random(12345);
  std::lognormal_distribution<double> drift(0, 0.5);
  std::lognormal_distribution<double> noise(0, 0.15);
  const double truth = 1.1;
  int covered = 0;
  const int trials = 400;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<double> cujit;
    std::vector<double> floor;
    for (int round = 0; round < 15; ++round) {
      const double machine = drift(random);
      floor.push_back(machine * noise(random));
      cujit.push_back(truth * machine * noise(random));
    }
    const Interval ratio = paired_ratio(cujit, floor);
    if (ratio.low <= truth && truth <= ratio.high) ++covered;
  }
  // Nominal 95 %: with 400 trials, anything below 90 % means the interval is wrong.
  EXPECT_GE(covered, trials * 90 / 100);
  EXPECT_LE(covered, trials);
}

TEST(PairedStatistics, FirstDifferenceNamesSizesAndOffset) {
  EXPECT_FALSE(first_difference("same", "same"));
  const auto differs = first_difference("abcdef", "abcxef");
  ASSERT_TRUE(differs);
  EXPECT_NE(differs->find("at byte 3"), std::string::npos) << *differs;
  const auto shorter = first_difference("abc", "abcdef");
  ASSERT_TRUE(shorter);
  EXPECT_NE(shorter->find("3 bytes"), std::string::npos) << *shorter;
  EXPECT_NE(shorter->find("6"), std::string::npos) << *shorter;
}

// A clock that each side advances by its own cost, so rounds are known exactly.
struct FakeMachine {
  double now = 0;
  std::vector<char> order;
  Pair pair(double cujit_cost, double floor_cost) {
    return Pair{[this, cujit_cost] { now += cujit_cost; order.push_back('c'); return std::string("x"); },
                [this, floor_cost] { now += floor_cost; order.push_back('f'); return std::string("x"); }};
  }
  std::function<double()> clock() { return [this] { return now; }; }
};

TEST(PairedTiming, NoiselessPairsStopAtTheMinimumAndAlternate) {
  FakeMachine machine;
  StopRule rule;
  rule.min_rounds = 9;
  const PairedResult result = run_pair(machine.pair(3.0, 2.0), rule, machine.clock());
  EXPECT_EQ(result.rounds, 9);
  EXPECT_TRUE(result.stopped_by_noise);
  EXPECT_DOUBLE_EQ(result.ratio.estimate, 1.5);
  EXPECT_DOUBLE_EQ(result.cujit_seconds.estimate, 3.0);
  EXPECT_DOUBLE_EQ(result.floor_seconds.estimate, 2.0);
  ASSERT_EQ(machine.order.size(), 18u);
  for (std::size_t round = 0; round < 9; ++round) {
    EXPECT_EQ(machine.order[2 * round], round % 2 == 0 ? 'c' : 'f') << "round " << round;
    EXPECT_NE(machine.order[2 * round], machine.order[2 * round + 1]);
  }
}

TEST(PairedTiming, NoisyPairsRunUntilTheBudgetOrTheRoundLimit) {
  std::mt19937 random(3);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  double now = 0;
  const Pair noisy{[&] { now += jitter(random); return std::string(); },
                   [&] { now += jitter(random); return std::string(); }};
  StopRule rule;
  rule.min_rounds = 9;
  rule.target_noise = 1e-6;  // never reached
  rule.budget_seconds = 100;
  rule.max_rounds = 1000;
  const PairedResult by_budget = run_pair(noisy, rule, [&] { return now; });
  EXPECT_FALSE(by_budget.stopped_by_noise);
  // Each round costs 1 to 3 "seconds": the budget of 100 ends it after 34 to 100 rounds.
  EXPECT_GE(by_budget.rounds, 34);
  EXPECT_LE(by_budget.rounds, 100);
  EXPECT_LE(by_budget.ratio.low, by_budget.ratio.estimate);
  EXPECT_GE(by_budget.ratio.high, by_budget.ratio.estimate);

  rule.budget_seconds = 1e9;
  rule.max_rounds = 40;
  EXPECT_EQ(run_pair(noisy, rule, [&] { return now; }).rounds, 40);

  // The budget never cuts below the minimum.
  rule.budget_seconds = 0;
  rule.max_rounds = 1000;
  EXPECT_EQ(run_pair(noisy, rule, [&] { return now; }).rounds, 9);
}

// Whether a reported run gave no figure, and why: Google Benchmark 1.7 says so with
// error_occurred / error_message, 1.8 with skipped / skip_message (both are in use; 1.8's
// skipped is an enum whose zero is "not skipped").
template <typename Run, typename = void>
struct ReportsErrorOccurred : std::false_type {};
template <typename Run>
struct ReportsErrorOccurred<Run, std::void_t<decltype(std::declval<Run>().error_occurred)>> : std::true_type {};

template <typename Run>
bool failed(const Run& run) {
  if constexpr (ReportsErrorOccurred<Run>::value) {
    return run.error_occurred;
  } else {
    return static_cast<int>(run.skipped) != 0;
  }
}

template <typename Run>
std::string message(const Run& run) {
  if constexpr (ReportsErrorOccurred<Run>::value) {
    return run.error_message;
  } else {
    return run.skip_message;
  }
}

// Captures what Google Benchmark reports.
class Capture : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& reported) override { runs.insert(runs.end(), reported.begin(), reported.end()); }
  std::vector<Run> runs;
};

const benchmark::BenchmarkReporter::Run* find_run(const Capture& capture, const std::string& name) {
  for (const auto& run : capture.runs) {
    if (run.benchmark_name() == name) return &run;
  }
  return nullptr;
}

TEST(PairedBenchmark, DifferentOutputsAreAnErrorAndEqualOnesAFigure) {
  register_pair("test/different", [] {
    return Pair{[] { return std::string("cubin A"); }, [] { return std::string("cubin B!"); }};
  });
  register_pair("test/same", [] {
    return Pair{[] { return std::string("cubin"); }, [] { return std::string("cubin"); }};
  });
  Capture capture;
  benchmark::RunSpecifiedBenchmarks(&capture, "^pair/test/");
  const auto* different = find_run(capture, "pair/test/different/iterations:1/manual_time");
  const auto* same = find_run(capture, "pair/test/same/iterations:1/manual_time");
  std::string names;
  for (const auto& run : capture.runs) names += run.benchmark_name() + " ";
  ASSERT_NE(different, nullptr) << names;
  ASSERT_NE(same, nullptr) << names;
  EXPECT_TRUE(failed(*different));
  EXPECT_NE(message(*different).find("different work"), std::string::npos) << message(*different);
  EXPECT_NE(message(*different).find("first differ at byte 6"), std::string::npos) << message(*different);
  EXPECT_FALSE(failed(*same));
  EXPECT_EQ(same->counters.at("same_output").value, 1);
  EXPECT_GE(same->counters.at("rounds").value, 9);
  EXPECT_LE(same->counters.at("ratio_low").value, same->counters.at("ratio").value);
  EXPECT_GE(same->counters.at("ratio_high").value, same->counters.at("ratio").value);
}

}  // namespace
}  // namespace cujit::bench
