// NVRTC and nvJitLink are loaded on first use: a process that only hits the cache maps
// neither, a compile maps NVRTC and a link nvJitLink, CUJIT_NVRTC_LIBRARY and
// CUJIT_NVJITLINK_LIBRARY choose the files, and a file that is not the library asked for is
// a typed error naming it. Each case runs vendor_library_child as a new process: what a
// process maps, and the libraries it loads once, are its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include <filesystem>
#include <atomic>
#include <map>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;

struct ChildAnswer {
  int exit_code = -1;
  std::map<std::string, std::string> values;  // the key=value lines
  std::string output;

  const std::string& operator[](const std::string& key) const {
    static const std::string missing = "<missing>";
    const auto found = values.find(key);
    return found == values.end() ? missing : found->second;
  }
};

ChildAnswer run_child(const std::vector<std::string>& args,
                            const std::vector<std::string>& environment = {}) {
  std::vector<std::string> argv{CUJIT_VENDOR_LIBRARY_CHILD};
  argv.insert(argv.end(), args.begin(), args.end());
  const test::ChildResult child = test::run_child(argv, environment);
  ChildAnswer answer{child.exit_code, {}, child.output};
  std::istringstream lines(child.output);
  for (std::string line; std::getline(lines, line);) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) answer.values[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return answer;
}


bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string real_nvrtc = fs::canonical(CUJIT_TEST_NVRTC_LIBRARY).string();
const std::string real_nvjitlink = fs::canonical(CUJIT_TEST_NVJITLINK_LIBRARY).string();

// One library as the tests see it: its variable, the child's keys for it, its real file
// and another library's file, which the loader opens but which lacks every function.
struct Library {
  const char* label;      // the child's key prefix: "nvrtc", "nvjitlink"
  const char* variable;   // CUJIT_NVRTC_LIBRARY
  const char* component;  // "NVRTC": errors come from "NVRTC (dlopen)" / "NVRTC (dlsym)"
  const char* first_missing;  // the first function the other library lacks
  std::string real;
  std::string other;

  std::string chosen(const fs::path& path) const { return std::string(variable) + "=" + path.string(); }
};

const std::vector<Library>& libraries() {
  static const std::vector<Library> all{
      {"nvrtc", "CUJIT_NVRTC_LIBRARY", "NVRTC", "nvrtcCreateProgram", real_nvrtc, real_nvjitlink},
      {"nvjitlink", "CUJIT_NVJITLINK_LIBRARY", "nvJitLink", "__nvJitLinkCreate_13_0", real_nvjitlink, real_nvrtc},
  };
  return all;
}

TEST(VendorLibraries, ACompileMapsNvrtcALinkNvJitLinkAndADiskHitNeither) {
  {
    test::TempDir dir;
    const std::string cache = (dir.path() / "cache").string();
    const ChildAnswer built = run_child({"compile", cache});
    ASSERT_EQ(built.exit_code, 0) << built.output;
    EXPECT_EQ(built["source"], "built");
    EXPECT_EQ(built["nvrtc"], real_nvrtc) << "a compile loads NVRTC";
    EXPECT_EQ(built["nvjitlink"], "none") << "a compile needs no nvJitLink";
    const ChildAnswer hit = run_child({"compile", cache});
    ASSERT_EQ(hit.exit_code, 0) << hit.output;
    EXPECT_EQ(hit["source"], "disk");
    EXPECT_EQ(hit["nvrtc"], "none") << "a cache hit needs no NVRTC";
  }
  test::TempDir dir;
  const std::string cache = (dir.path() / "cache").string();
  const ChildAnswer built = run_child({"kernel", cache});
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_EQ(built["source"], "built");
  EXPECT_EQ(built["nvrtc"], real_nvrtc);
  EXPECT_EQ(built["nvjitlink"], real_nvjitlink) << "a link loads nvJitLink";
  const ChildAnswer hit = run_child({"kernel", cache});
  ASSERT_EQ(hit.exit_code, 0) << hit.output;
  EXPECT_EQ(hit["source"], "disk");
  EXPECT_EQ(hit["nvrtc"], "none") << "a warm-cache process never loads NVRTC";
  EXPECT_EQ(hit["nvjitlink"], "none") << "a warm-cache process never loads nvJitLink";
}

