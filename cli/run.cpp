// cujit run: the main job: conformance, benchmarks (full with a GPU, quick without,
// unless told), and the report, all under one output directory.
#include <chrono>
#include <iostream>

#include "commands.hpp"
#include "cujit/device.hpp"
#include "output.hpp"
#include "paths.hpp"

namespace cujit::cli {
namespace {

// A step that throws (a report script that died, an output it cannot write) is that
// step's environment error; the steps after it still run.
template <class Step>
int guarded(const char* name, Step&& step) {
  try {
    return step();
  } catch (const std::exception& error) {
    std::cerr << "cujit run: " << name << ": " << error.what() << "\n";
    return exit_usage;
  }
}

}  // namespace

int run(const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto step = [&](int n, const char* what) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "== cujit run: step " << n << " of 3: " << what << " (" << static_cast<int>(elapsed) << " s)\n";
  };
  make_output_dir(options.out, "run: --out");
  step(1, "conformance");
  const int tests = guarded("conformance", [&] {
    return conformance(ConformanceOptions{options.out / "conformance", {}, false, false});
  });
  step(2, "benchmarks");
  const int benchmarks = guarded("benchmarks", [&] {
    return bench(BenchOptions{options.out / "bench", options.quick, options.full, {}, {}});
  });
  step(3, "report");
  std::vector<std::string> json;
  std::error_code error;
  for (std::filesystem::directory_iterator it(options.out / "bench", error), end; !error && it != end;
       it.increment(error)) {
    if (it->path().extension() == ".json") json.push_back(it->path().string());
  }
  const int reported = json.empty() ? exit_failures : guarded("report", [&] { return report(json, options.out / "report"); });
  std::cout << "cujit run: everything is in " << std::filesystem::absolute(options.out).string() << "\n"
            << "  conformance: " << (options.out / "conformance").string() << "\n"
            << "  benchmarks:  " << (options.out / "bench").string() << "\n"
            << "  report:      " << (options.out / "report" / "report.html").string() << "\n";
  if (tests == exit_usage || benchmarks == exit_usage || reported == exit_usage) return exit_usage;
  return tests == exit_ok && benchmarks == exit_ok && reported == exit_ok ? exit_ok : exit_failures;
}

}  // namespace cujit::cli
