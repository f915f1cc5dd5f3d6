// Hostile input to the cujit command (issue 31): lines of any length read without recursion
// (no std::regex: a 10 MB skip message or log line), files that are not regular files (a
// FIFO, also one swapped in while a file is checked; a FIFO named as a vendor library)
// refused without hanging, untrusted text printed escaped (a scenario name holding a forged
// "verdict: as expected" line and terminal escapes), --out holding symbolic links refused,
// and the command's smaller conventions (read-only `cache stats` creates nothing; GTEST_*
// variables warned about; `bench --quick --full` refused).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "cli_test_support.hpp"
#include "gtest_json.hpp"
#include "input_file.hpp"
#include "junit.hpp"
#include "output.hpp"
#include "runner/printable_text.hpp"
#include "spawn.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::run_cujit;
using test::cli::Spec;

// A spec with these arguments and the defaults for the rest.
Spec with_args(std::vector<std::string> args) {
  Spec spec;
  spec.args = std::move(args);
  return spec;
}

constexpr std::size_t ten_megabytes = std::size_t{10} << 20;

// While alive, opens `fifo` for writing and closes it again every `every` once the command
// under test has had that long, which frees a reader blocked on it: a test that would hang
// fails instead, and `needed` says whether it had to.
class FifoWatchdog {
 public:
  FifoWatchdog(fs::path fifo, std::chrono::seconds every) : fifo_(std::move(fifo)) {
    thread_ = std::thread([this, every] {
      auto next = std::chrono::steady_clock::now() + every;
      while (!stop_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (std::chrono::steady_clock::now() < next) continue;
        // O_RDWR never blocks on a FIFO (Linux) and counts as a writer.
        const int fd = ::open(fifo_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) ::close(fd);
        needed_ = true;
        next = std::chrono::steady_clock::now() + every;
      }
    });
  }
  ~FifoWatchdog() {
    stop_ = true;
    thread_.join();
  }
  bool needed() const { return needed_; }

 private:
  fs::path fifo_;
  std::atomic<bool> stop_{false}, needed_{false};
  std::thread thread_;
};

