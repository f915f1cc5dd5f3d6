// cujit merge: the shards of one conformance run (each `cujit conformance --shard I/N`'s
// --out directory) into one JUnit file and one verdict. Shards of different runs (another
// --filter, --require-gpu, build or selection) are refused (exit 2). The verdict passes
// only when every shard 0..N-1 is there exactly once, with the same N and the same areas,
// finished with its own verdict pass, its executables did not crash, its JUnit XML holds
// the tests its record names, together the shards ran each test of the unsharded selection
// exactly once and nothing else, and no test failed: a shard lost, doubled or run with
// another selection can never make a smaller pass. A selection of no test is exit 2, as
// the unsharded run's.
#include <algorithm>
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
  // Per area, "Suite.Test" of every test some shard's JUnit XML reports, as often as reported.
  std::map<std::string, std::multiset<std::string>> reported;
  std::size_t selected = 0;    // tests of the unsharded selection, over every area
  bool selection_known = false;  // some shard finished and recorded its areas' selections
  std::string refused;         // why the shards are not parts of one run; empty when they are
};

// At most `shown_at_most` names, then how many more.
std::string some_of(const std::vector<std::string>& names, std::size_t shown_at_most = 10) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < shown_at_most; ++i) text += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > shown_at_most) text += " and " + std::to_string(names.size() - shown_at_most) + " more";
  return text;
}

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

