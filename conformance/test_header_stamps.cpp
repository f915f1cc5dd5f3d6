// Header stamps (compile/header_stamps.hpp) across processes: a new process whose stamps all
// hold resolves a hermetic compile reading no header, and every way a header can change
// under a remembered resolution (an edit that keeps size and mtime, a rename over it, a hard
// link, a file appearing where nothing was found, a removal, a symlink retargeted) gives
// what a process without stamps gives; a file written within 2 s is never remembered; a
// damaged, foreign or not-private entry or store is never trusted.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "compile/header_stamps.hpp"
#include "compile/hermetic_inputs.hpp"
#include "cujit/error.hpp"
#include "cujit/toolkit.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"
#include "support/scoped_variable.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Sets a file's mtime back to what it was (its ctime moves: the change no tool can hide).
void restore_mtime(const fs::path& path, const struct stat& before) {
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

struct stat status_of(const fs::path& path) {
  struct stat info {};
  ::stat(path.c_str(), &info);
  return info;
}

// A compile's include tree: a quoted include beside the program, angle includes over three
// -I directories with an #include_next, a __has_include of a file that is not there, a
// symlinked header, and a hard link to one header at another path.
struct World {
  fs::path root;
  explicit World(const fs::path& at) : root(at) {
    for (const char* sub : {"inc1", "inc2", "inc3"}) fs::create_directories(root / sub);
    write_bytes(root / "k.cu",
                "#include \"local.h\"\n#include <a.h>\n#if __has_include(<maybe.h>)\n#include <maybe.h>\n#endif\n"
                "#include <link.h>\n__global__ void k(int* o) { *o = LOCAL + A2 + A3 + LINKED; }\n");
    write_bytes(root / "local.h", "#define LOCAL 1\n");
    write_bytes(root / "inc2/a.h", "#include_next <a.h>\n#define A2 2\n");
    write_bytes(root / "inc3/a.h", "#define A3 3\n");
    write_bytes(root / "inc2/b.h", "#define LINKED 4\n");
    write_bytes(root / "inc2/c.h", "#define LINKED 5\n");
    fs::create_symlink("b.h", root / "inc2/link.h");
    fs::create_hard_link(root / "inc3/a.h", root / "alias.h");
    write_bytes(root / "same.h", "#define A3 7\n");  // a.h's size, other bytes
  }
};

struct Resolved {
  std::string key, program;
  int files_read = -1, from_stamps = -1, stored = -1;
  std::string output;
};

Resolved resolve_in_child(const fs::path& cwd, const fs::path& source, const std::vector<std::string>& options,
                          const std::string& stamps) {
  std::vector<std::string> argv{CUJIT_HEADER_STAMPS_CHILD, cwd.string(), source.string(), source.filename().string(),
                                "--program"};
  argv.insert(argv.end(), options.begin(), options.end());
  const test::ChildResult child = test::run_child(argv, {"CUJIT_HEADER_STAMPS=" + stamps});
  Resolved out;
  out.output = child.output;
  EXPECT_EQ(child.exit_code, 0) << child.output;
  std::size_t at = 0;
  while (at < child.output.size()) {
    const std::size_t end = std::min(child.output.find('\n', at), child.output.size());
    const std::string line = child.output.substr(at, end - at);
    const std::size_t equals = line.find('=');
    if (equals != std::string::npos) {
      const std::string name = line.substr(0, equals), value = line.substr(equals + 1);
      if (name == "key") out.key = value;
      if (name == "program" || name == "program_error") out.program = name + "=" + value;
      if (name == "files_read") out.files_read = std::stoi(value);
      if (name == "from_stamps") out.from_stamps = std::stoi(value);
      if (name == "stored") out.stored = std::stoi(value);
    }
    at = end + 1;
  }
  return out;
}

Resolved resolve_in_child(const World& world, const std::string& stamps) {
  return resolve_in_child(world.root, world.root / "k.cu", {"-I", "inc1", "-I", "inc2", "-Iinc3"}, stamps);
}

void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(2100)); }

// Each class of change, on a world of its own (one wait for all of them to settle).
const std::vector<std::string> changes = {"none",
                                          "edit keeping size and mtime",
                                          "rename a new file over it",
                                          "edit through a hard link",
                                          "a file appears earlier on the search path",
                                          "a __has_include finds a file now",
                                          "remove a header",
                                          "retarget a symlink",
                                          "replace by a hard link of another file"};

