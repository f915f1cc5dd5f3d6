// The cujit command. Exit codes: 0 ok, 1 failures found, 2 usage or environment error
// (a selection that matches nothing included), 3 (repro) the process running the scenario
// crashed. Output that cannot be written (a full disk, /dev/full) is exit 2 naming where,
// never exit 0. Global options (--version, --quiet, --verbose, --color) may come before or
// after the subcommand.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "commands.hpp"
#include "cujit/error.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "presentation.hpp"

namespace {
int run_command_line(int argc, char** argv);
}  // namespace

int main(int argc, char** argv) {
  // The CLI owns its process: past RLIMIT_FSIZE a write it makes fails (EFBIG) and is exit
  // 2 naming where, as for a full disk, instead of SIGXFSZ ending the command.
  std::signal(SIGXFSZ, SIG_IGN);
  int code = run_command_line(argc, argv);
  if (!cujit::cli::finish_stdout()) code = cujit::cli::exit_usage;
  return code;
}

namespace {

int run_command_line(int argc, char** argv) {
  using namespace cujit::cli;
  CLI::App app{"cujit: CUDA JIT core, conformance harness and benchmarks", "cujit"};
  app.footer(
      "Exit codes: 0 ok, 1 failures found, 2 usage or environment error (a selection that matches nothing "
      "included), 3 (repro) the scenario crashed its process. NO_COLOR turns colour off.");
  app.require_subcommand(0, 1);
  app.fallthrough();

  bool show_version = false, quiet = false, loud = false;
  std::string color = "auto";
  app.add_flag("--version", show_version, "Print the versions of cujit, NVRTC, nvJitLink and the driver");
  app.add_flag("-q,--quiet", quiet, "Results and errors only: no progress lines");
  app.add_flag("-v,--verbose", loud, "Also each child's command line and output as it runs");
  app.add_option("--color", color, "auto (a terminal, NO_COLOR unset), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));

  RunOptions run_options{default_out_dir(), false, false, false};
  auto* run_cmd = app.add_subcommand("run", "The main job: conformance, benchmarks, report, in one directory");
  run_cmd->add_option("--out", run_options.out, "Output directory (default cujit-out/<timestamp>)");
  run_cmd->add_flag("--quick", run_options.quick, "Quick benchmarks even with a GPU");
  run_cmd->add_flag("--full", run_options.full, "Full benchmarks (needs a GPU)");
  run_cmd->add_flag("--json", run_options.json, "Print the steps' summaries as one JSON object");

  ConformanceOptions conformance_options;
  conformance_options.out = default_out_dir() / "conformance";
  auto* conformance_cmd = app.add_subcommand("conformance", "Run the conformance suites; JUnit XML and a summary");
  conformance_cmd->add_option("--out", conformance_options.out, "Output directory");
  conformance_cmd->add_option("--area", conformance_options.areas,
                              "Only these areas (the labels area:<name> of ctest; --list shows them)");
  conformance_cmd->add_flag("--list", conformance_options.list,
                            "List the areas (from ctest's labels), their suites and test counts; run nothing");
  conformance_cmd->add_option("--filter", conformance_options.filter,
                              "Only the tests this Google Test filter selects (Suite.*:-*Gpu*); none selected is exit 2");
  conformance_cmd->add_flag("--require-gpu", conformance_options.require_gpu,
                            "GPU tests fail instead of skipping without a GPU (CUJIT_REQUIRE_GPU=1)");
  conformance_cmd->add_flag("--isolate", conformance_options.isolate,
                            "Run each test in its own process: a test that crashes is a failure naming its signal, the others still count");
  conformance_cmd->add_option("--shard", conformance_options.shard,
                              "Run the I-th of N shards (I/N, I from 0) and write DIR/shard.json for `cujit merge`");
  conformance_cmd->add_flag("--json", conformance_options.json, "Print the summary as JSON");

  MergeOptions merge_options{{}, default_out_dir() / "merged", false};
  auto* merge_cmd = app.add_subcommand("merge", "Merge conformance shards into one JUnit file and one verdict");
  merge_cmd->add_option("dirs", merge_options.shard_dirs, "The --out directory of each shard")->required();
  merge_cmd->add_option("--out", merge_options.out, "Output directory (junit.xml, verdict.json)");
  merge_cmd->add_flag("--json", merge_options.json, "Print the verdict (verdict.json) instead of the summary");

  ResourceSpecOptions resource_spec_options;
  auto* resource_spec_cmd =
      app.add_subcommand("resource-spec", "CTest resource spec of this host's GPUs (ctest --resource-spec-file); JSON");
  resource_spec_cmd->add_option("--out", resource_spec_options.out, "Write it here (default: standard output)");
  resource_spec_cmd->add_option("--slots-per-gpu", resource_spec_options.slots_per_gpu,
                                "GPU tests that share one GPU at once (default 4)");

  BenchOptions bench_options{default_out_dir() / "bench", false, false, {}, {}, false};
  auto* bench_cmd = app.add_subcommand("bench", "Run the benchmark families; JSON out");
  bench_cmd->add_option("--out", bench_options.out, "Output directory");
  bench_cmd->add_flag("--quick", bench_options.quick, "CPU families, few repetitions");
  bench_cmd->add_flag("--full", bench_options.full, "Every family (needs a GPU)");
  bench_cmd->add_option("--family", bench_options.families,
                        "Only benchmarks whose name contains this (e.g. nvrtc, reduce_build); none matched is exit 2");
  bench_cmd->add_option("--scenario", bench_options.scenarios, "Only these scenarios (tiny, external_cu, ltoir_operator, nrt)");
  bench_cmd->add_flag("--json", bench_options.json, "Print what ran and where its JSON is, as JSON");

  std::vector<std::string> report_files;
  std::filesystem::path report_out = default_out_dir() / "report";
  bool report_json = false;
  auto* report_cmd = app.add_subcommand("report", "HTML report with PNG plots from benchmark JSON");
  report_cmd->add_option("files", report_files, "Benchmark (and peer) JSON files")->required();
  report_cmd->add_option("--out", report_out, "Output directory");
  report_cmd->add_flag("--json", report_json, "Print where the report is, as JSON");

  CompareOptions compare_options;
  auto* compare_cmd = app.add_subcommand("compare", "Regression gate: exit 1 when something slowed beyond the threshold");
  compare_cmd->add_option("baseline", compare_options.baseline, "Baseline benchmark JSON")->required();
  compare_cmd->add_option("current", compare_options.current, "Current benchmark JSON")->required();
  compare_cmd->add_option("--threshold", compare_options.threshold, "Relative slowdown that fails (default 0.05)");
  compare_cmd->add_option("--markdown", compare_options.markdown, "Also write the table as markdown here");
  compare_cmd->add_flag("--json", compare_options.json, "Print the verdict and the table as JSON");

  ReproOptions repro_options;
  std::vector<std::string> repro_args;
  auto* repro_cmd = app.add_subcommand("repro", "Run one scenario file and print the diagnostic bundle");
  repro_cmd->add_option("scenario", repro_args,
                        "Scenario JSON (see docs/scenario-format.md); with --capture, the command to run after --");
  repro_cmd->add_flag("--json", repro_options.json, "Print the bundle as JSON");
  repro_cmd->add_flag("--in-process", repro_options.in_process,
                      "Run the scenario in this process, without the child that turns a crash into a verdict");
  repro_cmd->add_option("--cache-dir", repro_options.cache_dir,
                        "Run the scenario with a build cache of its own in this directory, not the user's");
  repro_cmd->add_flag("--no-cache", repro_options.no_cache, "Run the scenario without a build cache (CUJIT_CACHE=off)");
  repro_cmd->add_option("--capture", repro_options.capture_dir,
                        "Run the command after -- with CUJIT_CAPTURE_DIR set to this directory; list the scenario files it left");
  repro_cmd->add_flag("--no-replays{false}", repro_options.replays,
                      "Do not run the scenario's replays through upstream stacks (numba-cuda, cuda.core, CuPy)");
  repro_cmd->add_flag("--all", repro_options.all,
                      "Run every scenario file of a directory (default: the source tree's scenarios/repro) into one verdict table");
  repro_cmd->add_flag("--stacks", repro_options.stacks, "With --all: add a column per upstream stack (its replays)");
  repro_cmd->add_option("--out", repro_options.out_dir, "With --all: write verdicts.md, verdicts.json and logs/ here");
  repro_cmd->add_option("--time-limit", repro_options.time_limit_s,
                        "Seconds the isolated child may run (wall and CPU time) before it is killed; 0: no limit "
                        "(default 600)")
      ->check(CLI::Range(0u, 86400u));
  repro_cmd->add_option("--memory-limit", repro_options.memory_limit_mib,
                        "MiB of address space the isolated child may map (RLIMIT_AS); 0: no limit (default 0: the "
                        "CUDA driver reserves far more than it uses)");
  // Internal: how the isolated child reports progress to its parent.
  repro_cmd->add_option("--progress-fd", repro_options.progress_fd)->check(CLI::Range(3, 9))->group("");

  CacheOptions cache_options;
  auto* cache_cmd = app.add_subcommand("cache", "The build cache: stats, clear, path, explain");
  cache_cmd->add_option("action", cache_options.action, "stats | clear | path | explain")
      ->check(CLI::IsMember({"stats", "clear", "path", "explain"}));
  cache_cmd->add_option("key", cache_options.key, "explain: a key digest (or its start) whose misses to explain");
  cache_cmd->add_option("--last", cache_options.last, "explain: the latest N misses (default 10)")->check(CLI::Range(1, 100000));
  cache_cmd->add_flag("--json", cache_options.json, "Print as JSON");
  cache_cmd->add_flag("--zero", cache_options.zero, "stats: zero the persistent counters after showing them");

  bool info_json = false;
  auto* info_cmd = app.add_subcommand("info", "Toolkit, driver, device, cache and what is supported");
  info_cmd->add_flag("--json", info_json, "Print as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? exit_ok : exit_usage;
  }
  if (quiet && loud) {
    std::cerr << "cujit: --quiet and --verbose: give one of them\n";
    return exit_usage;
  }
  const ColorChoice choice = color == "always" ? ColorChoice::always
                             : color == "never" ? ColorChoice::never
                                                : ColorChoice::automatic;
  set_presentation(quiet ? Verbosity::quiet : loud ? Verbosity::verbose : Verbosity::normal,
                   want_color(choice, ::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR")));
  try {
    if (show_version) return version();
    if (run_cmd->parsed()) return run(run_options);
    if (conformance_cmd->parsed()) return conformance(conformance_options);
    if (merge_cmd->parsed()) return merge(merge_options);
    if (resource_spec_cmd->parsed()) return resource_spec(resource_spec_options);
    if (bench_cmd->parsed()) return bench(bench_options);
    if (report_cmd->parsed()) return report(report_files, report_out, report_json);
    if (compare_cmd->parsed()) return compare(compare_options);
    if (repro_cmd->parsed()) {
      if (!repro_options.capture_dir.empty()) {
        repro_options.command = repro_args;
      } else if (repro_options.all) {
        if (repro_args.size() > 1) {
          std::cerr << "cujit repro --all: give at most one directory of scenario files\n";
          return exit_usage;
        }
        if (!repro_args.empty()) repro_options.scenario = repro_args.front();
        return repro_table(repro_options);
      } else if (repro_options.stacks || !repro_options.out_dir.empty()) {
        std::cerr << "cujit repro: --stacks and --out belong to --all\n";
        return exit_usage;
      } else if (repro_args.size() != 1) {
        std::cerr << "cujit repro: give one scenario file (or --capture DIR -- COMMAND...)\n";
        return exit_usage;
      } else {
        repro_options.scenario = repro_args.front();
      }
      return repro(repro_options);
    }
    if (cache_cmd->parsed()) return cache(cache_options);
    if (info_cmd->parsed()) return info(info_json);
  } catch (const cujit::Error& error) {
    std::cerr << "cujit: " << printable_lines(error.what()) << "\n";
    return exit_usage;
  } catch (const std::exception& error) {
    std::cerr << "cujit: " << printable_lines(error.what()) << "\n";
    return exit_usage;
  }
  std::cerr << "cujit: a subcommand is required (cujit --help lists them)\n";
  return exit_usage;
}

}  // namespace