fs::path make_fifo(const fs::path& path) {
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

// ---- no recursion over long lines ---------------------------------------------------------

// The scan that replaced std::regex R"(^\S+:\d+\s+)" answers as the regex did, over generated
// messages short enough for the regex (each class of character at each place).
TEST(HostileCliLongLines, SourceLocationScanAgreesWithTheRegexItReplaced) {
  const std::regex location(R"(^\S+:\d+\s+)");
  const std::string alphabet = "a:1 \t\n9.x/:";
  std::mt19937 random(33);
  for (int round = 0; round < 20000; ++round) {
    std::string message;
    const std::size_t length = random() % 14;
    for (std::size_t k = 0; k < length; ++k) message += alphabet[random() % alphabet.size()];
    EXPECT_EQ(cli::without_source_location(message), std::regex_replace(message, location, "")) << message;
  }
}

TEST(HostileCliLongLines, TenMegabyteMessagesAndLogLinesAreRead) {
  const std::string long_token(ten_megabytes, 'x');
  EXPECT_EQ(cli::without_source_location("test.cpp:42 " + long_token).size(), long_token.size());
  EXPECT_EQ(cli::without_source_location(long_token + " reason").size(), long_token.size() + 7);
  EXPECT_EQ(cli::without_source_location("a:" + std::string(ten_megabytes, '1') + " why"), "why");
  const std::string log = "[ RUN      ] S.T\n" + long_token + "\ntest.cpp:7: Skipped\nthe reason\n" + long_token +
                          "\n[  SKIPPED ] S.T (0 ms)\n";
  const std::string reason = cli::skip_reason_from_log(log, "S", "T");
  EXPECT_EQ(reason.size(), std::string("the reason ").size() + long_token.size());
  EXPECT_EQ(reason.rfind("the reason", 0), 0u);
}

// End to end: a shard whose JUnit XML holds a 10 MB skip message merges (it crashed the
// recursive regex), and the message keeps its text without its location.
TEST(HostileCliLongLines, MergeReadsATenMegabyteSkipMessage) {
  TempDir dir;
  const fs::path build = test::cli::make_fake_build(dir.path(), {"format"});
  const fs::path out = dir.path() / "s0";
  ASSERT_EQ(test::cli::conformance_run(build, out, "0/1", {"format"}).exit_code, 0);
  const fs::path xml = out / "junit" / "format.xml";
  std::string text = test::cli::read_all(xml);
  const std::size_t reason = text.find("fake reason");
  ASSERT_NE(reason, std::string::npos) << text;
  text.replace(reason, std::string("fake reason").size(), "file.cpp:1 " + std::string(ten_megabytes, 'r'));
  test::cli::write_file(xml, text);
  Spec spec = with_args({"merge", "--out", (dir.path() / "merged").string(), out.string(), "--json"});
  const auto run = run_cujit(spec);
  EXPECT_EQ(run.signal, 0) << "merge died";
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const std::string merged = test::cli::read_all(dir.path() / "merged" / "junit.xml");
  EXPECT_NE(merged.find("message=\"" + std::string(1000, 'r')), std::string::npos);
}

// ---- files that are not regular files -------------------------------------------------------

TEST(HostileCliInputFiles, FifoIsATypedRefusalNotAHang) {
  TempDir dir;
  const fs::path fifo = make_fifo(dir.path() / "fifo");
  const FifoWatchdog watchdog(fifo, std::chrono::seconds(10));
  try {
    (void)cli::read_input_file(fifo);
    ADD_FAILURE() << "a FIFO was read as an input file";
  } catch (const cli::InputFileError& error) {
    EXPECT_EQ(error.problem(), cli::InputProblem::not_regular);
    EXPECT_NE(std::string(error.what()).find("FIFO"), std::string::npos) << error.what();
    EXPECT_EQ(error.path(), fifo);
  }
  EXPECT_FALSE(watchdog.needed()) << "reading the FIFO blocked";
  for (const char* device : {"/dev/null", "/dev/zero"}) {
    try {
      (void)cli::read_input_file(device);
      ADD_FAILURE() << device << " was read as an input file";
    } catch (const cli::InputFileError& error) {
      EXPECT_EQ(error.problem(), cli::InputProblem::not_regular) << error.what();
    }
  }
  EXPECT_THROW((void)cli::read_input_file(dir.path()), cli::InputFileError);
  EXPECT_THROW((void)cli::read_input_file(dir.path() / "missing"), cli::InputFileError);
}

// A FIFO swapped in for a regular file again and again while the file is read: each read
// gets the file's bytes or a refusal, and none blocks (the check is made on the descriptor
// read from, never on the path before opening it).
TEST(HostileCliInputFiles, FifoSwappedInWhileReadingNeverBlocks) {
  TempDir dir;
  const fs::path regular = dir.path() / "regular", fifo = make_fifo(dir.path() / "fifo");
  const fs::path target = dir.path() / "target";
  test::cli::write_file(regular, "{\"bytes\": 1}");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    for (int k = 0; !stop; ++k) {
      const fs::path staged = dir.path() / ("staged" + std::to_string(k % 2));
      std::error_code ignored;
      fs::remove(staged, ignored);
      // A failed link leaves nothing to rename; the race goes on with the next swap.
      if (::link((k % 2 == 0 ? regular : fifo).c_str(), staged.c_str()) != 0) continue;
      ::rename(staged.c_str(), target.c_str());
    }
  });
  std::size_t read = 0, refused = 0;
  {
    const FifoWatchdog watchdog(fifo, std::chrono::seconds(5));
    for (int k = 0; k < 2000; ++k) {
      std::string why;
      const auto bytes = cli::read_input_file(target, why);
      if (bytes) {
        EXPECT_EQ(*bytes, "{\"bytes\": 1}");
        ++read;
      } else if (why != "does not exist") {
        EXPECT_EQ(why, "is a FIFO, not a regular file");
        ++refused;
      }
    }
    stop = true;
    swapper.join();
    EXPECT_FALSE(watchdog.needed()) << "a read blocked on the FIFO";
  }
  EXPECT_GT(read + refused, 0u);
}

TEST(HostileCliInputFiles, MergeOfAShardRecordThatIsAFifoFailsWithoutHanging) {
  TempDir dir;
  fs::create_directories(dir.path() / "s0");
  const fs::path fifo = make_fifo(dir.path() / "s0" / "shard.json");
  const FifoWatchdog watchdog(fifo, std::chrono::seconds(20));
  Spec spec = with_args({"merge", "--out", (dir.path() / "merged").string(), (dir.path() / "s0").string()});
  const auto run = run_cujit(spec);
  EXPECT_FALSE(watchdog.needed()) << "merge blocked on the FIFO";
  EXPECT_EQ(run.exit_code, 1) << run.all();
  EXPECT_NE(run.out.find("FIFO"), std::string::npos) << run.all();
}

