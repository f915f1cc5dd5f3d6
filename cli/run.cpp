// cujit run: the main job: conformance, benchmarks (full with a GPU, quick without,
// unless told), and the report, all under one output directory.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cujit/device.hpp"
#include "json_output.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "presentation.hpp"

namespace cujit::cli {
namespace {

// A step that throws (a report script that died, an output it cannot write) is that
// step's environment error; the steps after it still run.
template <class Step>
int guarded(const char* name, Step&& step) {
  try {
    return step();
  } catch (const std::exception& error) {
    std::cerr << "cujit run: " << name << ": " << printable_lines(error.what()) << "\n";
    return exit_usage;
  }
}

}  // namespace

int run(const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto step = [&](int n, const char* what) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress() << "== cujit run: step " << n << " of 3: " << what << " (" << static_cast<int>(elapsed) << " s)\n";
  };
  if (options.quick && options.full) throw CliError("run: --quick and --full: give one of them");
  make_output_dir(options.out, "run: --out");
  // With --json the steps' summaries are gathered into one document instead of printed.
  nlohmann::json tests_summary, bench_summary, report_summary;
  step(1, "conformance");
  ConformanceOptions conformance_options;
  conformance_options.out = options.out / "conformance";
  const int tests = guarded("conformance", [&] {
    return conformance(conformance_options, options.json ? &tests_summary : nullptr);
  });
  step(2, "benchmarks");
  const int benchmarks = guarded("benchmarks", [&] {
    return bench(BenchOptions{options.out / "bench", options.quick, options.full, {}, {}, false},
                 options.json ? &bench_summary : nullptr);
  });
  step(3, "report");
  std::vector<std::string> json;
  std::error_code error;
  for (std::filesystem::directory_iterator it(options.out / "bench", error), end; !error && it != end;
       it.increment(error)) {
    if (it->path().extension() == ".json") json.push_back(it->path().string());
  }
  const int reported = json.empty() ? exit_failures : guarded("report", [&] {
    return report(json, options.out / "report", false, options.json ? &report_summary : nullptr);
  });
  int status = exit_failures;
  if (tests == exit_usage || benchmarks == exit_usage || reported == exit_usage) {
    status = exit_usage;
  } else if (tests == exit_ok && benchmarks == exit_ok && reported == exit_ok) {
    status = exit_ok;
  }
  const std::string out = std::filesystem::absolute(options.out).string();
  if (options.json) {
    print_json({{"schema", 1},
                {"out", out},
                {"conformance", {{"dir", (options.out / "conformance").string()}, {"exit_code", tests}, {"summary", tests_summary}}},
                {"bench", {{"dir", (options.out / "bench").string()}, {"exit_code", benchmarks}, {"summary", bench_summary}}},
                {"report", {{"html", (options.out / "report" / "report.html").string()}, {"exit_code", reported}}},
                {"exit_code", status}});
    return status;
  }
  std::cout << "cujit run: everything is in " << out << "\n"
            << "  conformance: " << (options.out / "conformance").string() << "\n"
            << "  benchmarks:  " << (options.out / "bench").string() << "\n"
            << "  report:      " << (options.out / "report" / "report.html").string() << "\n";
  return status;
}

}  // namespace cujit::cli
