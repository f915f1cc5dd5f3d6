// Vendor libraries in keys by content (cache/library_content.hpp): a digest is always of the
// bytes the file holds now, whatever happened to it (a fuzzer of file histories), a second
// process takes it from the store, and a store or entry that is not the user's alone, an
// entry for another stamp, or a file too new to remember never gives a digest.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "cache/library_content.hpp"
#include "cujit/cache_key.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"
#include "support/scoped_variable.hpp"
#include "support/file_description.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;

std::string description(const fs::path& path) { return test::stat_description(path); }

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string expected_content(const fs::path& path) {
  const std::string bytes = bytes_of(path);
  return "sha256=" + sha256_hex(bytes) + ";size=" + std::to_string(bytes.size()) + ";name=" +
         path.filename().string();
}

TEST(LibraryContent, DigestsAreOfTheBytesWhateverTheFilesHistory) {
  test::TempDir dir;
  const test::ScopedVariable store("CUJIT_LIBRARY_DIGESTS", (dir.path() / "store").string());
  // A new history each run (the seed is printed; CUJIT_LIBRARY_CONTENT_SEED replays one).
  const char* chosen = std::getenv("CUJIT_LIBRARY_CONTENT_SEED");
  const unsigned seed = chosen != nullptr ? static_cast<unsigned>(std::strtoul(chosen, nullptr, 10)) : std::random_device{}();
  std::printf("library content fuzz: CUJIT_LIBRARY_CONTENT_SEED=%u\n", seed);
  std::mt19937 rng(seed);
  std::vector<fs::path> files;
  const auto random_bytes = [&](std::size_t size) {
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4);  // few symbols: equal files happen
    return bytes;
  };
  for (int i = 0; i < 6; ++i) {
    files.push_back(dir.path() / ("lib" + std::to_string(i) + ".so"));
    write_bytes(files.back(), random_bytes(1 + rng() % 3));
  }
  // Old enough to be remembered: the later steps change files the process and the store know.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  const std::vector<std::string> steps = {"edit in place", "rewrite same bytes", "copy", "hard link",
                                          "rename", "touch", "restore mtime", "chmod", "grow"};
  std::map<std::string, int> done;
  for (int step = 0; step < 400; ++step) {
    const fs::path& target = files[rng() % files.size()];
    const std::string what = steps[rng() % steps.size()];
    ++done[what];
    struct stat before {};
    ::stat(target.c_str(), &before);
    if (what == "edit in place" || what == "restore mtime") {
      std::string bytes = bytes_of(target);
      if (!bytes.empty()) bytes[rng() % bytes.size()] = static_cast<char>(rng() % 4);
      write_bytes(target, bytes);
      if (what == "restore mtime") {
        const timespec times[2] = {before.st_atim, before.st_mtim};
        ::utimensat(AT_FDCWD, target.c_str(), times, 0);
      }
    } else if (what == "rewrite same bytes") {
      write_bytes(target, bytes_of(target));
    } else if (what == "copy") {
      const fs::path source = files[rng() % files.size()];
      const std::string bytes = bytes_of(source);  // as cp does onto a new file: a new inode
      fs::remove(target);
      write_bytes(target, bytes);
    } else if (what == "hard link") {
      const fs::path source = files[rng() % files.size()];
      if (source != target) {
        fs::remove(target);
        fs::create_hard_link(source, target);
      }
    } else if (what == "rename") {
      const fs::path other = files[rng() % files.size()];
      if (other != target) {
        const fs::path aside = dir.path() / "aside";
        fs::rename(target, aside);
        fs::rename(other, target);
        fs::rename(aside, other);
      }
    } else if (what == "touch") {
      ::utimensat(AT_FDCWD, target.c_str(), nullptr, 0);
    } else if (what == "chmod") {
      fs::permissions(target, fs::perms::owner_exec, fs::perm_options::add);
    } else {
      write_bytes(target, bytes_of(target) + random_bytes(1));
    }
    for (const fs::path& file : files) {
      ASSERT_EQ(detail::content_identity("lib: " + description(file)), "lib: " + expected_content(file))
          << "step " << step << " (" << what << " " << target.filename() << "), file " << file.filename();
    }
  }
  for (const std::string& what : steps) EXPECT_GT(done[what], 0) << what;
}

// The toolkit's NVRTC builtins: a real library file, installed long ago (old enough to remember).
fs::path old_library() { return fs::canonical(fs::path(CUJIT_TEST_NVRTC_LIBRARY).parent_path() / "libnvrtc-builtins.so"); }

TEST(LibraryContent, OnlyWellFormedDescriptionsAreRewritten) {
  const fs::path real = old_library();
  const std::string good = description(real);
  const std::string relative = "path=relative.so" + good.substr(good.find(";size="));
  const std::string wrong_stamp = good.substr(0, good.find(";inode=")) + ";inode=1";
  for (const std::string& kept : {std::string("unknown:stat failed for /x"), relative, wrong_stamp,
                                  good.substr(0, good.find(";ctime=")), "xpath=" + good.substr(5)}) {
    EXPECT_EQ(detail::content_identity(kept), kept);
  }
  const std::string rewritten = detail::content_identity("nvrtc: " + good + "; " + good);
  EXPECT_EQ(rewritten, "nvrtc: " + expected_content(real) + "; " + expected_content(real));
}