void change(const World& world, const std::string& what) {
  const fs::path& r = world.root;
  if (what == "edit keeping size and mtime") {
    const struct stat before = status_of(r / "local.h");
    write_bytes(r / "local.h", "#define LOCAL 8\n");
    restore_mtime(r / "local.h", before);
  } else if (what == "rename a new file over it") {
    const struct stat before = status_of(r / "inc3/a.h");
    write_bytes(r / "new.h", "#define A3 9\n");
    restore_mtime(r / "new.h", before);
    fs::rename(r / "new.h", r / "inc3/a.h");
  } else if (what == "edit through a hard link") {
    const struct stat before = status_of(r / "alias.h");
    write_bytes(r / "alias.h", "#define A3 6\n");
    restore_mtime(r / "alias.h", before);
  } else if (what == "a file appears earlier on the search path") {
    write_bytes(r / "inc1/a.h", "#define A2 20\n#define A3 30\n");
  } else if (what == "a __has_include finds a file now") {
    write_bytes(r / "inc3/maybe.h", "#define MAYBE 1\n");
  } else if (what == "remove a header") {
    fs::remove(r / "inc2/a.h");
  } else if (what == "retarget a symlink") {
    fs::remove(r / "inc2/link.h");
    fs::create_symlink("c.h", r / "inc2/link.h");
  } else if (what == "replace by a hard link of another file") {
    fs::create_hard_link(r / "same.h", r / "tmp.h");
    fs::rename(r / "tmp.h", r / "inc3/a.h");
  }
}

bool leaves_a_fresh_file_in_the_closure(const std::string& what) {
  return what != "none" && what != "remove a header" && what != "retarget a symlink";
}

// Opt-in (docs/cache.md, "Header stamps": a stat stamp does not name the content on NFS,
// vfat, images or after writes through a shared mapping): with the variable unset (empty
// here) nothing is recorded and a second process reads every header again.
TEST(HeaderStamps, AreOffUnlessAskedFor) {
  test::TempDir temp;
  const World world(temp.path());
  settle();
  const Resolved first = resolve_in_child(world, "");
  const Resolved second = resolve_in_child(world, "");
  EXPECT_EQ(first.stored, 0) << first.output;
  EXPECT_EQ(second.from_stamps, 0) << second.output;
  EXPECT_GT(second.files_read, 0) << second.output;
  EXPECT_EQ(second.key, first.key);
}

TEST(HeaderStamps, ANewProcessReadsNoHeaderWhileStampsHoldAndEveryChangeGivesWhatReadingGives) {
  test::TempDir dir;
  const std::string stamps = (dir.path() / "stamps").string();
  std::vector<World> worlds;
  for (std::size_t i = 0; i < changes.size(); ++i) worlds.emplace_back(dir.path() / ("w" + std::to_string(i)));
  settle();
  std::vector<std::string> before(worlds.size());
  for (std::size_t i = 0; i < worlds.size(); ++i) {
    const Resolved reference = resolve_in_child(worlds[i], "off");
    const Resolved first = resolve_in_child(worlds[i], stamps);
    EXPECT_EQ(first.stored, 1) << first.output;
    EXPECT_EQ(first.from_stamps, 0) << first.output;
    EXPECT_EQ(first.files_read, 4) << first.output;  // local.h, both a.h, link.h
    EXPECT_EQ(first.key, reference.key);
    const Resolved second = resolve_in_child(worlds[i], stamps);
    EXPECT_EQ(second.from_stamps, 1) << second.output;
    EXPECT_EQ(second.files_read, 0) << "a new process whose stamps hold read headers\n" << second.output;
    EXPECT_EQ(second.key, reference.key);
    before[i] = reference.key;
  }
  const auto changed_at = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < worlds.size(); ++i) change(worlds[i], changes[i]);
  for (std::size_t i = 0; i < worlds.size(); ++i) {
    SCOPED_TRACE(changes[i]);
    const Resolved reference = resolve_in_child(worlds[i], "off");
    const Resolved with_stamps = resolve_in_child(worlds[i], stamps);
    EXPECT_EQ(with_stamps.key, reference.key) << "stale resolution from header stamps\n" << with_stamps.output;
    EXPECT_EQ(with_stamps.program, reference.program);
    EXPECT_FALSE(reference.program.empty());
    if (changes[i] == "none") {
      EXPECT_EQ(with_stamps.files_read, 0) << with_stamps.output;
      continue;
    }
    // The change must matter to the compile, or this case tests nothing.
    EXPECT_NE(reference.key, before[i]);
    EXPECT_EQ(with_stamps.from_stamps, 0) << with_stamps.output;
    if (leaves_a_fresh_file_in_the_closure(changes[i])) {
      // Within the 2 s window only: a machine this slow checks the rest and says so.
      if (std::chrono::steady_clock::now() - changed_at < std::chrono::milliseconds(1900)) {
        EXPECT_EQ(with_stamps.stored, 0) << "a file changed within 2 s was remembered\n" << with_stamps.output;
      } else {
        std::printf("header stamps: '%s' checked after the 2 s window; its store count not checked\n", changes[i].c_str());
      }
    }
  }
  // Settled again, the new state is remembered and answers a new process.
  settle();
  for (std::size_t i = 0; i < worlds.size(); ++i) {
    SCOPED_TRACE(changes[i]);
    const Resolved reference = resolve_in_child(worlds[i], "off");
    (void)resolve_in_child(worlds[i], stamps);
    const Resolved again = resolve_in_child(worlds[i], stamps);
    EXPECT_EQ(again.from_stamps, 1) << again.output;
    EXPECT_EQ(again.files_read, 0) << again.output;
    EXPECT_EQ(again.key, reference.key);
    EXPECT_EQ(again.program, reference.program);
  }
}

