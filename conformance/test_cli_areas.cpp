// The conformance areas come from one place, CTest's list (cli/areas.hpp): the labels
// area:<name> that conformance/CMakeLists.txt gives every test of conformance_<name>. These
// tests check the reader on generated lists, that this build's ctest and `cujit conformance
// --list` agree area by area and count by count, that every conformance suite CTest runs
// carries an area, and that a run covers every area CTest lists, names included that no
// list in the command knows.
#include <gtest/gtest.h>

#include <functional>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include "areas.hpp"
#include "cli_test_support.hpp"
#include "output.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::run_cujit;
using test::cli::run_program;
using test::cli::Spec;

// A spec with these arguments and the defaults for the rest.
Spec with_args(std::vector<std::string> args) {
  Spec spec;
  spec.args = std::move(args);
  return spec;
}

// The build tree conformance_cli was built in: CUJIT_CLI_BINARY is <build>/cli/cujit.
fs::path this_build() { return fs::path(CUJIT_CLI_BINARY).parent_path().parent_path(); }

nlohmann::json ctest_test(const std::string& name, const std::string& program, std::vector<std::string> labels) {
  nlohmann::json properties = nlohmann::json::array();
  if (!labels.empty()) properties.push_back({{"name", "LABELS"}, {"value", labels}});
  properties.push_back({{"name", "WORKING_DIRECTORY"}, {"value", "/tmp"}});
  return {{"name", name}, {"command", {program, "--gtest_filter=" + name}}, {"properties", properties}};
}

std::string ctest_document(const nlohmann::json& tests) {
  return nlohmann::json{{"kind", "ctestInfo"}, {"version", {{"major", 1}, {"minor", 0}}}, {"tests", tests}}.dump();
}

// Generated lists: random areas (names no hand-written list holds), random test counts,
// labels in random order among others, tests of other kinds without an area between them.
TEST(CliAreas, ReaderFindsEveryLabelledAreaWithItsProgramAndCount) {
  std::mt19937 random(20261127);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::pair<std::string, std::size_t>> expected;
    const std::size_t count = 1 + random() % 20;
    for (std::size_t k = 0; k < count; ++k) {
      expected.emplace_back("area_" + std::to_string(round) + "_" + std::to_string(k), 1 + random() % 30);
    }
    nlohmann::json tests = nlohmann::json::array();
    std::vector<std::size_t> left;
    for (const auto& [name, n] : expected) left.push_back(n);
    // Interleaved: the tests of every area, in random order, each area starting in order.
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      for (std::size_t t = 0; t < expected[k].second; ++t) order.push_back(k);
    }
    std::stable_sort(order.begin(), order.end());
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::size_t k = order[i];
      std::vector<std::string> labels{random() % 2 ? "cpu" : "gpu", "area:" + expected[k].first};
      if (random() % 3 == 0) labels.insert(labels.begin(), "hostile");
      tests.push_back(ctest_test("T" + std::to_string(i), "/b/conformance_" + expected[k].first, labels));
      if (random() % 4 == 0) tests.push_back(ctest_test("Other" + std::to_string(i), "/usr/bin/python3", {"cpu"}));
    }
    const auto areas = cli::parse_ctest_areas(ctest_document(tests), "generated");
    ASSERT_EQ(areas.size(), expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
      EXPECT_EQ(areas[k].name, expected[k].first);
      EXPECT_EQ(areas[k].tests, expected[k].second);
      EXPECT_EQ(areas[k].executable, fs::path("/b/conformance_" + expected[k].first));
      EXPECT_TRUE(areas[k].built);
    }
  }
}

TEST(CliAreas, UnbuiltSuiteIsAnAreaMarkedNotBuilt) {
  nlohmann::json tests = nlohmann::json::array();
  tests.push_back(ctest_test("A.x", "/b/conformance_a", {"cpu", "area:a"}));
  tests.push_back(ctest_test("conformance_b_NOT_BUILT", "conformance_b_NOT_BUILT", {"area:b"}));
  const auto areas = cli::parse_ctest_areas(ctest_document(tests), "generated");
  ASSERT_EQ(areas.size(), 2u);
  EXPECT_TRUE(areas[0].built);
  EXPECT_EQ(areas[1].name, "b");
  EXPECT_FALSE(areas[1].built);
  EXPECT_EQ(areas[1].tests, 0u);
}