TEST(VendorLibraries, TheIdentitiesNameTheBuildsFiles) {
  const ChildAnswer answer = run_child({"identity"});
  ASSERT_EQ(answer.exit_code, 0) << answer.output;
  EXPECT_EQ(answer["nvrtc-identity"].rfind("nvrtc: path=" + real_nvrtc + ";size=", 0), 0u) << answer.output;
  EXPECT_TRUE(contains(answer["nvrtc-identity"], "libnvrtc-builtins")) << answer.output;
  EXPECT_EQ(answer["nvjitlink-identity"].rfind("nvjitlink: path=" + real_nvjitlink + ";size=", 0), 0u)
      << answer.output;
  for (const Library& library : libraries()) {
    EXPECT_NE(answer[std::string(library.label) + "-version"].find('.'), std::string::npos) << answer.output;
    EXPECT_EQ(answer[library.label], library.real) << "the version is read from the library it names";
  }
}

// NVRTC dlopens its builtins by bare name, so the loader picks them, LD_LIBRARY_PATH first:
// a copy there is what a compile uses (checked by compiling) and what NVRTC's identity names.
TEST(VendorLibraries, TheBuiltinsTheLoaderPicksAreNamed) {
  test::TempDir dir;
  const fs::path real = fs::canonical(real_nvrtc);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(real.parent_path(), ec)) {
    if (entry.path().filename().string().rfind("libnvrtc-builtins.so", 0) == 0 && entry.is_regular_file()) {
      fs::copy_file(entry.path(), dir.path() / entry.path().filename());
    }
  }
  const ChildAnswer plain = run_child({"identity"});
  const ChildAnswer moved = run_child({"identity"}, {"LD_LIBRARY_PATH=" + dir.path().string()});
  ASSERT_EQ(moved.exit_code, 0) << moved.output;
  EXPECT_TRUE(contains(moved["nvrtc-identity"], "path=" + dir.path().string() + "/libnvrtc-builtins.so"))
      << moved.output;
  EXPECT_NE(moved["nvrtc-identity"], plain["nvrtc-identity"]);
  const ChildAnswer built = run_child({"kernel", "off"}, {"LD_LIBRARY_PATH=" + dir.path().string()});
  EXPECT_EQ(built.exit_code, 0) << built.output;
}

// Keys name libraries by content (cache/library_content.hpp): the same NVRTC and nvJitLink
// bytes copied to two other directories, one copy touched, give disk hits for builds the
// other copy made; a copy with one byte changed does not.
TEST(VendorLibraries, CopiesOfTheSameLibrariesShareBuildsAndAChangedCopyDoesNot) {
  test::TempDir dir;
  const std::string cache = (dir.path() / "cache").string();
  const auto copy_of = [&](const std::string& name, bool change_a_byte) -> fs::path {
    const fs::path place = dir.path() / name;
    fs::create_directories(place);
    for (const Library& library : libraries()) {
      const fs::path copy = place / fs::path(library.real).filename();
      fs::copy_file(library.real, copy);
      if (change_a_byte) {
        // The last byte (in the section header table's last entry, which the loader never
        // reads): the library still loads, and its content differs.
        std::FILE* file = std::fopen(copy.c_str(), "r+b");
        if (file == nullptr) throw std::runtime_error("cannot open " + copy.string());
        std::fseek(file, -1, SEEK_END);
        const int last = std::fgetc(file);
        std::fseek(file, -1, SEEK_END);
        std::fputc(last ^ 1, file);
        std::fclose(file);
      }
    }
    return place;
  };
  const auto chosen = [](const fs::path& place) {
    std::vector<std::string> environment;
    for (const Library& library : libraries()) {
      environment.push_back(library.chosen(place / fs::path(library.real).filename()));
    }
    return environment;
  };
  const fs::path first = copy_of("first", false), second = copy_of("second", false);
  ::utimensat(AT_FDCWD, (second / fs::path(real_nvrtc).filename()).c_str(), nullptr, 0);
  const ChildAnswer built = run_child({"kernel", cache}, chosen(first));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_EQ(built["source"], "built");
  const ChildAnswer shared = run_child({"kernel", cache}, chosen(second));
  ASSERT_EQ(shared.exit_code, 0) << shared.output;
  EXPECT_EQ(shared["source"], "disk") << "the same bytes at another path, touched, share the build";
  const fs::path changed = copy_of("changed", true);
  const ChildAnswer rebuilt = run_child({"kernel", cache}, chosen(changed));
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.output;
  EXPECT_EQ(rebuilt["source"], "built") << "other library bytes never share a build";
}

