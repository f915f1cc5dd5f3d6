// CUJIT_CAPTURE_DIR: a failing link or kernel build in this process writes a scenario file
// and its inputs that the scenario runner loads and that reproduces the failure; hostile
// values of the variable crash nothing and write nowhere else; the error thrown is the
// one the link threw, capture or not.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "runner/scenario_file.hpp"
#include "runner/scenario_render.hpp"
#include "runner/scenario_run.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

// Sets CUJIT_CAPTURE_DIR for one test and puts the old value back.
class CaptureDir {
 public:
  explicit CaptureDir(const std::string& value) {
    if (const char* old = std::getenv("CUJIT_CAPTURE_DIR")) old_ = old;
    ::setenv("CUJIT_CAPTURE_DIR", value.c_str(), 1);
  }
  ~CaptureDir() {
    if (old_) ::setenv("CUJIT_CAPTURE_DIR", old_->c_str(), 1);
    else ::unsetenv("CUJIT_CAPTURE_DIR");
  }
  CaptureDir(const CaptureDir&) = delete;
  CaptureDir& operator=(const CaptureDir&) = delete;

 private:
  std::optional<std::string> old_;
};

// mixed_kernel.ptx calls dev_add and dev_mul, which nothing defines: an unresolved link.
Linker failing_link(const std::string& arch = "sm_90") {
  LinkOptions options;
  options.arch = Arch::parse(arch);
  options.backend = LinkerBackend::nvjitlink;
  Linker linker(options, BuildCache::disabled());
  linker.add_data(Format::ptx, test::read_bytes(test::fixture_path("mixed_kernel.ptx")), "mixed_kernel.ptx");
  return linker;
}

// Every scenario file under `root`.
std::vector<fs::path> scenario_files(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(root, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    if (it->path().filename() == "scenario.json") out.push_back(it->path());
  }
  return out;
}

// The message of the error `link` throws.
std::string link_error(const Linker& linker) {
  try {
    (void)linker.link();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::link) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "the link did not fail";
  return {};
}

