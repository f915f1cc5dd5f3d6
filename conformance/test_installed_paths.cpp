// An installed cujit runs only what was installed or named (issue 31): it finds its compile
// worker and report scripts relative to where it is installed, never in the build or source
// tree it was built from, which may be gone and anyone's to fill. The tests install this
// build into a temporary prefix, move the build tree's worker away and plant, at its path
// and at the build tree's benchmark path, programs that leave a marker when run; the build
// tree's own probe shows that the planted worker would run (the tests' power), the
// installed copies show that they never run it. These tests change the build tree while
// they run, so CTest runs them alone (RUN_SERIAL); a planted file left by a killed run is
// put back by the next.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/spawner.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const fs::path build_tree = CUJIT_TEST_BUILD_DIR;
const fs::path build_worker = CUJIT_TEST_COMPILE_WORKER;
const fs::path build_probe = CUJIT_TEST_INSTALL_PROBE;
const fs::path build_bench = build_tree / "bench" / "bench_jit";
const std::string moved_suffix = ".moved-by-install-test";

struct ProcessRun {
  int exit_code = -1;
  std::string out;
  std::string start_error;
};

ProcessRun run(const std::vector<std::string>& argv, std::vector<std::pair<std::string, std::string>> environment = {}) {
  detail::ChildOptions options;
  options.argv = argv;
  options.environment = std::move(environment);
  options.unset = {"CUJIT_COMPILE_WORKER", "CUJIT_BUILD_DIR", "CUJIT_SOURCE_DIR", "CUJIT_COMPILE_IN_PROCESS"};
  options.out = detail::ChildSink::capture;
  options.err_to_out = true;
  options.timeout = std::chrono::minutes(5);
  ProcessRun result;
  const detail::ChildResult child =
      detail::run_child_process(options, [&](detail::ChildStream, std::string_view text) { result.out.append(text); });
  result.start_error = child.start_error;
  result.exit_code = child.exited() ? child.exit_code : -1;
  return result;
}

void write_marker_program(const fs::path& path, const fs::path& marker, const std::string& text) {
  fs::remove(path);
  std::ofstream(path) << "#!/bin/sh\necho " << text << " >> '" << marker.string() << "'\nexit 1\n";
  ::chmod(path.c_str(), 0755);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Moves a build-tree file away and plants a marker program in its place; puts it back (or
// removes the planted file where there was none) when it goes, and first undoes what a
// killed earlier run left.
class Planted {
 public:
  Planted(fs::path path, const fs::path& marker) : path_(std::move(path)), moved_(path_.string() + moved_suffix) {
    if (fs::exists(moved_)) fs::rename(moved_, path_);
    had_file_ = fs::exists(path_);
    if (had_file_) fs::rename(path_, moved_);
    fs::create_directories(path_.parent_path());
    write_marker_program(path_, marker, "planted:" + path_.filename().string());
  }
  ~Planted() {
    std::error_code ignored;
    fs::remove(path_, ignored);
    if (had_file_) fs::rename(moved_, path_, ignored);
  }
  Planted(const Planted&) = delete;
  Planted& operator=(const Planted&) = delete;

 private:
  fs::path path_, moved_;
  bool had_file_ = false;
};

class Installed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    prefix_dir_ = new TempDir();
    fs::permissions(prefix(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::replace);
    const ProcessRun install = run({CUJIT_TEST_CMAKE, "--install", build_tree.string(), "--prefix", prefix().string()});
    ASSERT_EQ(install.exit_code, 0) << install.start_error << install.out;
    // An application that links libcujit.a, installed beside cujit.
    fs::copy_file(build_probe, prefix() / "bin" / "install_probe");
  }
  static void TearDownTestSuite() {
    delete prefix_dir_;
    prefix_dir_ = nullptr;
  }
  static const fs::path& prefix() { return prefix_dir_->path(); }
  static fs::path installed_worker() { return prefix() / "libexec" / "cujit" / "cujit-compile-worker"; }

  void SetUp() override {
    marker_ = prefix() / "marker";
    fs::remove(marker_);
  }
  std::string markers() const { return read_text(marker_); }

  // Runs `argv` and expects the refusal of the CLI's trust check: exit 2, naming `refused`,
  // and nothing planted ran.
  void expect_refused(const std::vector<std::string>& argv, const fs::path& refused) const {
    const ProcessRun run_refused = run(argv);
    EXPECT_EQ(run_refused.exit_code, 2) << run_refused.out;
    EXPECT_NE(run_refused.out.find("refusing to run '" + refused.string() + "'"), std::string::npos) << run_refused.out;
    EXPECT_EQ(markers(), "") << "a refused file ran";
  }

  fs::path marker_;

 private:
  static TempDir* prefix_dir_;
};
TempDir* Installed::prefix_dir_ = nullptr;

TEST_F(Installed, LibraryUsesTheInstalledWorkerNeverThePlantedBuildTreeOne) {
  const Planted planted(build_worker, marker_);
  // The power: a program of the build tree runs what is at the build tree's path.
  const ProcessRun inside = run({build_probe.string()});
  EXPECT_NE(inside.out.find("candidate=" + build_worker.string()), std::string::npos) << inside.out;
  EXPECT_NE(markers().find("planted:"), std::string::npos) << inside.out;
  fs::remove(marker_);
  // The installed program chooses the installed worker, and compiles with it.
  const ProcessRun installed = run({(prefix() / "bin" / "install_probe").string()});
  EXPECT_NE(installed.out.find("worker=" + installed_worker().string()), std::string::npos) << installed.out;
  EXPECT_NE(installed.out.find("\ncompiled\n"), std::string::npos) << installed.out;
  // Without an installed worker it compiles in-process, still never in the build tree.
  fs::rename(installed_worker(), installed_worker().string() + ".away");
  const ProcessRun bare = run({(prefix() / "bin" / "install_probe").string()});
  fs::rename(installed_worker().string() + ".away", installed_worker());
  EXPECT_EQ(bare.out.find(build_tree.string()), std::string::npos) << bare.out;
  EXPECT_NE(bare.out.find("\ncompiled\n"), std::string::npos) << bare.out;
  EXPECT_EQ(markers(), "") << "the installed program ran the planted build-tree worker";
}

TEST_F(Installed, InstalledWorkerRunsAndAnUntrustedOneIsRefused) {
  const fs::path saved = installed_worker().string() + ".saved";
  fs::rename(installed_worker(), saved);
  write_marker_program(installed_worker(), marker_, "installed-worker");
  const fs::path probe = prefix() / "bin" / "install_probe";
  const ProcessRun trusted = run({probe.string()});
  EXPECT_EQ(markers(), "installed-worker\n") << trusted.out;
  fs::remove(marker_);
  // A refused worker is never run, and the compile goes on in-process with one warning
  // naming it (red-team finding F1: failing every compile let whoever planted one stop
  // every build).
  for (const mode_t bad : {0775, 0757, 0777}) {
    ::chmod(installed_worker().c_str(), bad);
    const ProcessRun refused = run({probe.string()});
    EXPECT_NE(refused.out.find("cujit: warning: refusing to run '" + installed_worker().string() + "'"),
              std::string::npos)
        << refused.out;
    EXPECT_NE(refused.out.find("worker=none"), std::string::npos) << refused.out;
    EXPECT_NE(refused.out.find("\ncompiled\n"), std::string::npos) << refused.out;
  }
  ::chmod(installed_worker().c_str(), 0755);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(installed_worker().c_str(), 65534, 65534), 0);
    const ProcessRun foreign = run({probe.string()});
    EXPECT_NE(foreign.out.find("owned by uid 65534"), std::string::npos) << foreign.out;
    EXPECT_NE(foreign.out.find("\ncompiled\n"), std::string::npos) << foreign.out;
  }
  EXPECT_EQ(markers(), "") << "a refused worker ran";
  fs::remove(installed_worker());
  fs::rename(saved, installed_worker());
}

