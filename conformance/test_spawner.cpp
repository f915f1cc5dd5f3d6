// The one spawner (core/src/support/spawner.hpp) and its executable check: a program
// runs only when it is a regular, executable file owned by root or this user, writable by
// neither its group nor others, in directories of the same kind; anything else is an
// ExecutableRefusal naming the path and why, and never runs. Checked over every mode of the
// file and of its directory, over owners, and over what is not a regular file; then the
// spawner's own promises (input, captured output, environment, deadline, rlimits).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "compile/compile_worker.hpp"
#include "cujit/error.hpp"
#include "support/spawner.hpp"
#include "support/fixtures.hpp"
#include "support/scoped_variable.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using detail::ExecutableProblem;

constexpr uid_t nobody = 65534;

// A directory only this user can write (TempDir follows the umask), so that the file's own
// mode is what a test varies.
struct PrivateDir {
  TempDir dir;
  PrivateDir() { fs::permissions(dir.path(), fs::perms::owner_all, fs::perm_options::replace); }
  const fs::path& path() const { return dir.path(); }
};

// A script that writes `marker` when it runs.
fs::path marker_script(const fs::path& dir, const std::string& name, const fs::path& marker, mode_t mode = 0755) {
  const fs::path path = dir / name;
  std::ofstream(path) << "#!/bin/sh\necho ran > '" << marker.string() << "'\n";
  ::chmod(path.c_str(), mode);
  return path;
}

std::optional<detail::ExecutableRefusal> check(const fs::path& path) {
  detail::TrustedExecutable checked;
  return detail::open_trusted_executable(path.string(), checked);
}

std::string problem_text(const std::optional<detail::ExecutableRefusal>& refused) {
  return refused ? std::string(detail::to_string(refused->problem)) + ": " + refused->message() : "accepted";
}

using ::cujit::test::ScopedVariable;

TEST(ExecutableCheck, EveryModeOfAnOwnedFile) {
  const PrivateDir dir;
  const fs::path marker = dir.path() / "marker";
  const fs::path program = marker_script(dir.path(), "program", marker);
  for (mode_t mode = 0; mode <= 07777; ++mode) {
    ASSERT_EQ(::chmod(program.c_str(), mode), 0);
    const auto refused = check(program);
    SCOPED_TRACE("mode " + std::to_string(mode) + ": " + problem_text(refused));
    if ((mode & (S_IWGRP | S_IWOTH)) != 0) {
      ASSERT_TRUE(refused);
      EXPECT_EQ(refused->problem, ExecutableProblem::writable_by_others);
      EXPECT_NE(refused->message().find(program.string()), std::string::npos);
      EXPECT_NE(refused->message().find("writable by"), std::string::npos);
    } else if ((mode & 0111) == 0) {
      ASSERT_TRUE(refused);
      EXPECT_EQ(refused->problem, ExecutableProblem::not_executable);
    } else {
      EXPECT_FALSE(refused);
    }
  }
}