TEST(CliAreas, AreaOverTwoProgramsOrNotCtestJsonIsRefused) {
  nlohmann::json tests = nlohmann::json::array();
  tests.push_back(ctest_test("A.x", "/b/one", {"area:a"}));
  tests.push_back(ctest_test("A.y", "/b/two", {"area:a"}));
  EXPECT_THROW(cli::parse_ctest_areas(ctest_document(tests), "generated"), cli::CliError);
  // An area name becomes file names under --out: a label that is no plain name is refused.
  for (const char* label : {"area:../x", "area:", "area:A", "area:a/b", "area:a b"}) {
    nlohmann::json odd = nlohmann::json::array();
    odd.push_back(ctest_test("A.x", "/b/one", {label}));
    EXPECT_THROW(cli::parse_ctest_areas(ctest_document(odd), "generated"), cli::CliError) << label;
  }
  for (const char* text : {"", "[]", "{}", R"({"tests": 3})", "{\"tests\": [", "not json"}) {
    EXPECT_THROW(cli::parse_ctest_areas(text, "bad"), cli::CliError) << text;
  }
}

// This build: CTest's own list, read here independently, against `cujit conformance --list`.
TEST(CliAreas, ListOfThisBuildMatchesCtestAreaByArea) {
  const auto listing = run_program(CUJIT_CLI_CTEST, with_args({"--show-only=json-v1", "--test-dir", this_build().string()}));
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  const nlohmann::json document = nlohmann::json::parse(listing.out);
  std::map<std::string, std::size_t> ctest_counts;
  std::set<std::string> unlabelled_suites;
  for (const auto& test : document["tests"]) {
    // CTest gives no command for a suite's placeholder (<target>_NOT_BUILT).
    const auto command = test.find("command");
    const std::string program =
        command == test.end() || !command->is_array() || command->empty() ? "" : command->front().get<std::string>();
    std::vector<std::string> areas;
    for (const auto& property : test.value("properties", nlohmann::json::array())) {
      if (property["name"] != "LABELS") continue;
      for (const auto& label : property["value"]) {
        const std::string text = label.get<std::string>();
        if (text.rfind("area:", 0) == 0) areas.push_back(text.substr(5));
      }
    }
    const std::string name = test["name"].get<std::string>();
    const bool placeholder = name.size() > 10 && name.substr(name.size() - 10) == "_NOT_BUILT";
    // Every test of a conformance suite carries exactly one area: none runs outside the areas.
    if (fs::path(program).filename().string().rfind("conformance_", 0) == 0 && areas.size() != 1) {
      unlabelled_suites.insert(name);
    }
    for (const std::string& area : areas) ctest_counts[area] += placeholder ? 0 : 1;
  }
  EXPECT_TRUE(unlabelled_suites.empty()) << "tests of conformance suites without one area label, e.g. "
                                         << *unlabelled_suites.begin();
  ASSERT_FALSE(ctest_counts.empty()) << "this build's ctest lists no area";
  // The areas of issue 33 that a hand-written list had lost.
  for (const char* area : {"link_options", "support_scan", "disk_hit_path", "mutation", "cli"}) {
    EXPECT_EQ(ctest_counts.count(area), 1u) << area;
  }

  Spec spec = with_args({"conformance", "--list", "--json"});
  spec.env = {{"CUJIT_BUILD_DIR", this_build().string()}};
  const auto run = run_cujit(spec);
  ASSERT_EQ(run.exit_code, 0) << run.all();
  const nlohmann::json listed = nlohmann::json::parse(run.out);
  std::map<std::string, std::size_t> cujit_counts;
  for (const auto& area : listed["areas"]) cujit_counts[area["name"]] = area["tests"];
  EXPECT_EQ(cujit_counts, ctest_counts);
}

