// cujit conformance: runs the conformance executable of each area (the areas are CTest's
// labels area:<name>, areas.hpp), reads its results from Google
// Test's JSON report (gtest_json.hpp), writes JUnit XML from them and prints a one-screen
// summary: passed / failed / skipped by area, and why tests skipped (or, with --json, the
// same as one object). --filter is Google Test's filter; a selection that runs no test is
// a usage error (exit 2). --require-gpu makes GPU tests fail instead of skipping.
// A suite that dies (a vendor library crashing on an input) is a failure naming the
// signal and the test it was in; with --isolate each test runs in its own process, so a
// crash costs only the test that crashed and the others still count. With --shard I/N it
// runs only its share of each executable's tests and leaves DIR/shard.json for `cujit merge`
// (shard_record.hpp); every run also writes DIR/resource-spec.json, this host's GPUs for
// `ctest --resource-spec-file`.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "areas.hpp"
#include "commands.hpp"
#include "devices.hpp"
#include "gtest_json.hpp"
#include "heartbeat.hpp"
#include "input_file.hpp"
#include "json_output.hpp"
#include "junit.hpp"
#include "output.hpp"
#include "presentation.hpp"
#include "paths.hpp"
#include "resource_spec.hpp"
#include "shard_record.hpp"
#include "spawn.hpp"