// CUJIT_NVRTC_LIBRARY / CUJIT_NVJITLINK_LIBRARY naming a FIFO: libcujit refuses to load it
// (a typed error naming it) instead of waiting in dlopen for a writer.
TEST(HostileCliInputFiles, VendorLibraryThatIsAFifoIsRefusedWithoutHanging) {
  TempDir dir;
  const fs::path fifo = make_fifo(dir.path() / "libnvrtc.so");
  for (const char* variable : {"CUJIT_NVRTC_LIBRARY", "CUJIT_NVJITLINK_LIBRARY"}) {
    SCOPED_TRACE(variable);
    const FifoWatchdog watchdog(fifo, std::chrono::seconds(20));
    Spec spec = with_args({"info", "--json"});
    spec.env = {{variable, fifo.string()}};
    const auto run = run_cujit(spec);
    EXPECT_FALSE(watchdog.needed()) << "loading the library blocked on the FIFO";
    EXPECT_EQ(run.signal, 0);
    EXPECT_NE(run.all().find("FIFO"), std::string::npos) << run.all();
  }
}

// ---- untrusted text printed escaped ------------------------------------------------------------

// Decodes `text` as UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF) and answers whether it decodes and holds no control character but tab.
bool valid_utf8_without_controls(const std::string& text) {
  for (std::size_t at = 0; at < text.size();) {
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = 1;
    std::uint32_t code = lead;
    if (lead >= 0x80) {
      if ((lead & 0xE0) == 0xC0) {
        length = 2;
        code = lead & 0x1F;
      } else if ((lead & 0xF0) == 0xE0) {
        length = 3;
        code = lead & 0x0F;
      } else if ((lead & 0xF8) == 0xF0) {
        length = 4;
        code = lead & 0x07;
      } else {
        return false;
      }
      if (at + length > text.size()) return false;
      for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[at + k]);
        if ((next & 0xC0) != 0x80) return false;
        code = (code << 6) | (next & 0x3F);
      }
      const std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
      if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    }
    if ((code < 0x20 && code != '\t') || (code >= 0x7F && code <= 0x9F)) return false;
    at += length;
  }
  return true;
}

TEST(HostileCliText, PrintableTextHasNoControlsAndIsIdempotent) {
  std::mt19937 random(31);
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const std::size_t length = random() % 24;
    for (std::size_t k = 0; k < length; ++k) {
      // Mostly bytes that matter: controls, ESC sequences, C1 in UTF-8, broken UTF-8.
      static const std::string pieces[] = {"\n", "\r", "\x1b[31m", "\x1b]0;t\x07", "\xc2\x9b", "\xc2\xa0", "\xe2\x82\xac",
                                           "\xff", "\xe2\x82", "a", "\t", "\\n", "\x7f", "\xf0\x9f\x98\x80"};
      text += random() % 3 == 0 ? std::string(1, static_cast<char>(random() % 256)) : pieces[random() % 14];
    }
    const std::string shown = scenarios::printable_text(text);
    EXPECT_TRUE(valid_utf8_without_controls(shown)) << shown;
    EXPECT_EQ(scenarios::printable_text(shown), shown);
    if (valid_utf8_without_controls(text)) {
      EXPECT_EQ(shown, text);
    }
  }
  EXPECT_EQ(scenarios::printable_text("a\nverdict: as expected\x1b[2J"), "a\\nverdict: as expected\\x1b[2J");
}