struct ChildView {
  std::vector<std::string> identities;
  std::string hashed, from_store, output;
};

ChildView run_content_child(const std::vector<fs::path>& files, const fs::path& store) {
  std::vector<std::string> argv{CUJIT_LIBRARY_CONTENT_CHILD};
  for (const fs::path& file : files) argv.push_back(file.string());
  const test::ChildResult child = test::run_child(argv, {"CUJIT_LIBRARY_DIGESTS=" + store.string()});
  EXPECT_EQ(child.exit_code, 0) << child.output;
  ChildView view{{}, "", "", child.output};
  std::istringstream lines(child.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("identity=", 0) == 0) view.identities.push_back(line.substr(9));
    if (line.rfind("hashed=", 0) == 0) view.hashed = line.substr(7);
    if (line.rfind("from_store=", 0) == 0) view.from_store = line.substr(11);
  }
  return view;
}

TEST(LibraryContent, ASecondProcessTakesTheDigestFromTheStoreAndAnUntrustedStoreIsNotRead) {
  test::TempDir dir;
  const fs::path store = dir.path() / "store";
  const fs::path library = old_library();
  const ChildView first = run_content_child({library}, store);
  EXPECT_EQ(first.hashed, "1") << first.output;
  EXPECT_EQ(first.from_store, "0") << first.output;
  ASSERT_EQ(first.identities, std::vector<std::string>{expected_content(library)});
  const ChildView second = run_content_child({library}, store);
  EXPECT_EQ(second.hashed, "0") << second.output;
  EXPECT_EQ(second.from_store, "1") << second.output;
  EXPECT_EQ(second.identities, first.identities);

  // An entry another user could have written is not believed.
  std::vector<fs::path> entries;
  for (const fs::directory_entry& entry : fs::directory_iterator(store)) entries.push_back(entry.path());
  ASSERT_EQ(entries.size(), 1u);
  fs::permissions(entries[0], fs::perms::group_write, fs::perm_options::add);
  const ChildView writable_entry = run_content_child({library}, store);
  EXPECT_EQ(writable_entry.hashed, "1") << writable_entry.output;
  EXPECT_EQ(writable_entry.identities, first.identities);
  fs::permissions(entries[0], fs::perms::group_write, fs::perm_options::remove);
  fs::permissions(store, fs::perms::others_write, fs::perm_options::add);
  const ChildView writable_store = run_content_child({library}, store);
  EXPECT_EQ(writable_store.hashed, "1") << writable_store.output;
  EXPECT_EQ(writable_store.from_store, "0") << writable_store.output;
  EXPECT_EQ(writable_store.identities, first.identities);
}

TEST(LibraryContent, AnEntryForAnotherStampOrALyingFormatIsIgnored) {
  test::TempDir dir;
  const fs::path store = dir.path() / "store";
  const fs::path library = old_library();
  (void)run_content_child({library}, store);
  std::vector<fs::path> entries;
  for (const fs::directory_entry& entry : fs::directory_iterator(store)) entries.push_back(entry.path());
  ASSERT_EQ(entries.size(), 1u);
  const std::string good = bytes_of(entries[0]);
  const std::string forged_digest = std::string(64, 'a');
  const std::vector<std::string> forgeries = {
      // another stamp under this stamp's name
      good.substr(0, good.find("inode=") + 6) + "1\n" + forged_digest + "\n",
      // a digest that is not 64 hex digits
      good.substr(0, good.rfind('\n', good.size() - 2) + 1) + "xyz\n",
      // another format version
      "cujit-library-digest 2" + good.substr(good.find('\n')),
      ""};
  for (const std::string& forged : forgeries) {
    write_bytes(entries[0], forged);
    fs::permissions(entries[0], fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    const ChildView view = run_content_child({library}, store);
    EXPECT_EQ(view.identities, std::vector<std::string>{expected_content(library)}) << forged;
    EXPECT_EQ(view.from_store, "0") << forged;
  }
}

TEST(LibraryContent, AFileTooNewIsHashedEveryTimeAndNeverRemembered) {
  test::TempDir dir;
  const fs::path store = dir.path() / "store";
  const fs::path fresh = dir.write("libfresh.so", "fresh bytes");
  const ChildView first = run_content_child({fresh}, store);
  const ChildView second = run_content_child({fresh}, store);
  EXPECT_EQ(first.hashed, "1");
  EXPECT_EQ(second.hashed, "1") << "a file written within 2 s is not remembered";
  EXPECT_EQ(second.identities, std::vector<std::string>{expected_content(fresh)});
  EXPECT_FALSE(fs::exists(store) && !fs::is_empty(store)) << "nothing stored for it";
}

}  // namespace
}  // namespace cujit