namespace cujit::cli {
namespace {

namespace fs = std::filesystem;

struct AreaResult {
  int passed = 0, failed = 0, skipped = 0;
  std::string crashed;  // how the executable died without its report (then one failure more)
  std::map<std::string, int> skip_reasons;
  std::vector<std::string> failures;
  std::vector<std::string> selected;  // the unsharded selection's tests, as the listing gives them
  std::vector<std::string> ran;       // "Suite.Test" of each test this run reported
};

void count(AreaResult& area, const TestCase& test) {
  area.ran.push_back(test.suite + "." + test.name);
  switch (test.result) {
    case Result::passed: ++area.passed; break;
    case Result::skipped:
      ++area.skipped;
      ++area.skip_reasons[test.message];
      break;
    case Result::failed: {
      ++area.failed;
      const bool crashed = test.message.rfind("crashed", 0) == 0 || test.message.rfind("exited", 0) == 0;
      area.failures.push_back(test.suite + "." + test.name + (crashed ? " (" + test.message + ")" : ""));
      break;
    }
  }
}

struct Area {
  std::string name;
  fs::path executable, xml, log, out;
  Shard shard;
  std::string filter;  // Google Test's filter; empty: every test
  bool require_gpu = false;
  fs::path report() const { return out / "gtest" / (name + ".json"); }
};

// Whether Google Test picks the child's tests of the area's shard (GTEST_TOTAL_SHARDS and
// GTEST_SHARD_INDEX), or the child runs what its arguments name.
enum class GtestSharding { by_environment, none };

ChildSpec suite_child(const Area& area, std::vector<std::string> args, GtestSharding sharding) {
  ChildSpec child = child_spec({area.executable.string()});
  child.argv.insert(child.argv.end(), args.begin(), args.end());
  child.environment = {{"CUJIT_CACHE_DIR", (area.out / "cache").string()}};
  // The command decides the selection and the report: inherited Google Test variables
  // would change them behind its options' back.
  child.unset = {"GTEST_FILTER", "GTEST_OUTPUT", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX", "GTEST_ALSO_RUN_DISABLED_TESTS"};
  if (area.require_gpu) child.environment.emplace_back("CUJIT_REQUIRE_GPU", "1");
  if (sharding == GtestSharding::by_environment && area.shard.total > 1) {
    child.environment.emplace_back("GTEST_TOTAL_SHARDS", std::to_string(area.shard.total));
    child.environment.emplace_back("GTEST_SHARD_INDEX", std::to_string(area.shard.index));
  }
  child.out = Sink::capture;
  child.err_to_out = true;
  if (verbose()) {
    std::string line;
    for (const std::string& arg : child.argv) line += (line.empty() ? "" : " ") + shown(arg);
    std::cerr << "cujit conformance: running " << line << "\n";
  }
  return child;
}

// The child's output into its log (and to stderr under --verbose).
void log_output(OutputFile& log, Tail& tail, std::string_view text) {
  log.write(text);
  tail.append(text);
  if (verbose()) std::cerr << printable_stream(text);
}

// The test cases of a Google Test JSON report, skip reasons from `log` where the report
// has none. Nullopt when the report is missing (a child that died before writing it).
std::optional<std::vector<TestCase>> read_report(const fs::path& report, std::string_view log) {
  std::string why;
  const auto text = read_input_file(report, why);
  if (!text) return std::nullopt;
  std::vector<TestCase> cases = parse_gtest_report(*text, report.string());
  for (TestCase& test : cases) {
    if (test.result != Result::skipped || !test.message.empty()) continue;
    test.message = skip_reason_from_log(log, test.suite, test.name);
    if (test.message.empty()) test.message = "no reason given";
  }
  return cases;
}

std::vector<std::string> with_filter(const Area& area, std::vector<std::string> args) {
  if (!area.filter.empty()) args.push_back("--gtest_filter=" + area.filter);
  return args;
}

// The area's whole selection: every test --filter selects, unsharded, in Google Test's
// order (the order its sharding counts in), listed by the suite itself into `reports`.
// Nullopt with `why` when the suite cannot list its tests.
std::optional<std::vector<std::string>> list_selection(const Area& area, const fs::path& reports, OutputFile& log,
                                                       std::string& why) {
  make_output_dir(reports, "conformance: --out");
  const fs::path listing = reports / "tests.json";
  std::error_code ignored;
  fs::remove(listing, ignored);  // an earlier run's listing must not pass for this one's
  Tail listing_tail;
  const ChildExit listed = run_child(
      suite_child(area, with_filter(area, {"--gtest_list_tests", "--gtest_output=json:" + listing.string()}),
                  GtestSharding::none),
      [&](Stream, std::string_view text) { log_output(log, listing_tail, text); });
  std::string why_listing;
  const auto listing_text = read_input_file(listing, why_listing);
  if (!listed.exited() || listed.exit_code != 0 || !listing_text) {
    why = "listing its tests: " + (listing_text ? describe(listed) : listing.string() + " " + why_listing);
    return std::nullopt;
  }
  return parse_gtest_listing(*listing_text, listing.string());
}

// A suite that could not list its tests: one failure naming why; it runs nothing.
AreaResult listing_failed(const Area& area, const std::string& why) {
  AreaResult result;
  std::cerr << "cujit conformance: " << area.name << " " << printable(why) << ", see " << shown(area.log.string()) << "\n";
  ++result.failed;
  result.crashed = why;
  result.failures.push_back("(" + why + ": see " + area.log.string() + ")");
  return result;
}

// One process for the whole executable, its output into the log; the selection is listed
// first, for the shard's record.
AreaResult run_whole(const Area& area) {
  std::error_code ignored;
  fs::remove(area.xml, ignored);  // an earlier run's report must not pass for this one's
  fs::remove(area.report(), ignored);
  OutputFile log(area.log);
  std::string why_unlisted;
  const auto selection = list_selection(area, area.out / "listing" / area.name, log, why_unlisted);
  if (!selection) {
    log.finish();
    return listing_failed(area, why_unlisted);
  }
  AreaResult result;
  result.selected = *selection;
  Tail tail;
  const Heartbeat heartbeat(area.name);
  ChildSpec child = suite_child(area, with_filter(area, {"--gtest_output=json:" + area.report().string()}),
                                GtestSharding::by_environment);
  child.tick_ms = heartbeat_ms;
  const ChildExit exit = run_child(child, [&](Stream stream, std::string_view text) {
    if (stream == Stream::tick) return heartbeat.beat(tail);
    log_output(log, tail, text);
  });
  log.finish();
  std::string why_log;
  const auto log_text = read_input_file(area.log, why_log);
  const auto cases = read_report(area.report(), log_text ? std::string_view(*log_text) : std::string_view(tail.text()));
  const bool reported = cases.has_value();
  if (reported) {
    write_junit(area.xml, *cases);
    for (const TestCase& test : *cases) count(result, test);
  }
  if (exit.exited() && reported) return result;
  // Died (or never wrote its report): one failure naming how, and the test it was in.
  const std::string running = tail.last_line_starting("[ RUN      ] ");
  std::string why = exit.exited() ? "exited with status " + std::to_string(exit.exit_code) + " without a report"
                                  : describe(exit);
  if (!running.empty() && !reported) why += " in " + running;
  std::cerr << "cujit conformance: " << area.name << " " << printable(why) << ", see " << shown(area.log.string()) << "\n";
  ++result.failed;
  result.crashed = why;
  result.failures.push_back("(" + why + ": see " + area.log.string() + ")");
  return result;
}

// One process per test: a test that crashes is a failure naming its signal; the others
// still count. The area's JUnit XML is merged from the per-test reports. A shard takes
// every N-th listed test from its index on: the tests Google Test's own sharding gives it.
AreaResult run_isolated(const Area& area) {
  std::error_code ignored;
  fs::remove(area.xml, ignored);  // an earlier run's report must not pass for this one's
  OutputFile log(area.log);
  const fs::path reports = area.out / "isolated" / area.name;
  std::string why_unlisted;
  const auto selection = list_selection(area, reports, log, why_unlisted);
  if (!selection) {
    log.finish();
    return listing_failed(area, why_unlisted);
  }
  AreaResult result;
  result.selected = *selection;
  std::vector<TestCase> cases;
  const Heartbeat heartbeat(area.name);
  int index = 0;
  for (const std::string& name : *selection) {
    const int listed_index = index++;
    if (listed_index % area.shard.total != area.shard.index) continue;
    const fs::path report = reports / (std::to_string(listed_index) + ".json");
    fs::remove(report, ignored);
    log.write("=== " + name + "\n");
    Tail tail;
    ChildSpec child = suite_child(area, {"--gtest_filter=" + name, "--gtest_output=json:" + report.string()},
                                  GtestSharding::none);
    child.tick_ms = heartbeat_ms;
    const ChildExit exit = run_child(child, [&](Stream stream, std::string_view text) {
      if (stream == Stream::tick) return heartbeat.beat(tail);
      log_output(log, tail, text);
    });
    if (auto reported = exit.exited() ? read_report(report, tail.text()) : std::nullopt) {
      for (TestCase& test : *reported) cases.push_back(std::move(test));
      continue;
    }
    TestCase test;
    const std::size_t dot = name.rfind('.');
    test.suite = name.substr(0, dot);
    test.name = name.substr(dot + 1);
    test.result = Result::failed;
    test.message = exit.exited() ? "exited with status " + std::to_string(exit.exit_code) + " without a report"
                                 : describe(exit);
    if (const std::string last = tail.last_line(); !last.empty()) test.message += "; last output: " + last;
    std::cerr << "cujit conformance: " << area.name << " " << printable(name) << " " << printable(test.message) << "\n";
    cases.push_back(std::move(test));
  }
  log.finish();
  write_junit(area.xml, cases);
  for (const TestCase& test : cases) count(result, test);
  return result;
}

AreaRecord area_record(const std::string& name, const AreaResult& result) {
  return AreaRecord{name, result.passed, result.failed, result.skipped, result.crashed, result.selected, result.ran};
}

// Written before the first suite runs and again after the last, through a temporary file
// and a rename, so that a reader never sees half a record.
void write_shard_record(const fs::path& out, const ShardRecord& record) {
  const fs::path temporary = out / (std::string(shard_record_file) + ".partial");
  write_file(temporary, to_json(record));
  std::error_code error;
  fs::rename(temporary, out / shard_record_file, error);
  if (error) throw CliError("cannot write " + shown((out / shard_record_file).string()) + ": " + error.message());
}

// `cujit conformance --list`: the areas CTest lists, with their programs and test counts.
int list_areas(const std::vector<AreaSuite>& suites, bool json) {
  if (json) {
    nlohmann::json each = nlohmann::json::array();
    for (const AreaSuite& suite : suites) {
      each.push_back({{"name", suite.name},
                      {"executable", suite.executable.string()},
                      {"tests", suite.tests},
                      {"built", suite.built}});
    }
    print_json({{"schema", 1}, {"build_dir", build_dir().string()}, {"areas", each}});
    return exit_ok;
  }
  for (const AreaSuite& suite : suites) {
    std::cout << std::left << std::setw(16) << suite.name << std::right << std::setw(6) << suite.tests << "  "
              << (suite.built ? printable(suite.executable.string()) : std::string("(not built)")) << "\n";
  }
  return exit_ok;
}

// The suites to run: every area CTest lists, or the ones asked for. An area CTest lists
// but whose suite is not built is a usage error, not an area fewer.
std::vector<AreaSuite> chosen_suites(const std::vector<AreaSuite>& listed, const std::vector<std::string>& asked) {
  std::vector<AreaSuite> chosen;
  if (asked.empty()) {
    chosen = listed;
  } else {
    for (const std::string& name : asked) {
      const auto found =
          std::find_if(listed.begin(), listed.end(), [&](const AreaSuite& suite) { return suite.name == name; });
      if (found == listed.end()) {
        std::string known;
        for (const AreaSuite& suite : listed) known += (known.empty() ? "" : ", ") + suite.name;
        throw CliError("conformance: --area " + shown(name) + ": no such area in CTest's list of " +
                       shown(build_dir().string()) + " (areas: " + known + ")");
      }
      chosen.push_back(*found);
    }
  }
  std::string unbuilt;
  for (const AreaSuite& suite : chosen) {
    if (!suite.built) unbuilt += (unbuilt.empty() ? "" : " ") + suite.name;
  }
  if (!unbuilt.empty()) {
    throw CliError("conformance: the suites of these areas are not built: " + unbuilt + " (build them: cmake --build " +
                   shown(build_dir().string()) + ")");
  }
  return chosen;
}

}  // namespace

int conformance(const ConformanceOptions& options, nlohmann::json* summary) {
  for (const std::string& area : options.areas) {
    if (!valid_area_name(area)) {
      throw CliError("conformance: --area " + shown(area) + ": an area is a name of lowercase letters, digits and _");
    }
  }
  // The command decides the selection and the shards (its options); these variables of the
  // caller's reach no suite, and a caller who set them should know that.
  for (const char* variable : {"GTEST_FILTER", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"}) {
    if (const char* value = std::getenv(variable); value != nullptr) {
      std::cerr << "cujit conformance: warning: " << variable << "=" << printable(value)
                << " is set and ignored (the suites run what --area, --filter and --shard say)\n";
    }
  }
  const std::vector<AreaSuite> listed = ctest_areas(build_dir());
  if (options.list) return list_areas(listed, options.json);
  if (listed.empty()) {
    throw CliError("conformance: CTest lists no test labelled area:<name> in " + shown(build_dir().string()) +
                   " (is it a configured cujit build tree?)");
  }
  const std::vector<AreaSuite> suites = chosen_suites(listed, options.areas);
  std::vector<std::string> areas;
  for (const AreaSuite& suite : suites) areas.push_back(suite.name);
  if (options.filter.find_first_of(" \t\n\r") != std::string::npos) {
    throw CliError("conformance: --filter " + shown(options.filter) +
                   ": a Google Test filter has no white space (patterns separated by ':', negatives after '-')");
  }
  const Shard shard = options.shard.empty() ? Shard{} : parse_shard(options.shard);
  for (const AreaSuite& suite : suites) {
    std::error_code error;
    if (!fs::is_regular_file(suite.executable, error)) {
      std::cerr << "cujit conformance: area " << shown(suite.name) << ": no suite at "
                << shown(suite.executable.string()) << " (CTest lists it; build it)\n";
      return exit_usage;
    }
  }
  const fs::path junit = options.out / "junit";
  make_output_dir(options.out, "conformance: --out");
  make_output_dir(junit, "conformance: --out");
  make_output_dir(options.out / "gtest", "conformance: --out");

  std::string why_no_device;
  const std::vector<DeviceInfo> devices = devices_present(why_no_device);
  write_file(options.out / "resource-spec.json", resource_spec_json(devices, default_slots_per_gpu));
  ShardRecord record;
  record.shard = shard;
  record.areas_requested = areas;
  // What makes the shards of one run comparable (`cujit merge` refuses shards that differ).
  record.run.filter = options.filter;
  record.run.require_gpu = options.require_gpu;
  record.run.source_digest = source_digest_from_environment();
  for (const AreaSuite& suite : suites) record.run.suites[suite.name] = suite_digest(suite.name, suite.executable.string());
  for (const DeviceInfo& device : devices) record.devices.push_back(device.str());
  write_shard_record(options.out, record);
  progress() << "cujit conformance: shard " << shard.str() << "; "
             << (devices.empty() ? "no CUDA device (" + why_no_device + ")"
                                 : std::to_string(devices.size()) + " device(s), resource spec in " +
                                       shown((options.out / "resource-spec.json").string()))
             << "\n";

  std::map<std::string, AreaResult> results;
  const auto start = std::chrono::steady_clock::now();
  int index = 0;
  for (const AreaSuite& suite : suites) {
    const std::string& name = suite.name;
    ++index;
    Area area{name, suite.executable, junit / (name + ".xml"),
              options.out / ("conformance_" + name + ".log"), options.out, shard, options.filter,
              options.require_gpu};
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress() << "[" << index << "/" << areas.size() << "] conformance " << name
               << (options.isolate ? " (each test isolated)" : "")
               << (shard.total > 1 ? " (shard " + shard.str() + ")" : "") << " (" << std::fixed
               << std::setprecision(1) << elapsed << " s elapsed)\n";
    results[name] = options.isolate ? run_isolated(area) : run_whole(area);
    record.areas.push_back(area_record(name, results[name]));
  }

  int passed = 0, failed = 0, skipped = 0;
  std::size_t selected = 0;
  bool crashed = false;
  std::map<std::string, int> reasons;
  nlohmann::json each = nlohmann::json::array();
  for (const auto& [area, r] : results) {
    passed += r.passed;
    failed += r.failed;
    skipped += r.skipped;
    crashed = crashed || !r.crashed.empty();
    selected += r.selected.size();
    for (const auto& [why, n] : r.skip_reasons) reasons[why] += n;
    each.push_back({{"name", area},
                    {"passed", r.passed},
                    {"failed", r.failed},
                    {"skipped", r.skipped},
                    {"crashed", r.crashed.empty() ? nlohmann::json() : nlohmann::json(r.crashed)},
                    {"failures", r.failures},
                    {"skip_reasons", r.skip_reasons},
                    {"junit", (junit / (area + ".xml")).string()},
                    {"log", (options.out / ("conformance_" + area + ".log")).string()}});
  }
  // A selection that runs nothing is a mistake in the selection (a misspelt --filter), not
  // a pass; the same for every shard of it, since each lists the whole selection. A shard
  // may still run nothing of a selection that is not empty: its siblings ran the tests
  // (`cujit merge` checks that together they ran each exactly once).
  const bool nothing_selected = selected == 0 && passed + failed + skipped == 0 && !crashed;
  record.finished = true;
  record.verdict = failed > 0 || nothing_selected ? verdict_fail : verdict_pass;
  write_shard_record(options.out, record);
  if (nothing_selected) {
    std::cerr << "cujit conformance: no test matches "
              << (options.filter.empty() ? std::string("in the areas given") : "--filter " + shown(options.filter))
              << " (areas:";
    for (const std::string& area : areas) std::cerr << " " << area;
    std::cerr << ")\n";
    return exit_usage;
  }
  const int status = failed > 0 ? exit_failures : exit_ok;
  const nlohmann::json document = {{"schema", 1},
                                   {"out", options.out.string()},
                                   {"junit_dir", junit.string()},
                                   {"filter", options.filter},
                                   {"shard", shard.str()},
                                   {"require_gpu", options.require_gpu},
                                   {"isolate", options.isolate},
                                   {"passed", passed},
                                   {"failed", failed},
                                   {"skipped", skipped},
                                   {"skip_reasons", reasons},
                                   {"areas", each},
                                   {"exit_code", status}};
  if (summary != nullptr) {
    *summary = document;
    return status;
  }
  if (options.json) {
    print_json(document);
    return status;
  }
  std::cout << "\n" << std::left << std::setw(16) << "area" << std::right << std::setw(8) << "passed"
            << std::setw(8) << "failed" << std::setw(9) << "skipped" << "\n";
  for (const auto& [area, r] : results) {
    std::cout << std::left << std::setw(16) << area << std::right << std::setw(8) << r.passed << std::setw(8)
              << r.failed << std::setw(9) << r.skipped << "\n";
  }
  std::cout << std::left << std::setw(16) << "total" << std::right << std::setw(8) << passed << std::setw(8)
            << failed << std::setw(9) << skipped << "\n";
  for (const auto& [why, n] : reasons) std::cout << "skipped " << n << ": " << printable(why) << "\n";
  for (const auto& [area, r] : results) {
    for (const std::string& name : r.failures) std::cout << paint(Tone::bad, "FAILED") << " " << area << ": " << printable(name) << "\n";
  }
  std::cout << "JUnit XML: " << printable(junit.string()) << "\n";
  if (shard.total > 1) std::cout << "shard " << shard.str() << ": " << printable((options.out / shard_record_file).string()) << "\n";
  std::cout << "conformance: " << paint(Tone::good, std::to_string(passed) + " passed") << ", "
            << paint(failed > 0 ? Tone::bad : Tone::good, std::to_string(failed) + " failed") << ", "
            << paint(Tone::warn, std::to_string(skipped) + " skipped") << "\n";
  return status;
}

}  // namespace cujit::cli