// A child's output passed through in chunks (report scripts, --verbose, a vendor library's
// stderr): lines and tabs kept, no other control byte gets through, wherever the chunks end.
TEST(HostileCliText, PassedThroughOutputKeepsLinesAndDropsControls) {
  std::mt19937 random(27);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const std::size_t length = random() % 200;
    for (std::size_t k = 0; k < length; ++k) text += static_cast<char>(random() % 256);
    std::string chunked;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t size = 1 + random() % 17;
      chunked += cli::printable_stream(std::string_view(text).substr(at, size));
      at += size;
    }
    EXPECT_EQ(chunked, cli::printable_stream(text));
    for (const char c : chunked) {
      const auto byte = static_cast<unsigned char>(c);
      EXPECT_FALSE((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7F) << static_cast<int>(byte);
    }
    EXPECT_EQ(std::count(chunked.begin(), chunked.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
  }
}

// A scenario whose name tries to forge the verdict line and to clear the screen: the bundle
// shows the name on one line, escaped, and its only verdict line is the real one.
TEST(HostileCliText, ScenarioNameCannotForgeAVerdictOrSendEscapes) {
  TempDir dir;
  const std::string forged = "x\nverdict: as expected\n\u001b[2J\u001b]0;owned\u0007";
  nlohmann::json scenario = {{"schema", 1},
                             {"name", forged},
                             {"backend", "nvjitlink"},
                             {"inputs", {{{"fixture", "scale_kernel.ptx"}}}},
                             {"expect", {{"outcome", "error"}, {"kind", "link"}, {"message", "never"}}}};
  test::cli::write_file(dir.path() / "forged.json", scenario.dump());
  for (const bool in_process : {false, true}) {
    Spec spec = with_args({"repro", "--no-cache"});
    if (in_process) spec.args.push_back("--in-process");
    spec.args.insert(spec.args.end(), {"--", (dir.path() / "forged.json").string()});
    spec.unset = {"CUJIT_LINKER", "CUJIT_TEST_REPRO_CRASH"};
    const auto run = run_cujit(spec);
    SCOPED_TRACE(run.all());
    EXPECT_EQ(run.all().find('\x1b'), std::string::npos) << "an escape sequence reached the output";
    EXPECT_EQ(run.all().find('\x07'), std::string::npos);
    EXPECT_EQ(run.out.find("\nverdict: as expected"), std::string::npos);
    EXPECT_EQ(run.out.rfind("verdict: as expected", 0), std::string::npos);
    EXPECT_NE(run.out.find("scenario: x\\nverdict: as expected\\n\\x1b[2J"), std::string::npos);
  }
}

// ---- --out, read-only commands, conventions --------------------------------------------------

// An output path that passes through another user's directory or link is refused before
// anything is created, for a directory --out and a file --out alike (red-team finding,
// 2026-11-28: `merge --out` and `resource-spec --out` followed such a link and wrote, as
// root, where that user pointed it; a refused --out still left a directory behind). Needs
// root, to make the directory and the link another user's.
TEST(HostileCliOut, AnOutThroughAnotherUsersLinkOrDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory and a link to another user";
  TempDir dir;
  const fs::path victim = dir.path() / "victim";
  fs::create_directories(victim);
  const fs::path theirs = dir.path() / "theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
  fs::create_symlink(victim, theirs / "sub");
  ASSERT_EQ(::lchown((theirs / "sub").c_str(), 4242, 4242), 0);
  test::cli::Spec resource_spec;
  resource_spec.args = {"resource-spec", "--out", (theirs / "sub" / "spec.json").string()};
  const auto spec = test::cli::run_cujit(resource_spec);
  EXPECT_EQ(spec.exit_code, 2) << spec.all();
  EXPECT_NE(spec.err.find("uid 4242"), std::string::npos) << spec.all();
  const fs::path build = test::cli::make_fake_build(dir.path(), {"format"});
  const auto run = test::cli::conformance_run(build, theirs / "sub" / "out", "", {"format"});
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("uid 4242"), std::string::npos) << run.all();
  EXPECT_TRUE(fs::is_empty(victim)) << "nothing written through the link";
  // A directory of theirs, no link: refused, and nothing left behind in it.
  const auto inside = test::cli::conformance_run(build, theirs / "new" / "out", "", {"format"});
  EXPECT_EQ(inside.exit_code, 2) << inside.all();
  EXPECT_FALSE(fs::exists(theirs / "new")) << "the refused --out was created";
  // Their link in a directory of ours, followed by "..": the kernel takes ".." from the
  // link's target, so a lexical check that drops "link/.." was bypassed (second red-team
  // pass, 2026-11-28).
  fs::create_directories(victim / "deeper");
  const fs::path link = dir.path() / "their-link";
  fs::create_symlink(victim / "deeper", link);
  ASSERT_EQ(::lchown(link.c_str(), 4242, 4242), 0);
  resource_spec.args = {"resource-spec", "--out", (link / ".." / "spec.json").string()};
  const auto dotdot = test::cli::run_cujit(resource_spec);
  EXPECT_EQ(dotdot.exit_code, 2) << dotdot.all();
  EXPECT_NE(dotdot.err.find("uid 4242"), std::string::npos) << dotdot.all();
  const auto dotdot_dir = test::cli::conformance_run(build, link / ".." / "out", "", {"format"});
  EXPECT_EQ(dotdot_dir.exit_code, 2) << dotdot_dir.all();
  EXPECT_FALSE(fs::exists(victim / "spec.json"));
  EXPECT_FALSE(fs::exists(victim / "out"));
}

