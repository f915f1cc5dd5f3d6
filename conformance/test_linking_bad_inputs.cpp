// Bad inputs: every one is a typed error naming the input; nothing crashes or leaks.
// File-level cases run for both backends on CPU (they fail before any backend call);
// link-level cases run through nvJitLink on CPU and through the driver linker on a GPU.
#include <gtest/gtest.h>
#include <fstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <csignal>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/fresh_process.hpp"
#include "support/linking.hpp"
#include "support/long_names.hpp"
#include "support/printers.hpp"
// The nvJitLink session's testing seam; self-contained, included by its path (this
// executable does not see core/src).
#include "../core/src/link/nvjitlink_test_hook.hpp"
#include "link/link_session.hpp"
#include "support/stderr_capture.hpp"

namespace cujit {
namespace {

using test::fixture_path;
using test::read_bytes;

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::string backend_name(const ::testing::TestParamInfo<LinkerBackend>& info) {
  return std::string(to_string(info.param));
}

// ---- special files and sizes: nothing blocks, nothing is read unbounded ----------------

// Every path that is not a regular file of bounded size is refused before a byte is read,
// naming the path and what it is; none of these may block or exhaust memory.
TEST(HostileInputFile, SpecialFilesAreRefusedWithoutBlocking) {
  test::TempDir dir;
  const std::filesystem::path fifo = dir.path() / "input.ptx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::filesystem::path to_zero = dir.path() / "zero.cubin";
  std::filesystem::create_symlink("/dev/zero", to_zero);
  const std::filesystem::path to_null = dir.path() / "null.ptx";
  std::filesystem::create_symlink("/dev/null", to_null);
  const std::filesystem::path subdir = dir.path() / "dir.fatbin";
  std::filesystem::create_directory(subdir);
  const std::vector<std::pair<std::filesystem::path, std::string>> cases{
      {fifo, "is a FIFO"},
      {to_zero, "is a character device"},
      {to_null, "is a character device"},
      {subdir, "is a directory"},
  };
  for (const auto& [path, what] : cases) {
    CUJIT_EXPECT_ERROR((void)LinkableCode::from_path(path), ErrorKind::io, error,
                       EXPECT_TRUE(contains(error.what(), path.string())) << error.what();
                       EXPECT_TRUE(contains(error.what(), what)) << error.what(););
  }
}

TEST(HostileInputFile, AFileOverTheLimitIsRefusedBeforeItIsRead) {
  test::TempDir dir;
  const std::filesystem::path huge = dir.path() / "huge.cubin";
  { std::ofstream(huge.string()).put('x'); }
  // Sparse: takes no disk space, and reading it would take 1 GiB of memory.
  std::filesystem::resize_file(huge, LinkableCode::max_file_bytes + 1);
  CUJIT_EXPECT_ERROR((void)LinkableCode::from_path(huge), ErrorKind::io, error,
                     EXPECT_TRUE(contains(error.what(), "huge.cubin")) << error.what();
                     EXPECT_TRUE(contains(error.what(), "-byte limit")) << error.what(););
}

// ---- logs: unbounded text is read without recursion -------------------------------------

TEST(HostileLinkerLog, AnUnresolvedSymbolOfAnyLengthIsNamed) {
  // A 28k-character symbol overflowed the stack of the std::regex that read the log.
  const std::string symbol = "_Z" + std::string(28000, 'x');
  const std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.extern .func " + symbol +
                          "();\n.visible .entry k() {\n  call.uni " + symbol + ", ();\n  ret;\n}\n";
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add(LinkableCode::ptx(ptx, "long_symbol.ptx"));
  try {
    (void)linker.link();
    FAIL() << "linked with an unresolved symbol";
  } catch (const LinkError& error) {
    ASSERT_EQ(error.unresolved_symbols().size(), 1u) << error.message().substr(0, 300);
    EXPECT_EQ(error.unresolved_symbols().front(), symbol);
  }
}

// The assumption behind cujit's name limit (max_linker_name_length, red-team finding F18):
// nvJitLink links a name at the limit in every PTX field, the undefined one with an input
// name at the limit too (both in one log message), on a thread with 512 KiB of stack (it
// recurses over a name: 150,000 characters killed a 256 KiB thread). A crash ends this test.
TEST(HostileLinkerLog, NamesAtTheLimitLinkInEveryField) {
  const std::string input_name = "i" + std::string(max_linker_name_length - 1, 'x');
  for (const test::LongNamePtx& input : test::long_name_ptx(max_linker_name_length)) {
    std::string outcome;
    auto link = [&] {
      try {
        Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
        linker.add(LinkableCode::ptx(input.ptx, input.links ? input.field + ".ptx" : input_name));
        (void)linker.link();
        outcome = "linked";
      } catch (const LinkError&) {
        outcome = "link error";
      } catch (const Error& error) {
        outcome = "error: " + error.message().substr(0, 200);
      }
    };
    pthread_attr_t attributes;
    ASSERT_EQ(::pthread_attr_init(&attributes), 0);
    ASSERT_EQ(::pthread_attr_setstacksize(&attributes, 512 * 1024), 0);
    pthread_t thread;
    ASSERT_EQ(::pthread_create(&thread, &attributes,
                               [](void* run) -> void* {
                                 (*static_cast<decltype(link)*>(run))();
                                 return nullptr;
                               },
                               &link),
              0);
    ::pthread_join(thread, nullptr);
    ::pthread_attr_destroy(&attributes);
    EXPECT_EQ(outcome, input.links ? "linked" : "link error") << input.field;
  }
}

// An input name over the limit is refused before nvJitLink sees it (a 200,000-character
// name with an undefined symbol killed nvJitLinkComplete), naming the limit.
TEST(HostileLinkerLog, AnInputNameOverTheLimitIsRefused) {
  const std::string ptx = test::long_name_ptx(8).front().ptx;
  for (const std::size_t length : {max_linker_name_length + 1, 4 * max_linker_name_length, std::size_t{200000}}) {
    try {
      (void)LinkableCode::ptx(ptx, std::string(length, 'i'));
      FAIL() << "accepted an input name of " << length << " characters";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::format);
      EXPECT_NE(error.message().find("the limit is " + std::to_string(max_linker_name_length)), std::string::npos)
          << error.message().substr(0, 300);
    }
  }
  EXPECT_NO_THROW((void)LinkableCode::ptx(ptx, std::string(max_linker_name_length, 'i')));
}

// ---- stderr: nvJitLink's stderr-only errors are read without taking stderr from anyone ---

// Points fd 2 at a file for the test's lifetime, so what the test prints (and what cujit
// forwards) can be read back.
class StderrToFile {
 public:
  explicit StderrToFile(const std::filesystem::path& path) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~StderrToFile() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }

 private:
  int saved_ = -1;
};

void write_line(const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

LinkResult link_files(const std::vector<std::string>& fixtures, bool lto = false) {
  Linker linker(test::link_options(LinkerBackend::nvjitlink, lto));
  for (const std::string& name : fixtures) linker.add_file(fixture_path(name));
  return linker.link();
}

// A clean link with a fatbin, whose duplicates nvJitLink would report only on stderr.
const std::vector<std::string> watched_clean_link{"dev_add_ptx.fatbin", "scale_kernel.ptx"};

// Links dev_add.o with dev_add_ptx.fatbin, which both define dev_add: the link must fail
// naming dev_add alone, without the session tag. Returns the error's log.
std::string log_of_refused_duplicate() {
  try {
    (void)link_files({"dev_add.o", "dev_add_ptx.fatbin"});
    ADD_FAILURE() << "linked although dev_add is defined twice";
  } catch (const LinkError& error) {
    EXPECT_EQ(error.duplicate_symbols(), std::vector<std::string>{"dev_add"});
    EXPECT_FALSE(contains(error.what(), "#cujit-link-")) << "the session tag leaked: " << error.what();
    return error.log();
  }
  return {};
}

TEST(NvJitLinkStderr, MultipleDefinitionsReportedOnlyOnStderrFailTheLink) {
  // In a process of its own: a duplicate nvJitLink may die on (support/fresh_process.hpp).
  test::in_fresh_process([&] {
    // nvJitLink 13.0 reports these with NVJITLINK_SUCCESS and an "error : ..." line on
    // stderr; the definitions check cannot read inside objects and fatbins.
    test::TempDir dir;
    StderrToFile redirect(dir.path() / "stderr.txt");
    const std::string log = log_of_refused_duplicate();
    EXPECT_TRUE(contains(log, "Multiple definition of 'dev_add'")) << log;
    EXPECT_FALSE(contains(read_bytes(dir.path() / "stderr.txt"), "Multiple definition"))
        << "the claimed diagnostic was printed as well";
  });
}

TEST(HostileStderr, AnotherThreadsErrorLinesNeverFailALink) {
  test::TempDir dir;
  StderrToFile redirect(dir.path() / "stderr.txt");
  std::atomic<bool> done{false};
  std::thread noise([&] {
    while (!done) write_line("error   : Multiple definition of 'dev_add' in 'x.ptx', first defined in 'y.ptx'");
  });
  int linked = 0;
  for (int i = 0; i < 20; ++i) {
    try {
      (void)link_files(watched_clean_link);
      ++linked;
    } catch (const Error& error) {
      ADD_FAILURE() << "a valid link failed: " << error.what();
    }
  }
  done = true;
  noise.join();
  EXPECT_EQ(linked, 20);
}

TEST(HostileStderr, WhatOtherThreadsWriteIsNeitherLostNorClaimed) {
  test::TempDir dir;
  constexpr int lines = 3000;
  {
    StderrToFile redirect(dir.path() / "stderr.txt");
    std::thread writer([&] {
      for (int i = 0; i < lines; ++i) write_line("info    : line " + std::to_string(i) + " of another thread");
    });
    for (int i = 0; i < 10; ++i) (void)link_files(watched_clean_link);
    writer.join();
  }
  const std::string written = read_bytes(dir.path() / "stderr.txt");
  int found = 0;
  for (int i = 0; i < lines; ++i) found += contains(written, "info    : line " + std::to_string(i) + " of") ? 1 : 0;
  EXPECT_EQ(found, lines);
}

TEST(HostileStderr, ConcurrentLinksClaimOnlyTheirOwnErrors) {
  // In a process of its own: a duplicate nvJitLink may die on (support/fresh_process.hpp).
  test::in_fresh_process([&] {
    test::TempDir dir;
    StderrToFile redirect(dir.path() / "stderr.txt");
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    // Enough sessions that tags 1 and 1x overlap in time (a tag once was a prefix of another).
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 5; ++i) {
          const bool duplicate = (t + i) % 2 == 0;
          try {
            (void)link_files(duplicate ? std::vector<std::string>{"dev_add.o", "dev_add_ptx.fatbin"}
                                       : watched_clean_link);
            if (duplicate) ++wrong;
          } catch (const LinkError&) {
            if (!duplicate) ++wrong;
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(wrong.load(), 0);
  });
}

// nvJitLink 13.0 answers NVJITLINK_SUCCESS when LTO-IR and another format define the same
// symbol, and writes the error into its error log: the link fails, naming the symbol.
class DuplicateNextToLtoIr : public ::testing::TestWithParam<std::string> {};

TEST_P(DuplicateNextToLtoIr, FailsTheLinkThatNvJitLinkCallsASuccess) {
  // In a process of its own: a duplicate nvJitLink may die on (support/fresh_process.hpp).
  test::in_fresh_process([&] {
    try {
      (void)link_files({"mixed_kernel.ptx", "dev_mul.ptx", "dev_add.ltoir", GetParam()}, true);
      ADD_FAILURE() << "linked although dev_add is defined in dev_add.ltoir and " << GetParam();
    } catch (const LinkError& error) {
      EXPECT_EQ(error.duplicate_symbols(), std::vector<std::string>{"dev_add"}) << error.what();
      EXPECT_TRUE(contains(error.log(), "Multiple definition of 'dev_add'")) << error.log();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Formats, DuplicateNextToLtoIr,
                         ::testing::Values("dev_add.ptx", "dev_add.cubin", "dev_add_sass.fatbin"),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           return test_identifier(file.param);
                         });

// Where stderr is heard: the identity of fd 2 inside nvJitLinkComplete, against the file it
// is outside the link. Every nvJitLink link hears it: nvJitLink writes "Prototype doesn't
// match" only there for PTX-only links too (an earlier narrowing to fatbin, object and
// archive inputs returned cubins that faulted).
class StderrDuringComplete {
 public:
  StderrDuringComplete() { detail::set_nvjitlink_step_hook(&StderrDuringComplete::hook, this); }
  ~StderrDuringComplete() { detail::set_nvjitlink_step_hook(nullptr, nullptr); }
  StderrDuringComplete(const StderrDuringComplete&) = delete;
  StderrDuringComplete& operator=(const StderrDuringComplete&) = delete;
  bool seen() const { return seen_; }
  bool redirected() const { return redirected_; }
  bool tapped() const { return tapped_; }

  static std::pair<dev_t, ino_t> identity() {
    struct stat info {};
    if (::fstat(STDERR_FILENO, &info) != 0) return {};
    return {info.st_dev, info.st_ino};
  }

 private:
  static void hook(const char* call, const void*, std::size_t, void* context) {
    auto* self = static_cast<StderrDuringComplete*>(context);
    if (std::string(call) != "nvJitLinkComplete") return;
    self->seen_ = true;
    self->redirected_ = identity() != self->outside_;
    self->tapped_ = detail::stderr_tap_installed();
  }
  std::pair<dev_t, ino_t> outside_ = identity();
  bool seen_ = false;
  bool redirected_ = false;
  bool tapped_ = false;
};

// Every format mix, each link starting with the tap removed (as in a process's first link)
// or still installed from the link before.
TEST(NvJitLinkStderr, EveryLinkIsHeard) {
  const std::vector<std::pair<std::vector<std::string>, bool>> links{
      {{"scale_kernel.ptx"}, false},
      {{"scale_kernel.cubin"}, false},
      {{"mixed_kernel.ptx", "dev_mul.ptx", "dev_add.ptx"}, false},
      {{"mixed_kernel.ptx", "dev_mul.ptx", "dev_add.cubin"}, false},
      {{"mixed_kernel.ptx", "dev_mul.o", "dev_add.ptx"}, false},
      {{"mixed_kernel.ptx", "dev_mul.ptx", "dev_add_ptx.fatbin"}, false},
      {{"mixed_kernel.ptx", "dev_mul.a", "dev_add.ptx"}, false},
      {{"mixed_kernel.ptx", "dev_mul.ptx", "dev_add.ltoir"}, true},
      {{"mixed_kernel.ltoir", "dev_mul.ltoir", "dev_add_ltoir.fatbin"}, true},
  };
  for (const bool removed_first : {true, false}) {
    for (const auto& [fixtures, lto] : links) {
      if (removed_first) detail::remove_idle_stderr_tap();
      StderrDuringComplete probe;
      (void)link_files(fixtures, lto);
      ASSERT_TRUE(probe.seen()) << fixtures.front();
      const std::string what = "linking " + std::to_string(fixtures.size()) + " inputs, the last " +
                               fixtures.back() + (removed_first ? ", tap removed first" : "");
      EXPECT_TRUE(probe.tapped()) << what;
      // Independent of the tap's own answer: fd 2 is another file than before the link.
      if (removed_first) {
        EXPECT_TRUE(probe.redirected()) << what;
      }
    }
  }
}

// The tap stays between links (so that a warm link does not pay for the pipe), and gives
// fd 2 back, unchanged, once idle.
TEST(NvJitLinkStderr, TheTapStaysBetweenLinksAndGivesStderrBackWhenIdle) {
  detail::remove_idle_stderr_tap();
  const auto before = StderrDuringComplete::identity();
  EXPECT_FALSE(detail::stderr_tap_installed());
  (void)link_files({"scale_kernel.ptx"});
  EXPECT_TRUE(detail::stderr_tap_installed());
  detail::remove_idle_stderr_tap();
  EXPECT_FALSE(detail::stderr_tap_installed());
  EXPECT_EQ(StderrDuringComplete::identity(), before);
}

// Someone else moves fd 2 while the tap is installed (a test capturing stderr, a logging
// library): the next link is still heard, what is written meanwhile reaches the file
// that person chose, and removing the tap leaves their fd 2 alone.
TEST(HostileStderr, StderrMovedWhileTheTapIsInstalledIsRespected) {
  // In a process of its own: the link below is a binary mismatch (support/fresh_process.hpp).
  test::in_fresh_process([] {
    (void)link_files({"scale_kernel.ptx"});
    ASSERT_TRUE(detail::stderr_tap_installed());
    test::TempDir dir;
    {
      StderrToFile redirect(dir.path() / "stderr.txt");
      const auto moved = StderrDuringComplete::identity();
      write_line("info    : before the link");
      try {
        (void)link_files({"mixed_kernel.ptx", "dev_mul.ptx", "dev_add_wide.cubin"});
        ADD_FAILURE() << "linked although dev_add's prototypes differ";
      } catch (const LinkError& error) {
        EXPECT_TRUE(contains(error.what(), "'dev_add'")) << error.what();
      }
      write_line("info    : after the link");
      detail::remove_idle_stderr_tap();
      EXPECT_EQ(StderrDuringComplete::identity(), moved) << "removing the tap took fd 2 from its owner";
    }
    const std::string written = read_bytes(dir.path() / "stderr.txt");
    EXPECT_TRUE(contains(written, "before the link")) << written;
    EXPECT_TRUE(contains(written, "after the link")) << written;
    EXPECT_FALSE(contains(written, "Prototype doesn't match")) << "the claimed diagnostic was printed";
  });
}

// A definition whose prototype differs from the declaration, in every format: nvJitLink
// 13.0 links it with NVJITLINK_SUCCESS and writes "Prototype doesn't match" only to stderr
// (to the error log under LTO). The link fails, naming the symbol and the declaring input.
struct MismatchCase {
  std::string definition;
  bool lto = false;
};

void PrintTo(const MismatchCase& mismatch, std::ostream* out) { *out << mismatch.definition; }

class PrototypeMismatchInEveryFormat : public ::testing::TestWithParam<MismatchCase> {};

// In a process of its own (support/fresh_process.hpp): after an LTO link, nvJitLink may die
// on a binary input's mismatch (the vendor difference below).
TEST_P(PrototypeMismatchInEveryFormat, FailsTheLinkNamingTheSymbolAndBothInputs) {
  const MismatchCase mismatch = GetParam();
  test::in_fresh_process([&] {
    try {
      (void)link_files({"mixed_kernel.ptx", "dev_mul.ptx", mismatch.definition}, mismatch.lto);
      ADD_FAILURE() << "linked although dev_add is declared (int, int) -> int and defined "
                       "(long long, int) -> long long in "
                    << mismatch.definition;
    } catch (const LinkError& error) {
      EXPECT_TRUE(contains(error.what(), "'dev_add'")) << error.what();
      EXPECT_TRUE(contains(error.what(), "mixed_kernel.ptx")) << error.what();
      EXPECT_TRUE(contains(error.what(), "prototype")) << error.what();
      EXPECT_FALSE(contains(error.what(), "#cujit-link-")) << "the session tag leaked: " << error.what();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    Formats, PrototypeMismatchInEveryFormat,
    ::testing::Values(MismatchCase{"dev_add_wide.ptx"}, MismatchCase{"dev_add_wide.cubin"},
                      MismatchCase{"dev_add_wide_sass.fatbin"}, MismatchCase{"dev_add_wide_ptx.fatbin"},
                      MismatchCase{"dev_add_wide.o"}, MismatchCase{"dev_add_wide.a"},
                      MismatchCase{"dev_add_wide.ltoir", true}, MismatchCase{"dev_add_wide_ltoir.fatbin", true}),
    [](const ::testing::TestParamInfo<MismatchCase>& param) {
      return test_identifier(param.param.definition);
    });

// The session alone, with cujit's own checks out of the way: two PTX inputs whose
// prototypes differ fail a step (nvJitLink finds it while adding the second), from what
// nvJitLink wrote to stderr only. In a process of its own (support/fresh_process.hpp): after
// an LTO link nvJitLink may die here instead of reporting (the vendor difference below), and
// this test is about what a session hears.
TEST(NvJitLinkStderr, APtxOnlyPrototypeMismatchFailsTheSessionItself) {
  test::in_fresh_process([] {
    auto session = detail::open_nvjitlink_session(Arch::parse("sm_90"), false, {});
    std::vector<std::string> failed;
    for (const char* name : {"mixed_kernel.ptx", "dev_mul.ptx", "dev_add_wide.ptx"}) {
      const LinkableCode code = LinkableCode::from_path(fixture_path(name));
      if (!session->add(code).ok) failed.emplace_back(name);
    }
    if (failed.empty() && !session->complete().ok) failed.emplace_back("complete");
    EXPECT_FALSE(failed.empty()) << "nvJitLink's stderr was not heard";
    EXPECT_TRUE(contains(session->error_log(), "Prototype doesn't match for 'dev_add'")) << session->error_log();
  });
}

// A named vendor difference (docs/linking.md): once an LTO link has run in the process,
// nvJitLink 13.0 may die with SIGSEGV inside nvJitLinkAddData where it would report a
// prototype mismatch (or a duplicate definition) of a cubin, fatbin, object or archive,
// instead of printing it; the driver linker refuses the link. Seen on the Debian CI machine,
// not on the Ubuntu H100 machine with the same nvJitLink (13.0.88): the crash depends on the
// process, so only the outcome cujit controls is required. cujit cannot read prototypes
// inside those formats to stop it first (it does for PTX). Run in a child: either the link is
// refused with a LinkError, or the process dies; never a cubin, never another error.
TEST(VendorDifference, NvJitLinkMayDieOnABinaryPrototypeMismatchOnceAnLtoLinkRan) {
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      (void)link_files({"scale_kernel.ltoir"}, true);
      (void)link_files({"mixed_kernel.ptx", "dev_mul.ptx", "dev_add_wide.cubin"});
      ::_exit(3);  // linked: would be a lie
    } catch (const LinkError&) {
      ::_exit(0);  // refused: nvJitLink survived
    } catch (...) {
      ::_exit(4);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << "a cubin was returned for a mismatch";
  ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 4) << "the link threw something else";
  // Killed by SIGSEGV; under a sanitizer, its SEGV handler reports and exits non-zero.
  const bool died = (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
                    (WIFEXITED(status) && WEXITSTATUS(status) != 0);
  std::printf("nvJitLink %s %s\n", nvjitlink_version().c_str(),
              died ? "died on the mismatch (the vendor difference)" : "refused the mismatch and survived");
}

// The same symbol defined in two inputs of any two formats (readable or not): never a cubin.
class DuplicateAcrossFormats : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(DuplicateAcrossFormats, FailsTheLinkNamingTheSymbol) {
  // In a process of its own: a duplicate nvJitLink may die on (support/fresh_process.hpp).
  test::in_fresh_process([&] {
    const auto& [first, second] = GetParam();
    try {
      (void)link_files({"mixed_kernel.ptx", "dev_mul.ptx", first, second});
      ADD_FAILURE() << "linked although dev_add is defined in " << first << " and " << second;
    } catch (const LinkError& error) {
      EXPECT_EQ(error.duplicate_symbols(), std::vector<std::string>{"dev_add"}) << error.what();
    }
  });
}

std::vector<std::pair<std::string, std::string>> duplicate_pairs() {
  const std::vector<std::string> formats{"dev_add.ptx", "dev_add.cubin", "dev_add_sass.fatbin",
                                         "dev_add_ptx.fatbin", "dev_add.o", "dev_add.a"};
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i < formats.size(); ++i) {
    for (std::size_t j = i + 1; j < formats.size(); ++j) pairs.emplace_back(formats[i], formats[j]);
  }
  return pairs;
}

INSTANTIATE_TEST_SUITE_P(Formats, DuplicateAcrossFormats, ::testing::ValuesIn(duplicate_pairs()),
                         [](const ::testing::TestParamInfo<std::pair<std::string, std::string>>& param) {
                           return test_identifier(param.param.first + "_and_" + param.param.second);
                         });

// ---- links run concurrently, each inside its own capture -------------------------------

// Holds the links of one thread inside their nvJitLinkComplete step (their stderr capture
// active) until released, and counts the steps in flight. Installed for a test's lifetime.
class HeldSteps {
 public:
  explicit HeldSteps(std::thread::id held) : held_(held) {
    detail::set_nvjitlink_step_hook(&HeldSteps::hook, this);
  }
  ~HeldSteps() { detail::set_nvjitlink_step_hook(nullptr, nullptr); }
  HeldSteps(const HeldSteps&) = delete;
  HeldSteps& operator=(const HeldSteps&) = delete;

  // Bounded waits: a link that waited for the held one would time out here, not hang.
  bool wait_until_held() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(60), [&] { return inside_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  bool release_timed_out() const { return timed_out_; }
  int most_steps_in_flight() const { return most_; }

 private:
  static void hook(const char* call, const void*, std::size_t, void* context) {
    auto* self = static_cast<HeldSteps*>(context);
    const int now = ++self->in_flight_;
    int most = self->most_.load();
    while (now > most && !self->most_.compare_exchange_weak(most, now)) {
    }
    if (std::string(call) == "nvJitLinkComplete" && std::this_thread::get_id() == self->held_) {
      std::unique_lock<std::mutex> lock(self->mutex_);
      self->inside_ = true;
      self->changed_.notify_all();
      if (!self->changed_.wait_for(lock, std::chrono::seconds(60), [&] { return self->released_; })) {
        self->timed_out_ = true;
      }
    }
    --self->in_flight_;
  }

  std::thread::id held_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool inside_ = false;
  bool released_ = false;
  std::atomic<bool> timed_out_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<int> most_{0};
};

// A clean link that watches stderr (watched_clean_link) on a thread of its own, held inside
// its nvJitLinkComplete step until finish(), which returns "linked", "empty" or the error.
class HeldLink {
 public:
  HeldLink() {
    ready_.lock();
    thread_ = std::thread([this] {
      ready_.lock();  // the hook is installed for this thread
      ready_.unlock();
      try {
        result_ = link_files(watched_clean_link).code.bytes().empty() ? "empty" : "linked";
      } catch (const Error& error) {
        result_ = error.what();
      }
    });
    steps_.emplace(thread_.get_id());
    ready_.unlock();
  }
  ~HeldLink() {
    if (thread_.joinable()) (void)finish();
  }
  HeldLink(const HeldLink&) = delete;
  HeldLink& operator=(const HeldLink&) = delete;

  HeldSteps& steps() { return *steps_; }
  std::string finish() {
    steps_->release();
    thread_.join();
    return result_;
  }

 private:
  std::mutex ready_;
  std::optional<HeldSteps> steps_;
  std::thread thread_;
  std::string result_;
};

// What makes concurrent links fast: no lock is held through a link (nor through its stderr
// capture), so another thread's link runs to the end while this one is inside nvJitLink.
TEST(LinkConcurrency, AnotherThreadsLinkCompletesWhileOneIsInsideNvJitLink) {
  HeldLink held;
  ASSERT_TRUE(held.steps().wait_until_held()) << "the held link never reached nvJitLinkComplete";
  // Held thread A is inside its capture and nvJitLinkComplete: this link must not wait.
  bool linked = false;
  try {
    linked = !link_files({"dev_mul.ptx", "scale_kernel.ptx"}).code.bytes().empty();
  } catch (const Error& error) {
    ADD_FAILURE() << error.what();
  }
  EXPECT_EQ(held.finish(), "linked");
  EXPECT_TRUE(linked);
  EXPECT_FALSE(held.steps().release_timed_out()) << "the second link waited for the held one";
  EXPECT_GE(held.steps().most_steps_in_flight(), 2) << "two links' steps never overlapped";
}

// While a clean link is held inside its capture, another link's stderr-only errors are
// claimed by that other link alone, and neither is printed.
TEST(HostileStderr, ALinkHeldInsideItsCaptureClaimsNoneOfAnotherLinksErrors) {
  // In a process of its own: a duplicate nvJitLink may die on (support/fresh_process.hpp).
  test::in_fresh_process([&] {
    test::TempDir dir;
    StderrToFile redirect(dir.path() / "stderr.txt");
    HeldLink held;
    ASSERT_TRUE(held.steps().wait_until_held());
    (void)log_of_refused_duplicate();
    write_line("error   : a line of the test's own, while a link is held");
    EXPECT_EQ(held.finish(), "linked");
    const std::string written = read_bytes(dir.path() / "stderr.txt");
    EXPECT_FALSE(contains(written, "Multiple definition")) << "a claimed diagnostic was printed";
    EXPECT_TRUE(contains(written, "a line of the test's own, while a link is held")) << written;
  });
}

// nvJitLink reads each input from the LinkableCode's own buffer: nothing is copied on the way.
TEST(LinkInputs, NvJitLinkIsHandedEachInputsOwnBytes) {
  struct Seen {
    std::vector<std::pair<const void*, std::size_t>> data;
  } seen;
  detail::set_nvjitlink_step_hook(
      [](const char* call, const void* data, std::size_t size, void* context) {
        if (std::string(call) == "nvJitLinkAddData") static_cast<Seen*>(context)->data.emplace_back(data, size);
      },
      &seen);
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add_file(fixture_path("scale_kernel.ptx")).add_file(fixture_path("dev_add.cubin"));
  const LinkResult result = linker.link();
  detail::set_nvjitlink_step_hook(nullptr, nullptr);
  ASSERT_EQ(seen.data.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(seen.data[i].first, static_cast<const void*>(linker.inputs()[i].bytes().data())) << i;
    EXPECT_EQ(seen.data[i].second, linker.inputs()[i].bytes().size()) << i;
  }
  EXPECT_FALSE(result.code.bytes().empty());
}

// ---- file-level: both backends, CPU --------------------------------------------------

class BadFile : public ::testing::TestWithParam<LinkerBackend> {
 protected:
  // add_file must throw `kind` with every fragment in its message.
  void expect_rejected(const std::filesystem::path& path, ErrorKind kind,
                       std::initializer_list<std::string> fragments) {
    Linker linker(test::link_options(GetParam(), false));
    CUJIT_EXPECT_ERROR(linker.add_file(path), kind, error,
                       EXPECT_TRUE(contains(error.what(), path.string())) << error.what();
                       for (const std::string& fragment : fragments) {
                         EXPECT_TRUE(contains(error.what(), fragment))
                             << "missing '" << fragment << "' in: " << error.what();
                       });
    EXPECT_TRUE(linker.inputs().empty());
  }
  test::TempDir dir;
};

TEST_P(BadFile, EmptyFile) {
  expect_rejected(dir.write("empty.ptx", ""), ErrorKind::format, {"is empty"});
}

TEST_P(BadFile, TruncatedFileOfEachBinaryFormat) {
  for (const char* name : {"scale_kernel.cubin", "scale_kernel_sass.fatbin",
                           "scale_kernel_ltoir.fatbin", "scale_kernel.o", "scale_kernel.a"}) {
    const std::string bytes = read_bytes(fixture_path(name));
    const auto cut = dir.write(std::string("cut_") + name, bytes.substr(0, bytes.size() / 2));
    expect_rejected(cut, ErrorKind::format, {"truncated"});
  }
  const auto tiny_ltoir = dir.write("tiny.ltoir", read_bytes(fixture_path("scale_kernel.ltoir")).substr(0, 5));
  expect_rejected(tiny_ltoir, ErrorKind::format, {"truncated"});
}

TEST_P(BadFile, WrongMagic) {
  std::string bytes = read_bytes(fixture_path("scale_kernel_sass.fatbin"));
  bytes[0] = 'X';
  bytes[1] = '\0';
  expect_rejected(dir.write("wrong_magic.fatbin", bytes), ErrorKind::format,
                  {"given as fatbin", "not a known format"});
}

TEST_P(BadFile, ExtensionAndContentDisagree) {
  expect_rejected(dir.write("holds_ptx.cubin", read_bytes(fixture_path("scale_kernel.ptx"))),
                  ErrorKind::format, {"given as cubin", "content is ptx"});
}

TEST_P(BadFile, NoExtension) {
  expect_rejected(dir.write("kernel", read_bytes(fixture_path("scale_kernel.ptx"))),
                  ErrorKind::format, {"has no extension", "'.ptx'"});
}

TEST_P(BadFile, UnknownExtension) {
  expect_rejected(dir.write("header.cuh", "__device__ int f();\n"), ErrorKind::format,
                  {"unknown extension '.cuh'"});
}

TEST_P(BadFile, MissingPath) {
  expect_rejected(dir.path() / "does_not_exist.ptx", ErrorKind::io, {"no such file"});
}

TEST_P(BadFile, Directory) {
  std::filesystem::create_directory(dir.path() / "a_directory.ptx");
  expect_rejected(dir.path() / "a_directory.ptx", ErrorKind::io, {"is a directory"});
}

TEST_P(BadFile, NvrtcCompileErrorCarriesTheLog) {
  const auto path = dir.write("broken.cu", "extern \"C\" __global__ void k() { nope(); }\n");
  Linker linker(test::link_options(GetParam(), false));
  CUJIT_EXPECT_ERROR(linker.add_file(path), ErrorKind::compile, error,
                     EXPECT_TRUE(contains(error.what(), "broken.cu")) << error.what();
                     EXPECT_TRUE(contains(error.log(), "nope")) << error.log(););
}

TEST_P(BadFile, LtoIrIntoTheDriverOrWithoutLto) {
  Linker linker(test::link_options(GetParam(), false));
  CUJIT_EXPECT_ERROR(linker.add_file(fixture_path("scale_kernel.ltoir")), ErrorKind::unsupported,
                     error, EXPECT_TRUE(contains(error.what(), "scale_kernel.ltoir"));
                     EXPECT_TRUE(contains(error.what(), GetParam() == LinkerBackend::driver
                                                            ? "driver linker"
                                                            : "lto = true"))
                     << error.what(););
}

INSTANTIATE_TEST_SUITE_P(Backends, BadFile,
                         ::testing::Values(LinkerBackend::nvjitlink, LinkerBackend::driver),
                         backend_name);

// ---- link-level: nvJitLink on CPU, the driver linker on a GPU -----------------------

// The LinkError a link that must fail throws; a failure (and an empty error) if it links.
LinkError link_error(const Linker& linker, const std::string& why_it_must_fail) {
  try {
    (void)linker.link();
  } catch (const LinkError& error) {
    return error;
  }
  ADD_FAILURE() << "linked " << why_it_must_fail;
  return LinkError("", "", "", {}, {});
}

class BadLink : public ::testing::TestWithParam<LinkerBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == LinkerBackend::driver) CUJIT_REQUIRE_DEVICE();
  }
  Linker linker(const std::string& arch = "sm_90") const {
    return Linker(test::link_options(GetParam(), false, arch));
  }
};

TEST_P(BadLink, PtxSyntaxErrorCarriesTheLog) {
  Linker l = linker();
  l.add_data(Format::ptx,
             ".version 9.0\n.target sm_90\n.address_size 64\n"
             ".visible .entry broken()\n{\n  frobnicate.u32 %r1;\n  ret;\n}\n",
             "broken.ptx");
  CUJIT_EXPECT_ERROR(l.link(), ErrorKind::link, error,
                     EXPECT_TRUE(contains(error.what(), "broken.ptx")) << error.what();
                     EXPECT_FALSE(error.log().empty()) << error.what(););
}

TEST_P(BadLink, UnresolvedExternNamesTheSymbol) {
  Linker l = linker();
  l.add_file(fixture_path("mixed_kernel.ptx"));
  l.add_file(fixture_path("dev_add.ptx"));
  const LinkError error = link_error(l, "without a definition of dev_mul");
  EXPECT_TRUE(contains(error.what(), "dev_mul")) << error.what();
  EXPECT_TRUE(contains(error.what(), "mixed_kernel.ptx")) << error.what();
  EXPECT_EQ(error.unresolved_symbols(), std::vector<std::string>{"dev_mul"}) << error.what();
}

TEST_P(BadLink, SameSymbolDefinedInTwoInputs) {
  Linker l = linker();
  l.add_file(fixture_path("mixed_kernel.ptx"));
  l.add_file(fixture_path("dev_mul.ptx"));
  l.add_file(fixture_path("dev_add.ptx"));
  l.add_file(fixture_path("dev_add.cubin"));
  const LinkError error = link_error(l, "with dev_add defined twice");
  EXPECT_TRUE(contains(error.what(), "dev_add")) << error.what();
  EXPECT_TRUE(contains(error.what(), "dev_add.cubin")) << error.what();
}

TEST_P(BadLink, SameSymbolAfterAnLtoLinkInTheSameProcess) {
  // nvJitLink 13.0 crashes in its multiple-definition path once an LTO link has run in the
  // process; cujit finds the duplicate before the backend sees it.
  Linker lto(test::link_options(LinkerBackend::nvjitlink, true));
  lto.add_file(fixture_path("scale_kernel.ltoir"));
  (void)lto.link();
  Linker l = linker();
  l.add_file(fixture_path("dev_add.ptx"));
  l.add_file(fixture_path("dev_add.cubin"));
  const LinkError error = link_error(l, "with dev_add defined twice");
  EXPECT_EQ(error.duplicate_symbols(), std::vector<std::string>{"dev_add"}) << error.what();
  EXPECT_TRUE(contains(error.what(), "dev_add.ptx")) << error.what();
  EXPECT_TRUE(contains(error.what(), "dev_add.cubin")) << error.what();
}

TEST_P(BadLink, CubinForAnotherArchitecture) {
  Linker l = linker();
  // Refused when added: the ELF header says which SASS it holds.
  CUJIT_EXPECT_ERROR(l.add_file(fixture_path("scale_kernel_sm80.cubin")), ErrorKind::link, error,
                     EXPECT_TRUE(contains(error.what(), "scale_kernel_sm80.cubin"))
                         << error.what();
                     EXPECT_TRUE(contains(error.what(), "SASS for sm_80")) << error.what(););
}

TEST_P(BadLink, ArchSpecificPtxForThePlainArch) {
  Linker l = linker();
  // Refused when added, with nvJitLink's wording, by both backends alike.
  CUJIT_EXPECT_ERROR(
      l.add_file(fixture_path("scale_kernel_sm90a.ptx")), ErrorKind::link, error,
      EXPECT_TRUE(contains(error.what(), "scale_kernel_sm90a.ptx")) << error.what();
      EXPECT_TRUE(contains(error.what(), "PTX with .target 'sm_90a' cannot be compiled for "
                                         "architecture 'sm_90'"))
          << error.what(););
}

TEST_P(BadLink, ArchSpecificPtxLinksForItsArch) {
  Linker l = linker("sm_90a");
  l.add_file(fixture_path("scale_kernel_sm90a.ptx"));
  EXPECT_EQ(detect_format(l.link().code.bytes()), Format::cubin);
}

INSTANTIATE_TEST_SUITE_P(Cpu, BadLink, ::testing::Values(LinkerBackend::nvjitlink), backend_name);
INSTANTIATE_TEST_SUITE_P(Gpu, BadLink, ::testing::Values(LinkerBackend::driver), backend_name);

}  // namespace
}  // namespace cujit