TEST(ExecutableCheck, EveryModeOfItsDirectory) {
  const PrivateDir outer;
  const fs::path dir = outer.path() / "bin";
  fs::create_directory(dir);
  const fs::path program = marker_script(dir, "program", outer.path() / "marker");
  for (mode_t mode = 0700; mode <= 01777; ++mode) {
    if ((mode & 0700) != 0700) continue;  // this user must still reach it to look
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    const auto refused = check(program);
    SCOPED_TRACE("directory mode " + std::to_string(mode) + ": " + problem_text(refused));
    const bool sticky = (mode & S_ISVTX) != 0;
    if ((mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky) {
      ASSERT_TRUE(refused);
      EXPECT_EQ(refused->problem, ExecutableProblem::untrusted_directory);
      EXPECT_NE(refused->message().find(dir.string()), std::string::npos);
    } else {
      EXPECT_FALSE(refused);
    }
  }
  ::chmod(dir.c_str(), 0700);
}

// Run as root (the CI suite is), so that a file can be given to another user.
TEST(ExecutableCheck, OwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root (the CI suite runs as root)";
  const PrivateDir outer;
  const fs::path dir = outer.path() / "bin";
  fs::create_directory(dir, outer.path());
  ::chmod(dir.c_str(), 0755);
  const fs::path program = marker_script(dir, "program", outer.path() / "marker");
  for (const uid_t owner : {uid_t{1}, uid_t{2}, nobody, uid_t{12345}}) {
    ASSERT_EQ(::chown(program.c_str(), owner, 0), 0);
    auto refused = check(program);
    ASSERT_TRUE(refused) << owner;
    EXPECT_EQ(refused->problem, ExecutableProblem::foreign_owner);
    EXPECT_NE(refused->message().find("owned by uid " + std::to_string(owner)), std::string::npos) << refused->message();
    ASSERT_EQ(::chown(program.c_str(), 0, 0), 0);
    ASSERT_EQ(::chown(dir.c_str(), owner, 0), 0);
    refused = check(program);
    ASSERT_TRUE(refused) << owner;
    EXPECT_EQ(refused->problem, ExecutableProblem::untrusted_directory) << refused->message();
    ASSERT_EQ(::chown(dir.c_str(), 0, 0), 0);
    EXPECT_FALSE(check(program)) << "root's again";
  }
}

TEST(ExecutableCheck, WhatIsNotARegularFile) {
  const PrivateDir dir;
  const fs::path marker = dir.path() / "marker";
  const fs::path program = marker_script(dir.path(), "program", marker);
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0755), 0);
  const fs::path subdir = dir.path() / "subdir";
  fs::create_directory(subdir);
  ::chmod(subdir.c_str(), 0755);
  EXPECT_EQ(check(fifo)->problem, ExecutableProblem::not_regular);
  EXPECT_EQ(check(subdir)->problem, ExecutableProblem::not_regular);
  EXPECT_EQ(check(dir.path() / "absent")->problem, ExecutableProblem::missing);
  EXPECT_EQ(check("/dev/null")->problem, ExecutableProblem::not_regular);
  // A link is followed to what it names, and that is what is checked.
  fs::create_symlink(program, dir.path() / "link");
  EXPECT_FALSE(check(dir.path() / "link"));
  ::chmod(program.c_str(), 0777);
  EXPECT_EQ(check(dir.path() / "link")->problem, ExecutableProblem::writable_by_others);
  fs::create_symlink(dir.path() / "absent", dir.path() / "dangling");
  EXPECT_EQ(check(dir.path() / "dangling")->problem, ExecutableProblem::missing);
}

// Refused means never run: the same script runs once it is fixed (the test's power).
TEST(ChildProcess, RefusedProgramNeverRuns) {
  const PrivateDir dir;
  const fs::path marker = dir.path() / "marker";
  const fs::path program = marker_script(dir.path(), "program", marker);
  for (const mode_t bad : {0775, 0757, 0777, 0722, 0702, 0720}) {
    ::chmod(program.c_str(), bad);
    detail::ChildOptions options;
    options.argv = {program.string()};
    const detail::ChildResult result = detail::run_child_process(options);
    ASSERT_TRUE(result.refused) << bad;
    EXPECT_FALSE(result.started());
    EXPECT_NE(result.start_error.find("refusing to run '" + program.string() + "'"), std::string::npos)
        << result.start_error;
    EXPECT_FALSE(fs::exists(marker)) << "mode " << bad << " ran";
  }
  ::chmod(program.c_str(), 0755);
  detail::ChildOptions options;
  options.argv = {program.string()};
  const detail::ChildResult result = detail::run_child_process(options);
  EXPECT_TRUE(result.exited()) << result.start_error;
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(fs::exists(marker));
}