// Any program linking libcujit.a looks for <its dir>/../libexec/cujit (red-team finding F1:
// a program in /tmp/<d>/ took /tmp/libexec/cujit, which any user can make): a worker there
// counts only when its directory and every one above are owned by root or this user and
// writable by no one else. Each way another user could have made it leaves the worker
// unchosen and unrun, and the program compiles in-process; a prefix of the caller's own is
// chosen (the tests' power).
TEST(HostileProgramsOutsideAnInstall, AWorkerOthersCouldHavePlantedBesideAProgramIsNeverTaken) {
  struct Plant {
    std::string name;
    mode_t libexec_mode, cujit_mode;
    uid_t owner;  // of libexec/cujit (root only: another user)
  };
  std::vector<Plant> plants{{"libexec/cujit 0777", 0755, 0777, ::geteuid()},
                            {"libexec/cujit 0775", 0755, 0775, ::geteuid()},
                            {"libexec 0777", 0777, 0755, ::geteuid()},
                            {"libexec 1777 (sticky)", 01777, 0777, ::geteuid()}};
  if (::geteuid() == 0) plants.push_back({"libexec/cujit of uid 65534", 0755, 0755, 65534});
  for (const Plant& plant : plants) {
    TempDir root;
    ::chmod(root.path().c_str(), 0755);
    const fs::path program = root.path() / "d" / "program";
    fs::create_directories(program.parent_path());
    fs::copy_file(build_probe, program);
    const fs::path worker = root.path() / "libexec" / "cujit" / "cujit-compile-worker";
    const fs::path marker = root.path() / "marker";
    fs::create_directories(worker.parent_path());
    write_marker_program(worker, marker, "planted");
    ::chmod(worker.parent_path().parent_path().c_str(), 0755);
    ::chmod(worker.parent_path().c_str(), 0755);
    // The power: made by this user in directories only it can write, the worker is chosen.
    const ProcessRun own = run({program.string()});
    EXPECT_NE(own.out.find("candidate=" + worker.string()), std::string::npos) << own.out;
    fs::remove(marker);
    ::chmod(worker.parent_path().parent_path().c_str(), plant.libexec_mode);
    ::chmod(worker.parent_path().c_str(), plant.cujit_mode);
    ASSERT_EQ(::chown(worker.parent_path().c_str(), plant.owner, static_cast<gid_t>(-1)), 0);
    const ProcessRun planted = run({program.string()});
    EXPECT_EQ(planted.out.find("candidate=" + worker.string()), std::string::npos) << plant.name << "\n" << planted.out;
    EXPECT_NE(planted.out.find("\ncompiled\n"), std::string::npos) << plant.name << "\n" << planted.out;
    EXPECT_FALSE(fs::exists(marker)) << plant.name << ": the planted worker ran";
    EXPECT_EQ(::chown(worker.parent_path().c_str(), ::geteuid(), static_cast<gid_t>(-1)), 0);
    ::chmod(worker.parent_path().c_str(), 0755);
    ::chmod(worker.parent_path().parent_path().c_str(), 0755);
  }
}