// A FIFO at an output file's name (anyone's, in /tmp) is refused at once: the open would
// block until someone read it, and hand them the output (second red-team pass, 2026-11-28).
TEST(HostileCliOut, AFifoAsAnOutputFileIsRefusedWithoutWaiting) {
  TempDir dir;
  const fs::path fifo = dir.path() / "spec.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  test::cli::Spec spec;
  spec.args = {"resource-spec", "--out", fifo.string()};
  const auto run = test::cli::run_cujit(spec);
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find(fifo.filename().string()), std::string::npos) << run.all();
}

TEST(HostileCliOut, OutHoldingASymlinkIsRefusedAndNothingIsWrittenThroughIt) {
  TempDir dir;
  const fs::path build = test::cli::make_fake_build(dir.path(), {"format"});
  const fs::path victim = dir.path() / "victim";
  test::cli::write_file(victim, "keep");
  const fs::path out = dir.path() / "out";
  fs::create_directories(out / "junit");
  fs::create_symlink(victim, out / "junit" / "format.xml");
  const auto run = test::cli::conformance_run(build, out, "", {"format"});
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("symbolic link"), std::string::npos) << run.all();
  EXPECT_NE(run.err.find("format.xml"), std::string::npos) << run.all();
  EXPECT_EQ(test::cli::read_all(victim), "keep");
  // An --out that is itself a link, or a directory others can write (where a link could be
  // planted while the run writes), is refused too (red-team finding F9).
  const fs::path elsewhere = dir.path() / "elsewhere";
  fs::create_directories(elsewhere);
  fs::create_symlink(elsewhere, dir.path() / "linked-out");
  const auto linked = test::cli::conformance_run(build, dir.path() / "linked-out", "", {"format"});
  EXPECT_EQ(linked.exit_code, 2) << linked.all();
  EXPECT_NE(linked.err.find("is a symbolic link"), std::string::npos) << linked.all();
  EXPECT_TRUE(fs::is_empty(elsewhere));
  for (const fs::perms writable : {fs::perms::group_write, fs::perms::others_write}) {
    const fs::path shared = dir.path() / "shared";
    fs::create_directories(shared);
    fs::permissions(shared, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec | writable,
                    fs::perm_options::replace);
    const auto refused = test::cli::conformance_run(build, shared, "", {"format"});
    EXPECT_EQ(refused.exit_code, 2) << refused.all();
    EXPECT_NE(refused.err.find("writable by"), std::string::npos) << refused.all();
    EXPECT_TRUE(fs::is_empty(shared));
    fs::remove_all(shared);
  }
  // A fresh directory, or one holding only what a run leaves, is fine.
  EXPECT_EQ(test::cli::conformance_run(build, dir.path() / "fresh", "", {"format"}).exit_code, 0);
  EXPECT_EQ(test::cli::conformance_run(build, dir.path() / "fresh", "", {"format"}).exit_code, 0);
}

TEST(HostileCliReadOnly, CacheStatsCreatesNoDirectory) {
  TempDir dir;
  const fs::path mistyped = dir.path() / "no" / "such" / "cache";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"cache", "stats"}, {"cache", "stats", "--json"}, {"cache", "path"}, {"info"},
        {"info", "--json"}}) {
    Spec spec = with_args(args);
    spec.env = {{"CUJIT_CACHE_DIR", mistyped.string()}};
    spec.unset = {"CUJIT_CACHE"};
    const auto run = run_cujit(spec);
    EXPECT_EQ(run.exit_code, 0) << run.all();
    EXPECT_FALSE(fs::exists(dir.path() / "no")) << args.back() << " created the directory chain";
  }
  Spec spec = with_args({"cache", "stats"});
  spec.env = {{"CUJIT_CACHE_DIR", mistyped.string()}};
  spec.unset = {"CUJIT_CACHE"};
  EXPECT_NE(run_cujit(spec).out.find("does not exist"), std::string::npos);
}