// The shard's tests into the merged report, after checking its own verdict and that its
// JUnit XML holds the tests its record counts and names; a crashed executable becomes a
// failed test case naming how it died.
void merge_results(const LoadedShard& shard, Merged& merged) {
  const std::string name = "shard " + shard.record.shard.str() + " (" + shown(shard.dir) + ")";
  if (!shard.record.finished) {
    merged.problems.push_back(name + " started but never finished: its cujit conformance died or was stopped");
    return;
  }
  // The shard's own verdict counts even when its reports look clean: it saw what they
  // may not show (an exit status, an empty selection, a report that was replaced).
  if (shard.record.verdict != verdict_pass) {
    merged.problems.push_back(name + ": its own verdict is " + shard.record.verdict + " (" +
                              (fs::path(shard.dir) / shard_record_file).string() + ")");
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
    std::multiset<std::string> in_xml, in_record(area.ran.begin(), area.ran.end());
    for (const TestCase& test : cases) in_xml.insert(test.suite + "." + test.name);
    if (text && in_xml != in_record) {
      std::vector<std::string> xml_only, record_only;
      std::set_difference(in_xml.begin(), in_xml.end(), in_record.begin(), in_record.end(), std::back_inserter(xml_only));
      std::set_difference(in_record.begin(), in_record.end(), in_xml.begin(), in_xml.end(),
                          std::back_inserter(record_only));
      merged.problems.push_back(name + ": " + xml.string() + " and its record name different tests: " +
                                std::to_string(xml_only.size()) + " only in the XML" +
                                (xml_only.empty() ? "" : " (" + some_of(xml_only) + ")") + ", " +
                                std::to_string(record_only.size()) + " only in the record" +
                                (record_only.empty() ? "" : " (" + some_of(record_only) + ")"));
    }
    merged.reported[area.name].insert(in_xml.begin(), in_xml.end());
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

// Together the shards ran each test of the unsharded selection exactly once, and no
// other: what the unsharded run would have run. Each shard recorded the whole selection
// (require_one_run made sure they agree); the first finished shard's is the reference.
void check_union(const std::vector<LoadedShard>& shards, Merged& merged) {
  const auto first = std::find_if(shards.begin(), shards.end(), [](const LoadedShard& s) { return s.record.finished; });
  if (first == shards.end()) return;
  merged.selection_known = true;
  for (const AreaRecord& area : first->record.areas) {
    merged.selected += area.selected.size();
    const std::multiset<std::string>& ran = merged.reported[area.name];
    const std::set<std::string> selection(area.selected.begin(), area.selected.end());
    std::vector<std::string> missing, doubled, unselected;
    for (const std::string& test : area.selected) {
      const std::size_t times = ran.count(test);
      if (times == 0) missing.push_back(test);
      if (times > 1) doubled.push_back(test + " (" + std::to_string(times) + " times)");
    }
    for (auto it = ran.begin(); it != ran.end(); it = ran.upper_bound(*it)) {
      if (selection.count(*it) == 0) unselected.push_back(*it);
    }
    const std::string of = " of the " + std::to_string(area.selected.size()) + " tests area " + area.name + " selects";
    if (!missing.empty()) {
      merged.problems.push_back(std::to_string(missing.size()) + of + " never ran in any shard: " + some_of(missing));
    }
    if (!doubled.empty()) {
      merged.problems.push_back(std::to_string(doubled.size()) + of + " ran in more than one shard: " + some_of(doubled));
    }
    if (!unselected.empty()) {
      merged.problems.push_back(std::to_string(unselected.size()) + " tests of area " + area.name +
                                " ran that its selection does not hold: " + some_of(unselected));
    }
  }
}

nlohmann::json verdict_json(const std::vector<LoadedShard>& shards, const Merged& merged, bool pass) {
  nlohmann::json each = nlohmann::json::array();
  for (const LoadedShard& shard : shards) {
    each.push_back({{"dir", shard.dir},
                    {"index", shard.record.shard.index},
                    {"total", shard.record.shard.total},
                    {"finished", shard.record.finished},
                    {"verdict", shard.record.verdict},
                    {"passed", shard.record.passed()},
                    {"failed", shard.record.failed()},
                    {"skipped", shard.record.skipped()},
                    {"devices", shard.record.devices}});
  }
  nlohmann::json run;  // the run the shards are parts of (of the first: refused when they differ)
  if (!shards.empty()) {
    const RunIdentity& identity = shards.front().record.run;
    run = {{"filter", identity.filter},
           {"require_gpu", identity.require_gpu},
           {"source_digest", identity.source_digest},
           {"suites", identity.suites}};
  }
  return nlohmann::json{{"schema", 2},
                        {"verdict", pass ? "pass" : "fail"},
                        {"refused", merged.refused},
                        {"run", run},
                        {"selected", merged.selection_known ? nlohmann::json(merged.selected) : nlohmann::json()},
                        {"shards", each},
                        {"passed", merged.passed},
                        {"failed", merged.failed},
                        {"skipped", merged.skipped},
                        {"problems", merged.problems}};
}

}  // namespace

int merge(const MergeOptions& options) {
  make_output_dir(options.out, "merge: --out");
  // An earlier merge's verdict must not stand for this one, whatever stops it.
  std::error_code ignored;
  fs::remove(options.out / "verdict.json", ignored);
  fs::remove(options.out / "junit.xml", ignored);
  Merged merged;
  const std::vector<LoadedShard> shards = load_shards(options.shard_dirs, merged);
  std::vector<std::pair<std::string, ShardRecord>> records;
  for (const LoadedShard& shard : shards) {
    records.emplace_back((fs::path(shard.dir) / shard_record_file).string(), shard.record);
  }
  try {
    require_one_run(records);
  } catch (const ShardsOfDifferentRuns& error) {
    // Refused, not merged: a failing verdict on disk for whoever reads it, exit 2.
    merged.refused = error.what();
    merged.problems.push_back(error.what());
    write_file(options.out / "verdict.json", json_text(verdict_json(shards, merged, false)));
    throw;
  }
  check_coverage(shards, merged);
  for (const LoadedShard& shard : shards) merge_results(shard, merged);
  check_union(shards, merged);
  // As the unsharded run: a selection of no test is a mistake in it (a misspelt --filter).
  const bool nothing_selected = merged.selection_known && merged.selected == 0;
  if (nothing_selected) {
    merged.problems.push_back("no test is selected: --filter " + shown(shards.front().record.run.filter) +
                              " matches no test of the areas the shards ran (the unsharded run exits 2)");
  }
  const bool pass = merged.problems.empty() && merged.failed == 0 && !shards.empty();
  if (shards.empty()) merged.problems.push_back("no shard could be read");
  const int status = pass ? exit_ok : nothing_selected ? exit_usage : exit_failures;

  write_junit(options.out / "junit.xml", merged.cases);
  const nlohmann::json verdict = verdict_json(shards, merged, pass);
  write_file(options.out / "verdict.json", json_text(verdict));
  if (options.json) {
    print_json(verdict);
    return status;
  }

  for (const LoadedShard& shard : shards) {
    std::cout << "shard " << shard.record.shard.str() << " " << printable(shard.dir) << ": verdict "
              << shard.record.verdict << ", " << shard.record.passed() << " passed, "
              << shard.record.failed() << " failed, " << shard.record.skipped() << " skipped; "
              << (shard.record.devices.empty() ? "no device" : printable(join(shard.record.devices))) << "\n";
  }
  for (const std::string& problem : merged.problems) std::cout << "PROBLEM " << printable(problem) << "\n";
  for (const TestCase& test : merged.cases) {
    if (test.result == Result::failed) std::cout << paint(Tone::bad, "FAILED") << " " << printable(test.suite + "." + test.name) << "\n";
  }
  std::cout << "JUnit XML: " << printable((options.out / "junit.xml").string()) << "\n"
            << "merged: " << merged.passed << " passed, " << merged.failed << " failed, " << merged.skipped
            << " skipped" << (merged.selection_known ? " of " + std::to_string(merged.selected) + " selected" : "")
            << "; verdict " << (pass ? paint(Tone::good, "pass") : paint(Tone::bad, "FAIL")) << " (" << printable((options.out / "verdict.json").string())
            << ")\n";
  return status;
}

}  // namespace cujit::cli
