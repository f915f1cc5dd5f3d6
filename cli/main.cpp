// The cujit command. Exit codes: 0 ok, 1 failures found, 2 usage or environment error,
// 3 (repro) the process running the scenario crashed. Output that cannot be written (a
// full disk, /dev/full) is exit 2 naming where, never exit 0.
#include <iostream>

#include "commands.hpp"
#include "cujit/error.hpp"
#include "output.hpp"
#include "paths.hpp"

namespace {
int run_command_line(int argc, char** argv);
}  // namespace

int main(int argc, char** argv) {
  int code = run_command_line(argc, argv);
  if (!cujit::cli::finish_stdout()) code = cujit::cli::exit_usage;
  return code;
}

namespace {

int run_command_line(int argc, char** argv) {
  using namespace cujit::cli;
  CLI::App app{"cujit: CUDA JIT core, conformance harness and benchmarks", "cujit"};
  app.footer("Exit codes: 0 ok, 1 failures found, 2 usage or environment error, 3 (repro) the scenario crashed its process.");
  app.require_subcommand(1);

  RunOptions run_options{default_out_dir(), false, false};
  auto* run_cmd = app.add_subcommand("run", "The main job: conformance, benchmarks, report, in one directory");
  run_cmd->add_option("--out", run_options.out, "Output directory (default cujit-out/<timestamp>)");
  run_cmd->add_flag("--quick", run_options.quick, "Quick benchmarks even with a GPU");
  run_cmd->add_flag("--full", run_options.full, "Full benchmarks (needs a GPU)");

  ConformanceOptions conformance_options{default_out_dir() / "conformance", {}, false, false};
  auto* conformance_cmd = app.add_subcommand("conformance", "Run the conformance suites; JUnit XML and a summary");
  conformance_cmd->add_option("--out", conformance_options.out, "Output directory");
  conformance_cmd->add_option("--area", conformance_options.areas,
                              "Only these areas (format, program, linking, module, nrt, abi, graph, cache, scenarios, reliability, cli)");
  conformance_cmd->add_flag("--isolate", conformance_options.isolate,
                            "Run each test in its own process: a test that crashes is a failure naming its signal, the others still count");
  conformance_cmd->add_option("--shard", conformance_options.shard,
                              "Run the I-th of N shards (I/N, I from 0) and write DIR/shard.json for `cujit merge`");

  MergeOptions merge_options{{}, default_out_dir() / "merged"};
  auto* merge_cmd = app.add_subcommand("merge", "Merge conformance shards into one JUnit file and one verdict");
  merge_cmd->add_option("dirs", merge_options.shard_dirs, "The --out directory of each shard")->required();
  merge_cmd->add_option("--out", merge_options.out, "Output directory (junit.xml, verdict.json)");

  ResourceSpecOptions resource_spec_options;
  auto* resource_spec_cmd =
      app.add_subcommand("resource-spec", "CTest resource spec of this host's GPUs (ctest --resource-spec-file)");
  resource_spec_cmd->add_option("--out", resource_spec_options.out, "Write it here (default: standard output)");
  resource_spec_cmd->add_option("--slots-per-gpu", resource_spec_options.slots_per_gpu,
                                "GPU tests that share one GPU at once (default 4)");

  BenchOptions bench_options{default_out_dir() / "bench", false, false, {}, {}};
  auto* bench_cmd = app.add_subcommand("bench", "Run the benchmark families; JSON out");
  bench_cmd->add_option("--out", bench_options.out, "Output directory");
  bench_cmd->add_flag("--quick", bench_options.quick, "CPU families, few repetitions");
  bench_cmd->add_flag("--full", bench_options.full, "Every family (needs a GPU)");
  bench_cmd->add_option("--family", bench_options.families, "Only benchmarks whose name contains this (e.g. nvrtc, reduce_build)");
  bench_cmd->add_option("--scenario", bench_options.scenarios, "Only these scenarios (tiny, external_cu, ltoir_operator, nrt)");

  std::vector<std::string> report_files;
  std::filesystem::path report_out = default_out_dir() / "report";
  auto* report_cmd = app.add_subcommand("report", "HTML report with PNG plots from benchmark JSON");
  report_cmd->add_option("json", report_files, "Benchmark (and peer) JSON files")->required();
  report_cmd->add_option("--out", report_out, "Output directory");

  std::string baseline, current, markdown;
  double threshold = 0.05;
  auto* compare_cmd = app.add_subcommand("compare", "Regression gate: exit 1 when something slowed beyond the threshold");
  compare_cmd->add_option("baseline", baseline, "Baseline benchmark JSON")->required();
  compare_cmd->add_option("current", current, "Current benchmark JSON")->required();
  compare_cmd->add_option("--threshold", threshold, "Relative slowdown that fails (default 0.05)");
  compare_cmd->add_option("--markdown", markdown, "Also write the table as markdown here");

  ReproOptions repro_options;
  auto* repro_cmd = app.add_subcommand("repro", "Run one scenario file and print the diagnostic bundle");
  repro_cmd->add_option("scenario", repro_options.scenario, "Scenario JSON (see docs/scenario-format.md)")->required();
  repro_cmd->add_flag("--json", repro_options.json, "Print the bundle as JSON");
  repro_cmd->add_flag("--in-process", repro_options.in_process,
                      "Run the scenario in this process, without the child that turns a crash into a verdict");
  // Internal: how the isolated child reports progress to its parent.
  repro_cmd->add_option("--progress-fd", repro_options.progress_fd)->check(CLI::Range(3, 9))->group("");

  std::string cache_action = "stats";
  auto* cache_cmd = app.add_subcommand("cache", "The build cache: stats, clear, path");
  cache_cmd->add_option("action", cache_action, "stats | clear | path")->check(CLI::IsMember({"stats", "clear", "path"}));

  auto* info_cmd = app.add_subcommand("info", "Toolkit, driver, device, cache and what is supported");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? exit_ok : exit_usage;
  }
  try {
    if (run_cmd->parsed()) return run(run_options);
    if (conformance_cmd->parsed()) return conformance(conformance_options);
    if (merge_cmd->parsed()) return merge(merge_options);
    if (resource_spec_cmd->parsed()) return resource_spec(resource_spec_options);
    if (bench_cmd->parsed()) return bench(bench_options);
    if (report_cmd->parsed()) return report(report_files, report_out);
    if (compare_cmd->parsed()) return compare(baseline, current, threshold, markdown);
    if (repro_cmd->parsed()) return repro(repro_options);
    if (cache_cmd->parsed()) return cache(cache_action);
    if (info_cmd->parsed()) return info();
  } catch (const cujit::Error& error) {
    std::cerr << "cujit: " << error.what() << "\n";
    return exit_usage;
  } catch (const std::exception& error) {
    std::cerr << "cujit: " << error.what() << "\n";
    return exit_usage;
  }
  return exit_usage;
}

}  // namespace