// A script's #! interpreter is what the kernel runs (red-team finding F16): it passes the
// same check as the script, over every mode of the interpreter and of its directory, and a
// script whose interpreter fails never runs (the marker stays absent).
class HostileScriptInterpreter : public ::testing::Test {
 protected:
  HostileScriptInterpreter() {
    fs::create_directory(bin_);
    fs::copy_file("/bin/sh", interpreter_);
    ::chmod(bin_.c_str(), 0755);
    ::chmod(interpreter_.c_str(), 0755);
  }
  // A script run by `interpreter` that writes the marker.
  fs::path script(const std::string& name, const std::string& interpreter) {
    const fs::path path = dir_.path() / name;
    std::ofstream(path) << "#!" << interpreter << "\necho ran > '" << marker_.string() << "'\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  // Checked, then run through the spawner: refused means never run.
  std::optional<detail::ExecutableRefusal> check_and_run(const fs::path& path) {
    fs::remove(marker_);
    const auto refused = check(path);
    detail::ChildOptions options;
    options.argv = {path.string()};
    const detail::ChildResult result = detail::run_child_process(options);
    EXPECT_EQ(result.refused.has_value(), refused.has_value()) << path;
    // Refused never ran; accepted ran (as root, which every mode with an execute bit lets run).
    if (refused || ::geteuid() == 0) {
      EXPECT_EQ(fs::exists(marker_), !refused.has_value()) << path << ": " << problem_text(refused);
    }
    return refused;
  }
  PrivateDir dir_;
  fs::path bin_ = dir_.path() / "bin";
  fs::path interpreter_ = bin_ / "sh";
  fs::path marker_ = dir_.path() / "marker";
};

TEST_F(HostileScriptInterpreter, EveryModeOfTheInterpreterAndItsDirectory) {
  const fs::path program = script("program", interpreter_.string());
  for (mode_t mode = 0; mode <= 0777; ++mode) {
    ASSERT_EQ(::chmod(interpreter_.c_str(), mode), 0);
    const auto refused = check_and_run(program);
    SCOPED_TRACE("interpreter mode " + std::to_string(mode) + ": " + problem_text(refused));
    if ((mode & (S_IWGRP | S_IWOTH)) != 0 || (mode & 0111) == 0) {
      ASSERT_TRUE(refused);
      EXPECT_EQ(refused->problem, ExecutableProblem::untrusted_interpreter);
      EXPECT_NE(refused->message().find(interpreter_.string()), std::string::npos);
    } else {
      EXPECT_FALSE(refused);
    }
  }
  ::chmod(interpreter_.c_str(), 0755);
  for (mode_t mode = 0700; mode <= 0777; ++mode) {
    ASSERT_EQ(::chmod(bin_.c_str(), mode), 0);
    const auto refused = check_and_run(program);
    SCOPED_TRACE("interpreter directory mode " + std::to_string(mode) + ": " + problem_text(refused));
    EXPECT_EQ(refused.has_value(), (mode & (S_IWGRP | S_IWOTH)) != 0);
    if (refused) {
      EXPECT_NE(refused->message().find(bin_.string()), std::string::npos);
    }
  }
  ::chmod(bin_.c_str(), 0755);
}

// Interpreters that are scripts in turn are checked at every level the kernel follows; a
// bad one anywhere in the chain refuses the first script. PATH lookups (env) and relative
// interpreters are refused.
TEST_F(HostileScriptInterpreter, ChainsEnvAndRelativeInterpreters) {
  for (int length = 1; length <= 3; ++length) {
    for (int bad = -1; bad < length; ++bad) {
      // level 0 is the program; level i runs through level i+1; the last runs through sh.
      std::string next = interpreter_.string();
      fs::path first;
      for (int level = length - 1; level >= 0; --level) {
        first = script("level" + std::to_string(level), next);
        if (level > 0) std::ofstream(first) << "#!" << next << "\nexec " << next << " \"$@\"\n";
        ::chmod(first.c_str(), level == bad ? 0777 : 0755);
        next = first.string();
      }
      SCOPED_TRACE("chain of " + std::to_string(length) + ", writable level " + std::to_string(bad));
      const auto refused = check_and_run(first);
      if (bad < 0) {
        EXPECT_FALSE(refused) << problem_text(refused);
      } else {
        ASSERT_TRUE(refused);
        EXPECT_EQ(refused->problem, bad == 0 ? ExecutableProblem::writable_by_others
                                             : ExecutableProblem::untrusted_interpreter);
      }
    }
  }
  for (const std::string& interpreter : {std::string("sh"), std::string("bin/sh"), std::string("/usr/bin/env"),
                                         std::string("/usr/bin/env -S sh"), std::string("/usr/bin/env sh -e"),
                                         std::string("/usr/bin/env no-such-program-anywhere")}) {
    const auto refused = check_and_run(script("via", interpreter));
    ASSERT_TRUE(refused) << interpreter;
    EXPECT_EQ(refused->problem, ExecutableProblem::untrusted_interpreter) << problem_text(refused);
  }
}

// #!/usr/bin/env NAME (pyenv's shims, for one): NAME is looked up on PATH as env will, and
// checked; a PATH with an empty or relative entry (env would look in the working
// directory) is refused, and so is what the lookup finds when others could change it.
TEST_F(HostileScriptInterpreter, EnvLooksUpItsProgramAsCujitDoes) {
  const std::string path = std::string(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin");
  const fs::path program = script("via-env", "/usr/bin/env sh");
  {
    const ScopedVariable first("PATH", bin_.string() + ":" + path);
    EXPECT_FALSE(check_and_run(program)) << "the power: a trusted sh first on PATH runs";
    for (const mode_t bad : {0777, 0775, 0757}) {
      ::chmod(interpreter_.c_str(), bad);
      const auto refused = check_and_run(program);
      ASSERT_TRUE(refused) << bad;
      EXPECT_EQ(refused->problem, ExecutableProblem::untrusted_interpreter);
      EXPECT_NE(refused->message().find(interpreter_.string()), std::string::npos) << refused->message();
    }
    ::chmod(interpreter_.c_str(), 0755);
  }
  for (const std::string& unsafe : {":" + path, path + ":", path + "::/usr/bin", "relative/bin:" + path}) {
    const ScopedVariable with("PATH", unsafe);
    const auto refused = check_and_run(program);
    ASSERT_TRUE(refused) << unsafe;
    EXPECT_NE(refused->message().find("empty or relative entry"), std::string::npos) << refused->message();
  }
}

TEST(ChildProcess, InputOutputAndEnvironment) {
  detail::ChildOptions options;
  options.argv = {"sh", "-c", "cat; echo \"[$CUJIT_TEST_SET][${CUJIT_TEST_UNSET-unset}]\" >&2; exit 7"};
  options.input = std::string("bytes\0in", 8);
  options.out = options.err = detail::ChildSink::capture;
  options.environment = {{"CUJIT_TEST_SET", "value"}};
  options.unset = {"CUJIT_TEST_UNSET"};
  const ScopedVariable inherited("CUJIT_TEST_UNSET", "inherited");
  std::string out, err;
  const detail::ChildResult result = detail::run_child_process(options, [&](detail::ChildStream stream, std::string_view text) {
    (stream == detail::ChildStream::out ? out : err).append(text);
  });
  ASSERT_TRUE(result.exited()) << result.start_error;
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_EQ(out, std::string("bytes\0in", 8));
  EXPECT_EQ(err, "[value][unset]\n");
}

TEST(ChildProcess, DeadlineAndOutputCapKill) {
  detail::ChildOptions options;
  options.argv = {"sleep", "30"};
  options.timeout = std::chrono::milliseconds(200);
  const detail::ChildResult slow = detail::run_child_process(options);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.signal, SIGKILL);
  options.argv = {"yes"};
  options.timeout = std::chrono::seconds(60);
  options.out = detail::ChildSink::capture;
  options.max_output_bytes = 1 << 16;
  const detail::ChildResult flood = detail::run_child_process(options, [](detail::ChildStream, std::string_view) {});
  EXPECT_TRUE(flood.output_too_long);
  EXPECT_FALSE(flood.exited());
}

TEST(ChildProcess, MemoryAndCpuLimitsReachTheChild) {
  detail::ChildOptions options;
  options.argv = {"sh", "-c", "ulimit -v; ulimit -t"};
  options.out = detail::ChildSink::capture;
  options.memory_limit_bytes = std::uint64_t{3} << 30;
  options.cpu_limit_seconds = 17;
  std::string out;
  const detail::ChildResult result =
      detail::run_child_process(options, [&](detail::ChildStream, std::string_view text) { out.append(text); });
  ASSERT_TRUE(result.exited()) << result.start_error;
  EXPECT_EQ(out, std::to_string((std::uint64_t{3} << 30) / 1024) + "\n17\n");
}

// A child past its CPU limit dies of SIGXCPU, which says why; it once got SIGKILL (soft and
// hard limits equal), which reads as a crash.
TEST(ChildProcess, AChildPastItsCpuLimitDiesOfSigxcpu) {
  detail::ChildOptions options;
  options.argv = {"sh", "-c", "while :; do :; done"};
  options.cpu_limit_seconds = 1;
  options.timeout = std::chrono::seconds(60);
  const detail::ChildResult result = detail::run_child_process(options, [](detail::ChildStream, std::string_view) {});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, SIGXCPU) << result.start_error;
}