// A run without --area covers every area CTest lists, whatever its name: a fake build whose
// CTest list holds areas no list in the command could know.
TEST(CliAreas, RunCoversEveryAreaCtestLists) {
  TempDir dir;
  const std::vector<std::string> areas{"format", "link_options", "support_scan", "disk_hit_path", "zeta_new_area"};
  const fs::path build = test::cli::make_fake_build(dir.path(), areas);
  Spec spec = with_args({"conformance", "--out", (dir.path() / "out").string(), "--json"});
  spec.env = {{"CUJIT_BUILD_DIR", build.string()}};
  spec.unset = {"CUJIT_FAKE_CRASH", "GTEST_FILTER", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
  const auto run = run_cujit(spec);
  ASSERT_EQ(run.exit_code, 0) << run.all();
  const nlohmann::json summary = nlohmann::json::parse(run.out);
  std::set<std::string> ran;
  for (const auto& area : summary["areas"]) {
    ran.insert(area["name"].get<std::string>());
    EXPECT_EQ(area["passed"], 2) << area["name"];
  }
  EXPECT_EQ(ran, std::set<std::string>(areas.begin(), areas.end()));
}

TEST(CliAreas, UnbuiltOrUnknownAreaIsExit2NamingIt) {
  TempDir dir;
  const fs::path build = test::cli::make_fake_build(dir.path(), {"format"});
  std::ofstream(build / "CTestTestfile.cmake", std::ios::app)
      << "add_test(conformance_later_NOT_BUILT conformance_later_NOT_BUILT)\n"
      << "set_tests_properties(conformance_later_NOT_BUILT PROPERTIES LABELS \"area:later\")\n";
  Spec spec = with_args({"conformance", "--out", (dir.path() / "out").string()});
  spec.env = {{"CUJIT_BUILD_DIR", build.string()}};
  const auto all = run_cujit(spec);
  EXPECT_EQ(all.exit_code, 2) << all.all();
  EXPECT_NE(all.err.find("not built: later"), std::string::npos) << all.all();
  spec.args.insert(spec.args.end(), {"--area", "formats"});
  const auto unknown = run_cujit(spec);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.all();
  EXPECT_NE(unknown.err.find("--area 'formats'"), std::string::npos) << unknown.all();
  EXPECT_NE(unknown.err.find("format, later"), std::string::npos) << unknown.all();
}

// CTest evaluates the build tree's CMake files (CTestTestfile.cmake and what it includes):
// each that someone else could change - writable by group or others, in a directory they
// could write, or (as root) owned by another user - is refused before ctest runs, exit 2
// naming it, and the code in it never runs (red-team finding F5: CUJIT_BUILD_DIR of another
// user's tree ran its CTestTestfile.cmake as root).
TEST(HostileCliAreas, ACTestFileOthersCouldChangeIsRefusedAndNeverRuns) {
  struct Damage {
    std::string name;
    std::function<void(const fs::path& build, const fs::path& file)> apply;
  };
  std::vector<Damage> damages{
      {"file 0666", [](const fs::path&, const fs::path& file) { ::chmod(file.c_str(), 0666); }},
      {"file 0664", [](const fs::path&, const fs::path& file) { ::chmod(file.c_str(), 0664); }},
      {"directory 0777", [](const fs::path&, const fs::path& file) { ::chmod(file.parent_path().c_str(), 0777); }},
      {"build 0775", [](const fs::path& build, const fs::path&) { ::chmod(build.c_str(), 0775); }},
  };
  if (::geteuid() == 0) {
    damages.push_back({"file of uid 65534", [](const fs::path&, const fs::path& file) {
                         ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
                       }});
  }
  for (const std::string where : {"CTestTestfile.cmake", "conformance/CTestTestfile.cmake",
                                  "conformance/conformance_format[1]_tests.cmake"}) {
    for (const Damage& damage : damages) {
      TempDir dir;
      const fs::path build = test::cli::make_fake_build(dir.path(), {"format"});
      const fs::path marker = dir.path() / "ran";
      const fs::path file = build / where;
      const std::string code = "execute_process(COMMAND touch \"" + marker.string() + "\")\n";
      if (where == "CTestTestfile.cmake") {
        std::ofstream(file, std::ios::app) << code;
      } else {
        std::ofstream(build / "CTestTestfile.cmake", std::ios::app)
            << (where.find("_tests") != std::string::npos ? "include(\"" + file.string() + "\")\n"
                                                          : "subdirs(\"conformance\")\n");
        std::ofstream(file) << code;
      }
      ::chmod(file.c_str(), 0644);
      // The power: untouched, ctest runs the planted code.
      Spec clean = with_args({"conformance", "--list"});
      clean.env = {{"CUJIT_BUILD_DIR", build.string()}};
      const auto ran = run_cujit(clean);
      EXPECT_EQ(ran.exit_code, 0) << where << "\n" << ran.all();
      EXPECT_TRUE(fs::exists(marker)) << where << ": the planted code did not run, so this test shows nothing";
      fs::remove(marker);
      damage.apply(build, file);
      const auto refused = run_cujit(clean);
      EXPECT_EQ(refused.exit_code, 2) << where << ", " << damage.name << "\n" << refused.all();
      EXPECT_NE(refused.err.find("refusing to run '"), std::string::npos) << where << ", " << damage.name << "\n"
                                                                           << refused.all();
      EXPECT_FALSE(fs::exists(marker)) << where << ", " << damage.name << ": CTest ran the planted code";
      ::chmod(build.c_str(), 0755);
      ::chmod(file.parent_path().c_str(), 0755);
    }
  }
}

}  // namespace
}  // namespace cujit