TEST(HostileCliConventions, GtestShardingVariablesAreWarnedAbout) {
  TempDir dir;
  const fs::path build = test::cli::make_fake_build(dir.path(), {"format"});
  for (const char* variable : {"GTEST_FILTER", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"}) {
    const std::string value = std::string(variable) == "GTEST_FILTER" ? "NoSuch.*" : "1";
    const auto run = test::cli::conformance_run(build, dir.path() / variable, "", {"format"}, {{variable, value}});
    EXPECT_EQ(run.exit_code, 0) << run.all();
    EXPECT_NE(run.err.find(std::string("warning: ") + variable + "=" + value + " is set and ignored"),
              std::string::npos)
        << run.all();
  }
  const auto clean = test::cli::conformance_run(build, dir.path() / "clean", "", {"format"});
  EXPECT_EQ(clean.err.find("is set and ignored"), std::string::npos) << clean.all();
}

TEST(HostileCliConventions, QuickAndFullTogetherAreExit2) {
  TempDir dir;
  const fs::path build = test::cli::make_fake_build(dir.path(), {"format"});
  for (const char* command : {"bench", "run"}) {
    Spec spec = with_args({command, "--quick", "--full", "--out", (dir.path() / command).string()});
    spec.env = {{"CUJIT_BUILD_DIR", build.string()}, {"CUJIT_PYTHON", CUJIT_CLI_FAKE_TOOL}};
    const auto run = run_cujit(spec);
    EXPECT_EQ(run.exit_code, 2) << command << ": " << run.all();
    EXPECT_NE(run.err.find("--quick and --full"), std::string::npos) << run.all();
  }
}

// A bad value of a variable the scenario's run reads is a usage error (exit 2, naming the
// variable: docs/cli.md), in the isolated child and in process, never a failed step (exit 1).
TEST(HostileCliConventions, ReproWithABadEnvironmentValueIsExit2) {
  TempDir dir;
  test::cli::write_file(dir.path() / "ok.json", test::cli::linking_scenario("ok"));
  const std::pair<const char*, const char*> bad[] = {{"CUJIT_CACHE", "bogus"},
                                                     {"CUJIT_ENABLE_NRT", "maybe"},
                                                     {"CUJIT_CACHE_MAX_BYTES", "lots"},
                                                     {"CUJIT_LINKER", "gcc"},
                                                     {"CUJIT_PLANTED_SLOWDOWN", "2"},
                                                     {"CUJIT_NVRTC_LIBRARY", "relative.so"},
                                                     {"CUJIT_NVJITLINK_LIBRARY", "relative.so"}};
  for (const auto& [variable, value] : bad) {
    for (const bool in_process : {false, true}) {
      Spec spec = with_args({"repro"});
      if (in_process) spec.args.push_back("--in-process");
      spec.args.insert(spec.args.end(), {"--", (dir.path() / "ok.json").string()});
      spec.env = {{variable, value}, {"CUJIT_CACHE_DIR", (dir.path() / "cache").string()}};
      spec.unset = {"CUJIT_TEST_REPRO_CRASH"};
      if (std::string(variable) != "CUJIT_LINKER") spec.unset.push_back("CUJIT_LINKER");
      const auto run = run_cujit(spec);
      EXPECT_EQ(run.exit_code, 2) << variable << (in_process ? " (in process)" : "") << ": " << run.all();
      EXPECT_NE(run.err.find(variable), std::string::npos) << run.all();
    }
  }
}

// The clock run_child gives a silent child (the heartbeat `cujit conformance` prints from).
TEST(CliProgress, SilentChildStillGetsTicks) {
  cli::ChildSpec child = cli::child_spec({"sleep", "1"});
  child.out = cli::Sink::capture;
  child.tick_ms = 100;
  int ticks = 0;
  const cli::ChildExit exit = cli::run_child(child, [&](cli::Stream stream, std::string_view) {
    if (stream == cli::Stream::tick) ++ticks;
  });
  EXPECT_TRUE(exit.exited());
  EXPECT_GE(ticks, 1);
}

}  // namespace
}  // namespace cujit