// libcujit's compile worker goes through the same check: a named worker that another user
// could have written is Error(io) naming it, never run.
TEST(CompileWorkerCheck, UntrustedWorkerIsATypedError) {
  const PrivateDir dir;
  const fs::path marker = dir.path() / "marker";
  const fs::path worker = marker_script(dir.path(), "worker", marker, 0775);
  const ScopedVariable chosen("CUJIT_COMPILE_WORKER", worker.string());
  try {
    (void)detail::compile_worker_path();
    ADD_FAILURE() << "a group-writable worker was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::io);
    EXPECT_NE(error.message().find(worker.string()), std::string::npos) << error.what();
    EXPECT_NE(error.message().find("writable by its group"), std::string::npos) << error.what();
  }
  ::chmod(worker.c_str(), 0755);
  EXPECT_EQ(detail::compile_worker_path(), worker.string());
  EXPECT_FALSE(fs::exists(marker));
}

// A program of the build tree (this test) uses the build tree's worker.
TEST(CompileWorkerCheck, BuildTreeProgramUsesBuildTreeWorker) {
  ::unsetenv("CUJIT_COMPILE_WORKER");
  EXPECT_EQ(detail::compile_worker_candidate(), CUJIT_TEST_COMPILE_WORKER);
}

}  // namespace
}  // namespace cujit