// CCCL's tree (macro includes, `_CCCL_HAS_INCLUDE`, ~630 headers): a second process
// resolves it by stat alone, to the same key and the same bytes for NVRTC.
TEST(HeaderStamps, ACubIncludeTreeResolvesInANewProcessReadingNoHeader) {
  test::TempDir dir;
  const std::string stamps = (dir.path() / "stamps").string();
  const fs::path source = dir.write("cub_reduce.cu",
      "#include <cub/block/block_reduce.cuh>\n"
      "extern \"C\" __global__ void k(const int* in, int* out) {\n"
      "  using R = cub::BlockReduce<int, 128>;\n  __shared__ R::TempStorage t;\n"
      "  int v = R(t).Sum(in[threadIdx.x]);\n  if (threadIdx.x == 0) *out = v;\n}\n");
  const std::vector<std::string> options = {"-std=c++17", "-I" + toolkit::cccl_dir().string(),
                                            "-I" + toolkit::include_dir().string()};
  const Resolved reference = resolve_in_child(dir.path(), source, options, "off");
  const Resolved first = resolve_in_child(dir.path(), source, options, stamps);
  EXPECT_GT(first.files_read, 100) << first.output;
  EXPECT_EQ(first.stored, 1) << "CCCL's installed headers are old enough to remember\n" << first.output;
  const Resolved second = resolve_in_child(dir.path(), source, options, stamps);
  EXPECT_EQ(second.from_stamps, 1) << second.output;
  EXPECT_EQ(second.files_read, 0) << second.output;
  EXPECT_EQ(second.key, reference.key);
  EXPECT_EQ(first.key, reference.key);
  EXPECT_EQ(second.program, reference.program);
  EXPECT_EQ(second.program.rfind("program=", 0), 0u) << second.program;
}

// A process answered from stamps reads the files only when NVRTC needs them; a header
// changed in between is an error of kind cache, never other bytes under the key.
TEST(HeaderStamps, AHeaderChangedBeforeTheBytesAreReadIsAnErrorNotStaleBytes) {
  test::TempDir dir;
  const std::string stamps = (dir.path() / "stamps").string();
  const test::ScopedVariable variable("CUJIT_HEADER_STAMPS", stamps);
  const World world(dir.path() / "w");
  settle();
  ASSERT_EQ(resolve_in_child(world, stamps).stored, 1);
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.options = {"-I", (world.root / "inc1").string(), "-I", (world.root / "inc2").string(),
                     "-I" + (world.root / "inc3").string()};
  const Program program(bytes_of(world.root / "k.cu"), (world.root / "k.cu").string());
  const std::size_t read_before = detail::HermeticInputs::files_read();
  const std::size_t stamps_before = detail::HermeticInputs::resolutions_from_stamps();
  (void)detail::HermeticInputs::resolve(program, options);  // reads, and stores its record
  const auto from_stamps = detail::HermeticInputs::resolve(program, options);
  ASSERT_EQ(detail::HermeticInputs::resolutions_from_stamps(), stamps_before + 1);
  const std::size_t read_after_first = detail::HermeticInputs::files_read();
  EXPECT_GT(read_after_first, read_before);
  const struct stat before = status_of(world.root / "local.h");
  write_bytes(world.root / "local.h", "#define LOCAL 8\n");
  restore_mtime(world.root / "local.h", before);
  try {
    (void)from_stamps.program();
    ADD_FAILURE() << "the changed header was compiled under the key of the old one";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::cache) << error.what();
  }
  const auto again = detail::HermeticInputs::resolve(program, options);
  EXPECT_NE(again.key_fields(), from_stamps.key_fields());
  // The fresh resolution compiles the header as it is now.
  bool new_bytes = false;
  for (const Header& header : again.options().headers) {
    new_bytes = new_bytes || header.content.find("#define LOCAL 8") != std::string::npos;
  }
  EXPECT_TRUE(new_bytes);
}

