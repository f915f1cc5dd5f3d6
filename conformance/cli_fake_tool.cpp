// A stand-in for the programs the cujit command runs, for conformance_cli: a fake build
// tree links conformance_<area> and bench/bench_* to it, and CUJIT_PYTHON names it.
//   - CUJIT_FAKE_ARGV_LOG=FILE: appends its argument vector to FILE (each argument ends in
//     a NUL, each call in one more NUL), so a test sees exactly what a child received; the
//     variables the command sets for its children follow as "env:NAME=VALUE" entries;
//   - an argument --benchmark_list_tests=true: lists its one benchmark, cujit/fake/tiny,
//     when the --benchmark_filter regular expression (if any) matches it, exits 0;
//   - an argument --benchmark_out=PATH: writes a minimal benchmark JSON there, exits 0
//     (a bench executable);
//   - the argument --fake-capture: writes fake-scenario.json into $CUJIT_CAPTURE_DIR and
//     exits 1, as a program whose link failed under `cujit repro --capture`;
//   - otherwise a Google Test program with three tests: FakeSuite.Passes, FakeSuite.Skips,
//     and FakeSuite.Crashes, which dies of SIGSEGV when CUJIT_FAKE_CRASH=1 (else passes).
// It is not a conformance suite: CTest never runs it.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <string>

namespace {

TEST(FakeSuite, Passes) { EXPECT_EQ(1 + 1, 2); }

TEST(FakeSuite, Skips) { GTEST_SKIP() << "fake reason"; }

TEST(FakeSuite, Crashes) {
  const char* crash = std::getenv("CUJIT_FAKE_CRASH");
  if (crash != nullptr && std::string(crash) == "1") {
    std::signal(SIGSEGV, SIG_DFL);  // past a sanitizer's handler: die as an unhandled crash
    std::raise(SIGSEGV);
  }
  SUCCEED();
}

void log_arguments(int argc, char** argv) {
  const char* log = std::getenv("CUJIT_FAKE_ARGV_LOG");
  if (log == nullptr || *log == '\0') return;
  std::ofstream out(log, std::ios::binary | std::ios::app);
  for (int i = 0; i < argc; ++i) out << argv[i] << '\0';
  for (const char* name : {"CUJIT_REQUIRE_GPU", "CUJIT_CAPTURE_DIR", "CUJIT_CACHE", "CUJIT_CACHE_DIR", "GTEST_FILTER"}) {
    if (const char* value = std::getenv(name); value != nullptr) out << "env:" << name << "=" << value << '\0';
  }
  out << '\0';
}

constexpr const char* fake_benchmark = "cujit/fake/tiny";

// Google Benchmark's listing: the benchmark when the filter (if any) matches its name.
int list_benchmarks(int argc, char** argv) {
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_filter=", 0) == 0) filter = arg.substr(std::strlen("--benchmark_filter="));
  }
  try {
    if (filter.empty() || std::regex_search(fake_benchmark, std::regex(filter, std::regex::extended))) {
      std::cout << fake_benchmark << "\n";
    }
  } catch (const std::regex_error& error) {
    std::cerr << "fake benchmark: bad filter: " << error.what() << "\n";
    return 1;
  }
  return 0;
}

constexpr const char* bench_json = R"({
  "context": {"cujit_schema": "1", "date": "2026-01-01", "host_name": "fake"},
  "benchmarks": [
    {"name": "cujit/fake/tiny", "run_name": "cujit/fake/tiny", "run_type": "iteration",
     "repetitions": 1, "repetition_index": 0, "iterations": 1, "real_time": 1.0,
     "cpu_time": 1.0, "time_unit": "ms"}
  ]
}
)";

}  // namespace

int main(int argc, char** argv) {
  log_arguments(argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--benchmark_list_tests=true") == 0) return list_benchmarks(argc, argv);
    if (std::strcmp(argv[i], "--fake-capture") == 0) {
      const char* dir = std::getenv("CUJIT_CAPTURE_DIR");
      if (dir == nullptr || *dir == '\0') return 3;
      std::ofstream out(std::filesystem::path(dir) / "fake-scenario.json", std::ios::binary);
      out << R"({"schema": 1, "name": "fake"})" << "\n";
      return 1;
    }
  }
  for (int i = 1; i < argc; ++i) {
    constexpr const char* out_flag = "--benchmark_out=";
    if (std::strncmp(argv[i], out_flag, std::strlen(out_flag)) == 0) {
      std::ofstream out(argv[i] + std::strlen(out_flag), std::ios::binary);
      out << bench_json;
      std::cout << "fake benchmark\n";
      return out.good() ? 0 : 1;
    }
  }
  const std::string first = argc > 1 ? argv[1] : "";
  if (std::getenv("CUJIT_FAKE_ARGV_LOG") != nullptr && first.size() > 3 && first.ends_with(".py")) {
    std::cout << "fake python ran " << argv[1] << "\n";
    return 0;  // standing in for python3 running a report script
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
