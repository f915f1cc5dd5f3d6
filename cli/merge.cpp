// cujit merge: the shards of one conformance run (each `cujit conformance --shard I/N`'s
// --out directory) into one JUnit file and one verdict. The verdict passes only when every
// shard 0..N-1 is there exactly once, with the same N and the same areas, finished, its
// executables did not crash, its JUnit XML holds the tests its record counts, and no test
// failed: a shard lost on the way can never make a smaller pass.
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "input_file.hpp"
#include "json_output.hpp"
#include "junit.hpp"
#include "output.hpp"
#include "presentation.hpp"
#include "shard_record.hpp"

namespace cujit::cli {
namespace {

namespace fs = std::filesystem;

struct LoadedShard {
  std::string dir;
  ShardRecord record;
};

struct Merged {
  std::vector<TestCase> cases;
  std::vector<std::string> problems;  // each one fails the verdict
  int passed = 0, failed = 0, skipped = 0;
};

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// The record of each directory that has a readable one; a problem for each that does not.
std::vector<LoadedShard> load_shards(const std::vector<std::string>& dirs, Merged& merged) {
  std::vector<LoadedShard> shards;
  for (const std::string& dir : dirs) {
    const fs::path file = fs::path(dir) / shard_record_file;
    std::string why;
    const auto text = read_input_file(file, why);
    if (!text) {
      merged.problems.push_back(shown(dir) + ": no shard record: " + file.string() + " " + why);
      continue;
    }
    try {
      shards.push_back(LoadedShard{dir, parse_shard_record(*text, file.string())});
    } catch (const CliError& error) {
      merged.problems.push_back(error.what());
    }
  }
  return shards;
}

// Every index of 0..N-1 exactly once, one N, one list of areas.
void check_coverage(const std::vector<LoadedShard>& shards, Merged& merged) {
  if (shards.empty()) return;
  const LoadedShard& first = shards.front();
  const int total = first.record.shard.total;
  std::map<int, std::vector<std::string>> by_index;
  for (const LoadedShard& shard : shards) {
    if (shard.record.shard.total != total) {
      merged.problems.push_back("shards disagree on N: " + shown(first.dir) + " is shard " + first.record.shard.str() +
                                ", " + shown(shard.dir) + " is shard " + shard.record.shard.str());
      continue;
    }
    if (shard.record.areas_requested != first.record.areas_requested) {
      merged.problems.push_back("shards ran different areas: " + shown(first.dir) + " [" +
                                join(first.record.areas_requested) + "], " + shown(shard.dir) + " [" +
                                join(shard.record.areas_requested) + "]");
    }
    by_index[shard.record.shard.index].push_back(shown(shard.dir));
  }
  for (int index = 0; index < total; ++index) {
    const auto found = by_index.find(index);
    const std::string name = "shard " + std::to_string(index) + "/" + std::to_string(total);
    if (found == by_index.end()) {
      merged.problems.push_back(name + " is missing");
    } else if (found->second.size() > 1) {
      merged.problems.push_back(name + " is given more than once: " + join(found->second));
    }
  }
}

void count(Merged& merged, const TestCase& test) {
  merged.passed += test.result == Result::passed;
  merged.failed += test.result == Result::failed;
  merged.skipped += test.result == Result::skipped;
}

// The shard's tests into the merged report, after checking that its JUnit XML holds what
// its record counts; a crashed executable becomes a failed test case naming how it died.
void merge_results(const LoadedShard& shard, Merged& merged) {
  const std::string name = "shard " + shard.record.shard.str() + " (" + shown(shard.dir) + ")";
  if (!shard.record.finished) {
    merged.problems.push_back(name + " started but never finished: its cujit conformance died or was stopped");
    return;
  }
  for (const AreaRecord& area : shard.record.areas) {
    const fs::path xml = fs::path(shard.dir) / "junit" / (area.name + ".xml");
    std::string why;
    const auto text = read_input_file(xml, why);
    std::vector<TestCase> cases = text ? parse_junit(*text) : std::vector<TestCase>{};
    if (!text && area.crashed.empty()) merged.problems.push_back(name + ": " + xml.string() + " " + why);
    const std::size_t counted = static_cast<std::size_t>(area.passed) + area.failed + area.skipped;
    const std::size_t reported = cases.size() + (area.crashed.empty() ? 0 : 1);
    if (text && counted != reported) {
      merged.problems.push_back(name + ": " + xml.string() + " holds " + std::to_string(cases.size()) +
                                " tests, its record counts " + std::to_string(counted));
    }
    if (!area.crashed.empty()) {
      merged.problems.push_back(name + ": conformance_" + area.name + " " + area.crashed);
      TestCase crashed;
      crashed.suite = "conformance_" + area.name;
      crashed.name = "shard_" + std::to_string(shard.record.shard.index) + "_executable";
      crashed.result = Result::failed;
      crashed.message = area.crashed;
      cases.push_back(std::move(crashed));
    }
    for (TestCase& test : cases) {
      count(merged, test);
      merged.cases.push_back(std::move(test));
    }
  }
  std::set<std::string> ran;
  for (const AreaRecord& area : shard.record.areas) ran.insert(area.name);
  for (const std::string& area : shard.record.areas_requested) {
    if (ran.count(area) == 0) merged.problems.push_back(name + ": area " + area + " was requested and never ran");
  }
}

nlohmann::json verdict_json(const std::vector<LoadedShard>& shards, const Merged& merged, bool pass) {
  nlohmann::json each = nlohmann::json::array();
  for (const LoadedShard& shard : shards) {
    each.push_back({{"dir", shard.dir},
                    {"index", shard.record.shard.index},
                    {"total", shard.record.shard.total},
                    {"finished", shard.record.finished},
                    {"passed", shard.record.passed()},
                    {"failed", shard.record.failed()},
                    {"skipped", shard.record.skipped()},
                    {"devices", shard.record.devices}});
  }
  return nlohmann::json{{"schema", 1},
                        {"verdict", pass ? "pass" : "fail"},
                        {"shards", each},
                        {"passed", merged.passed},
                        {"failed", merged.failed},
                        {"skipped", merged.skipped},
                        {"problems", merged.problems}};
}

}  // namespace

int merge(const MergeOptions& options) {
  make_output_dir(options.out, "merge: --out");
  Merged merged;
  const std::vector<LoadedShard> shards = load_shards(options.shard_dirs, merged);
  check_coverage(shards, merged);
  for (const LoadedShard& shard : shards) merge_results(shard, merged);
  const bool pass = merged.problems.empty() && merged.failed == 0 && !shards.empty();
  if (shards.empty()) merged.problems.push_back("no shard could be read");

  write_junit(options.out / "junit.xml", merged.cases);
  const nlohmann::json verdict = verdict_json(shards, merged, pass);
  write_file(options.out / "verdict.json", json_text(verdict));
  if (options.json) {
    print_json(verdict);
    return pass ? exit_ok : exit_failures;
  }

  for (const LoadedShard& shard : shards) {
    std::cout << "shard " << shard.record.shard.str() << " " << printable(shard.dir) << ": "
              << (shard.record.finished ? "" : "UNFINISHED, ") << shard.record.passed() << " passed, "
              << shard.record.failed() << " failed, " << shard.record.skipped() << " skipped; "
              << (shard.record.devices.empty() ? "no device" : printable(join(shard.record.devices))) << "\n";
  }
  for (const std::string& problem : merged.problems) std::cout << "PROBLEM " << printable(problem) << "\n";
  for (const TestCase& test : merged.cases) {
    if (test.result == Result::failed) std::cout << paint(Tone::bad, "FAILED") << " " << printable(test.suite + "." + test.name) << "\n";
  }
  std::cout << "JUnit XML: " << printable((options.out / "junit.xml").string()) << "\n"
            << "merged: " << merged.passed << " passed, " << merged.failed << " failed, " << merged.skipped
            << " skipped; verdict " << (pass ? paint(Tone::good, "pass") : paint(Tone::bad, "FAIL")) << " (" << printable((options.out / "verdict.json").string())
            << ")\n";
  return pass ? exit_ok : exit_failures;
}

}  // namespace cujit::cli