TEST(HeaderStamps, EveryCutOrExtendedRecordIsNoRecord) {
  detail::ResolutionRecord record;
  record.probes = {{"/a/b.h", true, 1, 2, 3, 4, 5}, {"/dev/null/x.h", false, 0, 0, 0, 0, 0}};
  record.nvrtc_options = {"-arch=sm_90", "-DX=1"};
  record.key_fields = {"k.cu", "source", "1:x", "/a/b.h", std::string(64, 'a'), ""};
  const std::string text = detail::encode_resolution(record);
  const auto whole = detail::decode_resolution(text);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->probes, record.probes);
  EXPECT_EQ(whole->key_fields, record.key_fields);
  EXPECT_EQ(whole->nvrtc_options, record.nvrtc_options);
  for (std::size_t cut = 0; cut < text.size(); ++cut) {
    EXPECT_FALSE(detail::decode_resolution(text.substr(0, cut))) << "cut at " << cut;
    // The end line put back after a cut elsewhere (at size - 4 that is the whole record).
    if (cut != text.size() - 4) {
      EXPECT_FALSE(detail::decode_resolution(text.substr(0, cut) + "end\n")) << "cut at " << cut;
    }
  }
  EXPECT_FALSE(detail::decode_resolution("1:x" + text));
}

// ---- the store is not trusted blindly ------------------------------------------------------

std::vector<fs::path> entries(const fs::path& store) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(store)) {
    if (entry.path().filename().string().front() != '.') out.push_back(entry.path());
  }
  return out;
}

TEST(HeaderStampsHostile, ADamagedForeignSharedOrLinkedEntryIsNeverTrusted) {
  test::TempDir dir;
  const fs::path stamps = dir.path() / "stamps";
  const World world(dir.path() / "w");
  const World other(dir.path() / "v");
  write_bytes(other.root / "local.h", "#define LOCAL 2\n");
  settle();
  const Resolved reference = resolve_in_child(world, "off");
  ASSERT_EQ(resolve_in_child(other, stamps.string()).stored, 1);
  const fs::path other_entry = entries(stamps).at(0);
  const std::string other_record = bytes_of(other_entry);
  ASSERT_EQ(resolve_in_child(world, stamps.string()).stored, 1);
  fs::path entry;
  for (const fs::path& candidate : entries(stamps)) {
    if (candidate != other_entry) entry = candidate;
  }
  ASSERT_FALSE(entry.empty());
  const std::string good = bytes_of(entry);
  const auto check = [&](const std::string& what, bool trusted) {
    SCOPED_TRACE(what);
    const Resolved got = resolve_in_child(world, stamps.string());
    EXPECT_EQ(got.key, reference.key) << got.output;
    EXPECT_EQ(got.program, reference.program);
    EXPECT_EQ(got.from_stamps, trusted ? 1 : 0) << got.output;
  };
  const auto restore = [&] {
    fs::remove(entry);
    write_bytes(entry, good);
    fs::permissions(entry, fs::perms::owner_read | fs::perms::owner_write);
    check("the good entry again", true);  // so that each refusal below is the damage's doing
  };
  check("the good entry", true);
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 8; ++i) {
    write_bytes(entry, good.substr(0, rng() % good.size()));
    check("cut short", false);
    restore();
  }
  write_bytes(entry, good + "1:x");
  check("extended", false);
  restore();
  write_bytes(entry, other_record);
  check("another compile's record under this name", false);
  restore();
  fs::permissions(entry, fs::perms::group_write, fs::perm_options::add);
  check("an entry others can write", false);
  restore();
  fs::rename(entry, dir.path() / "moved");
  fs::create_symlink(dir.path() / "moved", entry);
  check("a symbolic link for an entry", false);
  fs::remove(entry);
  fs::rename(dir.path() / "moved", entry);
  check("the entry back", true);
  fs::permissions(stamps, fs::perms::group_write, fs::perm_options::add);
  check("a store others can write", false);
  EXPECT_EQ(resolve_in_child(world, stamps.string()).stored, 0);
  fs::permissions(stamps, fs::perms::group_write, fs::perm_options::remove);
  check("the store private again", true);
}

}  // namespace
}  // namespace cujit