TEST(VendorLibraries, TheChosenLibraryIsTheOneLoadedAndNamed) {
  for (const Library& library : libraries()) {
    test::TempDir dir;
    // A link to the toolkit's file stands for another toolkit's: the key names the real file.
    const fs::path link = dir.path() / "libchosen.so";
    fs::create_symlink(library.real, link);
    for (const fs::path& path : {fs::path(library.real), link}) {
      const ChildAnswer built = run_child({"kernel", "off"}, {library.chosen(path)});
      ASSERT_EQ(built.exit_code, 0) << built.output;
      EXPECT_EQ(built["source"], "built");
      EXPECT_EQ(built[library.label], library.real) << path;

      const ChildAnswer named = run_child({"identity"}, {library.chosen(path)});
      ASSERT_EQ(named.exit_code, 0) << named.output;
      EXPECT_TRUE(contains(named[std::string(library.label) + "-identity"], "path=" + library.real + ";"))
          << named.output;
    }
  }
}

// Every way a variable can name something that is not the library: a typed error from the
// component, naming the path and the loader's reason, in a process that carries on.
TEST(HostileVendorLibraries, APathThatIsNotTheLibraryIsATypedErrorNamingIt) {
  for (const Library& library : libraries()) {
    test::TempDir dir;
    struct Case {
      fs::path path;
      std::string component;
      std::string reason;  // part of what the loader says
    };
    const std::string dlopen = std::string(library.component) + " (dlopen)";
    const std::vector<Case> cases{
        {dir.path() / "missing" / "libx.so.13", dlopen, "No such file"},
        {dir.write("libx.so.13", "not a shared library\n"), dlopen, ""},
        {dir.path(), dlopen, ""},
        {fs::path(library.other), std::string(library.component) + " (dlsym)",
         std::string("has no ") + library.first_missing},
    };
    for (const Case& bad : cases) {
      const ChildAnswer answer = run_child({"kernel", "off"}, {library.chosen(bad.path)});
      EXPECT_EQ(answer.exit_code, 3) << bad.path << "\n" << answer.output;
      EXPECT_EQ(answer["error-kind"], "unsupported") << answer.output;
      EXPECT_EQ(answer["error-component"], bad.component) << answer.output;
      EXPECT_TRUE(contains(answer["error"], "'" + bad.path.string() + "'")) << answer.output;
      EXPECT_TRUE(contains(answer["error"], library.variable)) << answer.output;
      EXPECT_TRUE(contains(answer["error"], bad.reason)) << answer.output;
      EXPECT_NE(answer[library.label], library.real) << "never the build's library instead";

      // Reports: the version says why it is unavailable; the identity of a file that is
      // there is that file's (no entry can exist under it: nothing was built with it).
      const ChildAnswer reported = run_child({"identity"}, {library.chosen(bad.path)});
      if (reported.exit_code == 0) {
        const std::string version = reported[std::string(library.label) + "-version"];
        EXPECT_EQ(version.rfind("unavailable (", 0), 0u) << reported.output;
        EXPECT_TRUE(contains(version, bad.path.string())) << reported.output;
      } else {
        EXPECT_EQ(reported.exit_code, 3) << reported.output;
        EXPECT_TRUE(contains(reported["error"], bad.path.string())) << reported.output;
      }
    }
  }
}

TEST(HostileVendorLibraries, ARelativePathIsAUsageErrorNamingTheVariable) {
  for (const Library& library : libraries()) {
    const ChildAnswer answer = run_child({"kernel", "off"}, {library.chosen("libx.so.13")});
    EXPECT_EQ(answer.exit_code, 3) << answer.output;
    EXPECT_EQ(answer["error-kind"], "usage") << answer.output;
    EXPECT_TRUE(contains(answer["error"], std::string(library.variable) + "='libx.so.13'")) << answer.output;
    EXPECT_EQ(answer[library.label], "none") << answer.output;
  }
}

