// cujit run: the main job: conformance, benchmarks (full with a GPU, quick without,
// unless told), and the report, all under one output directory.
#include <chrono>
#include <iostream>

#include "commands.hpp"
#include "cujit/device.hpp"
#include "paths.hpp"

namespace cujit::cli {

int run(const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto step = [&](int n, const char* what) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "== cujit run: step " << n << " of 3: " << what << " (" << static_cast<int>(elapsed) << " s)\n";
  };
  std::filesystem::create_directories(options.out);
  step(1, "conformance");
  const int tests = conformance(ConformanceOptions{options.out / "conformance", {}, false});
  step(2, "benchmarks");
  BenchOptions bench_options{options.out / "bench", options.quick, options.full, {}, {}};
  const int benchmarks = bench(bench_options);
  step(3, "report");
  std::vector<std::string> json;
  for (const auto& entry : std::filesystem::directory_iterator(options.out / "bench")) {
    if (entry.path().extension() == ".json") json.push_back(entry.path().string());
  }
  const int reported = json.empty() ? exit_failures : report(json, options.out / "report");
  std::cout << "cujit run: everything is in " << std::filesystem::absolute(options.out).string() << "\n"
            << "  conformance: " << (options.out / "conformance").string() << "\n"
            << "  benchmarks:  " << (options.out / "bench").string() << "\n"
            << "  report:      " << (options.out / "report" / "report.html").string() << "\n";
  if (tests == exit_usage || benchmarks == exit_usage) return exit_usage;
  return tests == exit_ok && benchmarks == exit_ok && reported == exit_ok ? exit_ok : exit_failures;
}

}  // namespace cujit::cli