TEST_F(Installed, CommandNeedingABuildTreeSaysSoAndRunsNothingPlanted) {
  const Planted planted_bench(build_bench, marker_);
  const fs::path cujit = prefix() / "bin" / "cujit";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"bench", "--quick", "--out", (prefix() / "bench-out").string()},
        std::vector<std::string>{"conformance", "--list"}}) {
    std::vector<std::string> argv{cujit.string()};
    argv.insert(argv.end(), command.begin(), command.end());
    const ProcessRun result = run(argv);
    EXPECT_EQ(result.exit_code, 2) << command.front() << ": " << result.out;
    EXPECT_NE(result.out.find("needs a build tree"), std::string::npos) << result.out;
  }
  EXPECT_EQ(markers(), "");
  // The same command with the build tree named runs it (the planted file is then named, and
  // runs: the test's power).
  const ProcessRun named = run({cujit.string(), "bench", "--quick", "--out", (prefix() / "bench-named").string()},
                        {{"CUJIT_BUILD_DIR", build_tree.string()}});
  EXPECT_NE(markers().find("planted:bench_jit"), std::string::npos) << named.out;
}

TEST_F(Installed, ReportScriptsComeFromTheInstallTree) {
  const fs::path script = prefix() / "share" / "cujit" / "reports" / "report.py";
  ASSERT_TRUE(fs::is_regular_file(script));
  const fs::path saved = script.string() + ".saved";
  fs::rename(script, saved);
  std::ofstream(script) << "import pathlib\npathlib.Path(r'" << marker_.string()
                        << "').write_text('installed-report')\n";
  ::chmod(script.c_str(), 0644);
  const fs::path input = prefix() / "bench.json";
  std::ofstream(input) << "{}\n";
  const fs::path cujit = prefix() / "bin" / "cujit";
  const std::vector<std::string> argv{cujit.string(), "report", input.string(), "--out",
                                      (prefix() / "report-out").string()};
  const ProcessRun report = run(argv);
  EXPECT_EQ(markers(), "installed-report") << "not the installed report.py: " << report.out;
  fs::remove(marker_);
  ::chmod(script.c_str(), 0666);
  expect_refused(argv, script);
  fs::remove(script);
  fs::rename(saved, script);
}

// Python imports the package beside the script (and reads its bytecode): a module or a
// __pycache__ others can write is refused like the script itself (red-team finding F2).
TEST_F(Installed, AReportModuleOrBytecodeDirectoryOthersCanWriteIsRefused) {
  const fs::path reports = prefix() / "share" / "cujit" / "reports";
  const fs::path module = reports / "cujit_reports" / "stats.py";
  ASSERT_TRUE(fs::is_regular_file(module));
  const fs::path saved = module.string() + ".saved";
  fs::copy_file(module, saved);
  std::ofstream(module, std::ios::app) << "\nimport pathlib\npathlib.Path(r'" << marker_.string()
                                       << "').write_text('planted-module')\n";
  const fs::path input = prefix() / "bench.json";
  std::ofstream(input) << "{}\n";
  // compare imports the statistics module before it reads its inputs.
  const std::vector<std::string> argv{(prefix() / "bin" / "cujit").string(), "compare", input.string(), input.string()};
  for (const mode_t mode : {0666, 0646, 0664}) {
    SCOPED_TRACE(testing::Message() << "mode " << std::oct << mode);
    ::chmod(module.c_str(), mode);
    expect_refused(argv, module);
  }
  ::chmod(module.c_str(), 0644);
  const fs::path bytecode = reports / "cujit_reports" / "__pycache__";
  fs::create_directories(bytecode);
  ::chmod(bytecode.c_str(), 0777);
  expect_refused(argv, bytecode);
  ::chmod(bytecode.c_str(), 0755);
  // Owned and not writable by others, the planted module is imported (the test's power).
  (void)run(argv);
  EXPECT_EQ(markers(), "planted-module");
  fs::remove(module);
  fs::rename(saved, module);
}

}  // namespace
}  // namespace cujit
