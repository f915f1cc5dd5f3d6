// cujit conformance: runs each conformance executable with JUnit-compatible XML output and
// prints a one-screen summary: passed / failed / skipped by area, and why tests skipped.
// A suite that dies (a vendor library crashing on an input) is a failure naming the
// signal and the test it was in; with --isolate each test runs in its own process, so a
// crash costs only the test that crashed and the others still count. With --shard I/N it
// runs only its share of each executable's tests and leaves DIR/shard.json for `cujit merge`
// (shard_record.hpp); every run also writes DIR/resource-spec.json, this host's GPUs for
// `ctest --resource-spec-file`.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "devices.hpp"
#include "junit.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "resource_spec.hpp"
#include "shard_record.hpp"
#include "spawn.hpp"

namespace cujit::cli {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> all_areas = {"format", "program", "linking", "module", "nrt", "abi",
                                            "graph", "cache", "scenarios", "reliability", "mutation", "cli"};

struct AreaResult {
  int passed = 0, failed = 0, skipped = 0;
  std::string crashed;  // how the executable died without its report (then one failure more)
  std::map<std::string, int> skip_reasons;
  std::vector<std::string> failures;
};

void count(AreaResult& area, const TestCase& test) {
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

// The test names an executable lists (--gtest_list_tests), as --gtest_filter takes them.
std::vector<std::string> parse_test_list(const std::string& listing) {
  std::vector<std::string> names;
  std::istringstream lines(listing);
  std::string line, suite;
  auto disabled = [](const std::string& name) {
    return name.rfind("DISABLED_", 0) == 0 || name.find("/DISABLED_") != std::string::npos ||
           name.find(".DISABLED_") != std::string::npos;
  };
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      suite = line.substr(0, line.find(' '));
      continue;
    }
    const std::size_t first = line.find_first_not_of(' ');
    const std::string test = line.substr(first, line.find(' ', first) - first);
    if (suite.empty() || suite.back() != '.' || test.empty()) continue;
    const std::string name = suite + test;
    if (!disabled(name)) names.push_back(name);
  }
  return names;
}

struct Area {
  std::string name;
  fs::path executable, xml, log, out;
  Shard shard;
};

// Whether Google Test picks the child's tests of the area's shard (GTEST_TOTAL_SHARDS and
// GTEST_SHARD_INDEX), or the child runs what its arguments name.
enum class GtestSharding { by_environment, none };

ChildSpec suite_child(const Area& area, std::vector<std::string> args, GtestSharding sharding) {
  ChildSpec child = child_spec({area.executable.string()});
  child.argv.insert(child.argv.end(), args.begin(), args.end());
  child.environment = {{"CUJIT_CACHE_DIR", (area.out / "cache").string()}};
  if (sharding == GtestSharding::by_environment && area.shard.total > 1) {
    child.environment.emplace_back("GTEST_TOTAL_SHARDS", std::to_string(area.shard.total));
    child.environment.emplace_back("GTEST_SHARD_INDEX", std::to_string(area.shard.index));
  }
  child.out = Sink::capture;
  child.err_to_out = true;
  return child;
}

// One process for the whole executable, its output into the log.
AreaResult run_whole(const Area& area) {
  AreaResult result;
  std::error_code ignored;
  fs::remove(area.xml, ignored);  // an earlier run's report must not pass for this one's
  OutputFile log(area.log);
  Tail tail;
  const ChildExit exit = run_child(suite_child(area, {"--gtest_output=xml:" + area.xml.string()},
                                               GtestSharding::by_environment),
                                   [&](Stream, std::string_view text) {
                                     log.write(text);
                                     tail.append(text);
                                   });
  log.finish();
  const bool reported = fs::exists(area.xml);
  if (reported) {
    for (const TestCase& test : read_junit(area.xml)) count(result, test);
  }
  if (exit.exited() && reported) return result;
  // Died (or never wrote its report): one failure naming how, and the test it was in.
  const std::string running = tail.last_line_starting("[ RUN      ] ");
  std::string why = exit.exited() ? "exited with status " + std::to_string(exit.exit_code) + " without a report"
                                  : describe(exit);
  if (!running.empty() && !reported) why += " in " + running;
  std::cerr << "cujit conformance: " << area.name << " " << why << ", see " << shown(area.log.string()) << "\n";
  ++result.failed;
  result.crashed = why;
  result.failures.push_back("(" + why + ": see " + area.log.string() + ")");
  return result;
}