// Loaded code is executed code (red-team finding F13): a copy of the library that someone
// other than root or this user could change - writable by group or others, in a directory
// others can write, or (as root) owned by another user - is a typed error naming it and
// the rule, and is never mapped; the same copy owned and private loads (the tests' power).
TEST(HostileVendorLibraries, ALibraryOthersCouldChangeIsNeverLoaded) {
  for (const Library& library : libraries()) {
    test::TempDir dir;
    ::chmod(dir.path().c_str(), 0755);
    const fs::path sub = dir.path() / "lib";
    fs::create_directory(sub);
    ::chmod(sub.c_str(), 0755);
    const fs::path copy = sub / fs::path(library.real).filename();
    fs::copy_file(library.real, copy);
    ::chmod(copy.c_str(), 0755);
    const ChildAnswer own = run_child({"kernel", "off"}, {library.chosen(copy)});
    ASSERT_EQ(own.exit_code, 0) << own.output;
    EXPECT_EQ(own[library.label], copy.string()) << "the power: a private copy is what loads";
    struct Damage {
      std::string name, reason;
      fs::path path;
      mode_t mode;
      uid_t owner;
    };
    std::vector<Damage> damages{{"file 0775", "writable by its group", copy, 0775, ::geteuid()},
                                {"file 0757", "writable by others", copy, 0757, ::geteuid()},
                                {"file 0666", "writable by others", copy, 0666, ::geteuid()},
                                {"directory 0777", "its directory", sub, 0777, ::geteuid()},
                                {"directory 0775", "its directory", sub, 0775, ::geteuid()}};
    if (::geteuid() == 0) {
      damages.push_back({"file of uid 65534", "owned by uid 65534", copy, 0755, 65534});
      damages.push_back({"directory of uid 65534", "its directory", sub, 0755, 65534});
    }
    for (const Damage& damage : damages) {
      ::chmod(damage.path.c_str(), damage.mode);
      ASSERT_EQ(::chown(damage.path.c_str(), damage.owner, static_cast<gid_t>(-1)), 0);
      const ChildAnswer refused = run_child({"kernel", "off"}, {library.chosen(copy)});
      EXPECT_EQ(refused.exit_code, 3) << damage.name << "\n" << refused.output;
      EXPECT_EQ(refused["error-component"], std::string(library.component) + " (dlopen)") << refused.output;
      EXPECT_TRUE(contains(refused["error"], copy.string())) << refused.output;
      EXPECT_TRUE(contains(refused["error"], damage.reason)) << damage.name << "\n" << refused.output;
      EXPECT_EQ(refused[library.label], "none") << damage.name << ": the refused library was mapped";
      ::chmod(damage.path.c_str(), 0755);
      ASSERT_EQ(::chown(damage.path.c_str(), ::geteuid(), static_cast<gid_t>(-1)), 0);
    }
  }
}

// The file checked is the file loaded (red-team finding F13: the path was opened twice, and
// a link flipped between the library and a FIFO in between hung dlopen 2 times in 150).
// Here the link flips all the while 40 processes load through it: each either loads the
// library or refuses the FIFO, none hangs (timeout(1) would say 124).
TEST(HostileVendorLibraries, ALinkSwappedBetweenTheCheckAndTheLoadNeverHangs) {
  const Library& library = libraries().back();  // nvJitLink
  test::TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path link = dir.path() / "lib.so";
  fs::create_symlink(library.real, dir.path() / "to-library");
  fs::create_symlink(fifo, dir.path() / "to-fifo");
  fs::copy_symlink(dir.path() / "to-library", link);
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    for (unsigned turn = 0; !done; ++turn) {
      const fs::path next = dir.path() / ("next" + std::to_string(turn % 2));
      std::error_code ignored;
      fs::remove(next, ignored);
      fs::copy_symlink(dir.path() / (turn % 2 == 0 ? "to-fifo" : "to-library"), next, ignored);
      fs::rename(next, link, ignored);
    }
  });
  int loaded = 0, refused = 0;
  for (int i = 0; i < 40; ++i) {
    const test::ChildResult child = test::run_child(
        {"/usr/bin/timeout", "-s", "KILL", "60", CUJIT_VENDOR_LIBRARY_CHILD, "kernel", "off"}, {library.chosen(link)});
    EXPECT_TRUE(child.exit_code == 0 || child.exit_code == 3) << "exit " << child.exit_code << "\n" << child.output;
    if (child.exit_code == 0) ++loaded;
    if (child.exit_code == 3) {
      ++refused;
      // Refused on the descriptor (a FIFO), or by the path's second look (the link turned to
      // the FIFO after the library was opened): either way nothing but the checked file loads.
      EXPECT_TRUE(contains(child.output, "a FIFO") || contains(child.output, "not a regular file") ||
                  contains(child.output, "No such file"))
          << child.output;
    }
  }
  done = true;
  flipper.join();
  EXPECT_EQ(loaded + refused, 40);
}

}  // namespace
}  // namespace cujit