TEST(ScenarioCapture, AFailedLinkBecomesAScenarioThatReproducesIt) {
  const test::TempDir dir;
  const fs::path root = dir.path() / "captures";
  const std::string uncaptured = link_error(failing_link());
  std::string captured;
  {
    const CaptureDir capture(root.string());
    captured = link_error(failing_link());
  }
  // The error is the same with capture on.
  EXPECT_EQ(captured, uncaptured);
  const std::vector<fs::path> files = scenario_files(root);
  ASSERT_EQ(files.size(), 1u);
  // Private: the directory 0700, the files 0600.
  struct stat info {};
  ASSERT_EQ(::stat(files[0].parent_path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(files[0].c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  const scenarios::Scenario scenario = scenarios::load_scenario(files[0]);
  EXPECT_EQ(scenario.builder, scenarios::Builder::linker);
  ASSERT_EQ(scenario.inputs.size(), 1u);
  ASSERT_TRUE(scenario.reported_failure.has_value());
  const scenarios::ScenarioReport report = scenarios::run_scenario(scenario, test::fixture_path(""));
  EXPECT_EQ(report.verdict, scenarios::Verdict::reproduced) << scenarios::render_text(report);
  ASSERT_EQ(report.inputs.size(), 1u);
  EXPECT_EQ(report.inputs[0].name, "mixed_kernel.ptx");
}

TEST(ScenarioCapture, ReplayingAScenarioCapturesNothing) {
  const test::TempDir dir;
  const fs::path first = dir.path() / "first", replays = dir.path() / "replays";
  {
    const CaptureDir capture(first.string());
    (void)link_error(failing_link());
  }
  const std::vector<fs::path> files = scenario_files(first);
  ASSERT_EQ(files.size(), 1u);
  const scenarios::Scenario captured = scenarios::load_scenario(files[0]);
  // A repo scenario that expects its link to fail, and the captured one, replayed with the
  // variable still set: both fail as their files say, and neither is captured again.
  const CaptureDir capture(replays.string());
  scenarios::Scenario expected_failure = captured;
  expected_failure.reported_failure.reset();
  expected_failure.steps[0].expect.success = false;
  const scenarios::ScenarioReport reproduced = scenarios::run_scenario(captured, test::fixture_path(""));
  EXPECT_EQ(reproduced.verdict, scenarios::Verdict::reproduced) << scenarios::render_text(reproduced);
  const scenarios::ScenarioReport failed = scenarios::run_scenario(expected_failure, test::fixture_path(""));
  EXPECT_EQ(failed.verdict, scenarios::Verdict::as_expected) << scenarios::render_text(failed);
  EXPECT_TRUE(scenario_files(replays).empty());
  // Capture is on again once the replay returns.
  (void)link_error(failing_link());
  EXPECT_EQ(scenario_files(replays).size(), 1u);
}

TEST(ScenarioCapture, EachFailureGetsADirectoryOfItsOwn) {
  const test::TempDir dir;
  const CaptureDir capture(dir.path().string());
  (void)link_error(failing_link());
  (void)link_error(failing_link());
  EXPECT_EQ(scenario_files(dir.path()).size(), 2u);
}

TEST(ScenarioCapture, AFailedKernelBuildIsCapturedOnceAsAKernelScenario) {
  const test::TempDir dir;
  const CaptureDir capture(dir.path().string());
  KernelOptions options;
  options.link.arch = Arch::parse("sm_90");
  options.link.backend = LinkerBackend::nvjitlink;
  KernelBuilder builder("mixed_kernel", options, BuildCache::disabled());
  builder.source(LinkableCode::from_path(test::fixture_path("mixed_kernel.ptx")));
  builder.link(LinkableCode::from_path(test::fixture_path("dev_add.ptx")));  // dev_mul stays missing
  EXPECT_THROW((void)builder.link_cubin(), Error);
  // The inner Linker's failure is part of the build's, not a capture of its own.
  const std::vector<fs::path> files = scenario_files(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const scenarios::Scenario scenario = scenarios::load_scenario(files[0]);
  EXPECT_EQ(scenario.builder, scenarios::Builder::kernel);
  EXPECT_EQ(scenario.name, "mixed_kernel");
  ASSERT_EQ(scenario.inputs.size(), 2u);
  EXPECT_TRUE(scenario.inputs[0].kernel_source);
  const scenarios::ScenarioReport report = scenarios::run_scenario(scenario, test::fixture_path(""));
  EXPECT_EQ(report.verdict, scenarios::Verdict::reproduced) << scenarios::render_text(report);
}

TEST(ScenarioCapture, ASuccessfulLinkWritesNothing) {
  const test::TempDir dir;
  const CaptureDir capture(dir.path().string());
  Linker linker = failing_link();
  linker.add_file(test::fixture_path("dev_add.ptx"));
  linker.add_file(test::fixture_path("dev_mul.ptx"));
  EXPECT_NO_THROW((void)linker.link());
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// CUJIT_CAPTURE_DIR follows the rule of `cujit repro --capture`: through another user's
// link (also one followed by ".."), in their directory, or writable by others, nothing is
// captured (red-team finding, 2026-11-28: the library wrote captures there, where that user
// could swap in a scenario of their own). Needs root, to make them another user's.
TEST(ScenarioCapture, ACaptureDirectoryAnotherUserCanRedirectIsNotUsed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory and a link to another user";
  const test::TempDir dir;
  const fs::path victim = dir.path() / "victim";
  fs::create_directories(victim / "deeper");
  const fs::path link = dir.path() / "their-link";
  fs::create_symlink(victim / "deeper", link);
  ASSERT_EQ(::lchown(link.c_str(), 4242, 4242), 0);
  const fs::path theirs = dir.path() / "theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
  const fs::path shared = dir.path() / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all, fs::perm_options::replace);
  for (const fs::path& root : {link / "captures", link / ".." / "captures", theirs / "captures", shared}) {
    SCOPED_TRACE(root.string());
    const CaptureDir capture(root.string());
    (void)link_error(failing_link());
    EXPECT_TRUE(scenario_files(dir.path()).empty()) << "a capture was written";
  }
}

TEST(ScenarioCapture, HostileCaptureDirectoriesCrashNothingAndWriteNowhereElse) {
  const test::TempDir dir;
  const fs::path file = dir.write("a-file", "not a directory");
  const fs::path elsewhere = dir.path() / "elsewhere";
  fs::create_directory(elsewhere);
  const fs::path link = dir.path() / "link-to-elsewhere";
  fs::create_directory_symlink(elsewhere, link);
  const std::string expected = link_error(failing_link());
  for (const fs::path& hostile : {file, file / "below-a-file", link, fs::path("/proc/self/no-such-dir/x")}) {
    const CaptureDir capture(hostile.string());
    // The link's own error comes back, untouched.
    EXPECT_EQ(link_error(failing_link()), expected) << hostile;
  }
  EXPECT_TRUE(fs::is_empty(elsewhere)) << "a symlinked capture directory was written through";
  // An unwritable directory (root writes anyway: then it is an ordinary capture).
  const fs::path locked = dir.path() / "locked";
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  {
    const CaptureDir capture(locked.string());
    EXPECT_EQ(link_error(failing_link()), expected);
  }
  if (::geteuid() != 0) {
    EXPECT_TRUE(fs::is_empty(locked));
  }
  fs::permissions(locked, fs::perms::owner_all);
  EXPECT_EQ(test::read_bytes(file), "not a directory");
  // An empty value means no capture.
  const CaptureDir empty("");
  EXPECT_EQ(link_error(failing_link()), expected);
}

}  // namespace
}  // namespace cujit