// One process per test: a test that crashes is a failure naming its signal; the others
// still count. The area's JUnit XML is merged from the per-test reports. A shard takes
// every N-th listed test from its index on: the tests Google Test's own sharding gives it.
AreaResult run_isolated(const Area& area) {
  AreaResult result;
  std::error_code ignored;
  fs::remove(area.xml, ignored);  // an earlier run's report must not pass for this one's
  OutputFile log(area.log);
  std::string listing;
  const ChildExit listed = run_child(suite_child(area, {"--gtest_list_tests"}, GtestSharding::none),
                                     [&](Stream, std::string_view text) {
                                       log.write(text);
                                       if (listing.size() < (64u << 20)) listing.append(text);
                                     });
  if (!listed.exited() || listed.exit_code != 0) {
    log.finish();
    const std::string why = "listing its tests: " + describe(listed);
    std::cerr << "cujit conformance: " << area.name << " " << why << ", see " << shown(area.log.string()) << "\n";
    ++result.failed;
    result.crashed = why;
    result.failures.push_back("(" + why + ": see " + area.log.string() + ")");
    return result;
  }
  const fs::path reports = area.out / "isolated" / area.name;
  make_output_dir(reports, "conformance: --out");
  std::vector<TestCase> cases;
  int index = 0;
  for (const std::string& name : parse_test_list(listing)) {
    const int listed_index = index++;
    if (listed_index % area.shard.total != area.shard.index) continue;
    const fs::path xml = reports / (std::to_string(listed_index) + ".xml");
    fs::remove(xml, ignored);
    log.write("=== " + name + "\n");
    Tail tail;
    const ChildExit exit = run_child(suite_child(area, {"--gtest_filter=" + name, "--gtest_output=xml:" + xml.string()},
                                                 GtestSharding::none),
                                     [&](Stream, std::string_view text) {
                                       log.write(text);
                                       tail.append(text);
                                     });
    const bool reported = exit.exited() && fs::exists(xml);
    if (reported) {
      for (TestCase& test : read_junit(xml)) cases.push_back(std::move(test));
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
    std::cerr << "cujit conformance: " << area.name << " " << name << " " << test.message << "\n";
    cases.push_back(std::move(test));
  }
  log.finish();
  write_junit(area.xml, cases);
  for (const TestCase& test : cases) count(result, test);
  return result;
}

AreaRecord area_record(const std::string& name, const AreaResult& result) {
  return AreaRecord{name, result.passed, result.failed, result.skipped, result.crashed};
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

}  // namespace

int conformance(const ConformanceOptions& options) {
  const std::vector<std::string> areas = options.areas.empty() ? all_areas : options.areas;
  for (const std::string& area : areas) {
    if (!valid_area_name(area)) {
      throw CliError("conformance: --area " + shown(area) + ": an area is a name of lowercase letters, digits and _");
    }
  }
  const Shard shard = options.shard.empty() ? Shard{} : parse_shard(options.shard);
  for (const std::string& name : areas) {
    const fs::path executable = build_dir() / "conformance" / ("conformance_" + name);
    if (!fs::exists(executable)) {
      std::cerr << "cujit conformance: no suite " << shown(name) << " (" << executable << ")\n";
      return exit_usage;
    }
  }
  const fs::path junit = options.out / "junit";
  make_output_dir(junit, "conformance: --out");

  std::string why_no_device;
  const std::vector<DeviceInfo> devices = devices_present(why_no_device);
  write_file(options.out / "resource-spec.json", resource_spec_json(devices, default_slots_per_gpu));
  ShardRecord record;
  record.shard = shard;
  record.areas_requested = areas;
  for (const DeviceInfo& device : devices) record.devices.push_back(device.str());
  write_shard_record(options.out, record);
  std::cerr << "cujit conformance: shard " << shard.str() << "; "
            << (devices.empty() ? "no CUDA device (" + why_no_device + ")"
                                : std::to_string(devices.size()) + " device(s), resource spec in " +
                                      shown((options.out / "resource-spec.json").string()))
            << "\n";

  std::map<std::string, AreaResult> results;
  const auto start = std::chrono::steady_clock::now();
  int index = 0;
  for (const std::string& name : areas) {
    ++index;
    const Area area{name, build_dir() / "conformance" / ("conformance_" + name), junit / (name + ".xml"),
                    options.out / ("conformance_" + name + ".log"), options.out, shard};
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "[" << index << "/" << areas.size() << "] conformance " << name
              << (options.isolate ? " (each test isolated)" : "")
              << (shard.total > 1 ? " (shard " + shard.str() + ")" : "") << " (" << std::fixed
              << std::setprecision(1) << elapsed << " s elapsed)\n";
    results[name] = options.isolate ? run_isolated(area) : run_whole(area);
    record.areas.push_back(area_record(name, results[name]));
  }
  record.finished = true;
  write_shard_record(options.out, record);

  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> reasons;
  std::cout << "\n" << std::left << std::setw(12) << "area" << std::right << std::setw(8) << "passed"
            << std::setw(8) << "failed" << std::setw(9) << "skipped" << "\n";
  for (const auto& [area, r] : results) {
    std::cout << std::left << std::setw(12) << area << std::right << std::setw(8) << r.passed << std::setw(8)
              << r.failed << std::setw(9) << r.skipped << "\n";
    passed += r.passed;
    failed += r.failed;
    skipped += r.skipped;
    for (const auto& [why, n] : r.skip_reasons) reasons[why] += n;
  }
  std::cout << std::left << std::setw(12) << "total" << std::right << std::setw(8) << passed << std::setw(8)
            << failed << std::setw(9) << skipped << "\n";
  for (const auto& [why, n] : reasons) std::cout << "skipped " << n << ": " << why << "\n";
  for (const auto& [area, r] : results) {
    for (const std::string& name : r.failures) std::cout << "FAILED " << area << ": " << name << "\n";
  }
  std::cout << "JUnit XML: " << junit.string() << "\n";
  if (shard.total > 1) std::cout << "shard " << shard.str() << ": " << (options.out / shard_record_file).string() << "\n";
  std::cout << "conformance: " << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed > 0 ? exit_failures : exit_ok;
}

}  // namespace cujit::cli
