// Library identities (support/library_identity.hpp), which go into every cache key: the
// format keys have always used (so an unchanged toolkit keeps its cache), each path
// resolved and each file read once per process, and the library never loaded to name it.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "support/fixtures.hpp"
#include "support/library_identity.hpp"
#include "support/vendor_library.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

// ---- the format as keys have always written it, computed the plain way -------------------

std::string reference_description(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "unknown:stat failed for " + path.string();
  const long long mtime_ns = static_cast<long long>(info.st_mtim.tv_sec) * 1000000000LL + info.st_mtim.tv_nsec;
  return "path=" + path.string() + ";size=" + std::to_string(info.st_size) + ";mtime=" + std::to_string(mtime_ns);
}

// The real file, then each regular file beside it whose name starts with `prefix` (none
// when null), by name.
std::string reference_identity(const fs::path& named, const char* prefix) {
  const fs::path real = fs::canonical(named);
  std::string identity = reference_description(real);
  if (prefix == nullptr) return identity;
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(real.parent_path())) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (fs::is_regular_file(real.parent_path() / name)) identity += "; " + reference_description(real.parent_path() / name);
  }
  return identity;
}

// The file a library is chosen from: the variable when set (absolute), else the build's.
fs::path chosen_library(const char* variable, const char* built) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value == '/' ? fs::path(value) : fs::path(built);
}

TEST(LibraryIdentity, TheInstalledToolkitIsNamedInTheFormatKeysHaveAlwaysUsed) {
  const fs::path nvrtc = chosen_library("CUJIT_NVRTC_LIBRARY", CUJIT_TEST_NVRTC_LIBRARY);
  const fs::path nvjitlink = chosen_library("CUJIT_NVJITLINK_LIBRARY", CUJIT_TEST_NVJITLINK_LIBRARY);
  if (!fs::exists(nvrtc) || !fs::exists(nvjitlink)) {
    GTEST_SKIP() << "the toolkit's files are gone (" << nvrtc << ", " << nvjitlink
                 << "): the identities come from the loaded libraries, not named here";
  }
  EXPECT_EQ(nvrtc_identity(), "nvrtc: " + reference_identity(nvrtc, "libnvrtc-builtins"));
  EXPECT_EQ(nvjitlink_identity(), "nvjitlink: " + reference_identity(nvjitlink, nullptr));
  EXPECT_NE(nvrtc_identity().find("libnvrtc-builtins"), std::string::npos) << nvrtc_identity();
}

// A library that must never be loaded: naming it is all the test asks.
struct NeverLoadedApi {
  int unused = 0;
};
bool fake_library_loaded = false;
void record_load(NeverLoadedApi&, detail::OpenedLibrary&, const detail::VendorLibrarySpec&,
                 const detail::LibraryRequest&) {
  fake_library_loaded = true;
}

TEST(LibraryIdentity, EachPathIsResolvedOnceAndEachFileStatedOnceWithoutLoading) {
  const test::TempDir dir;
  const fs::path real = dir.write("libfake.so.1.2", "not a library");
  fs::create_symlink(real.filename(), dir.path() / "libfake.so");
  const fs::path builtins = dir.write("libfake-builtins.so.1.2", "builtins");
  fs::create_symlink(builtins.filename(), dir.path() / "libfake-builtins.so");
  fs::create_directory(dir.path() / "libfake-builtins.d");  // stated, then left out: not a file
  (void)dir.write("libother.so", "unrelated");
  const std::string built = (dir.path() / "libfake.so").string();
  const detail::VendorLibrarySpec spec{"Fake", "CUJIT_TEST_FAKE_LIBRARY_NEVER_SET", built.c_str(), "libfake.so",
                                       "libfake-builtins"};
  detail::LazyLibrary<NeverLoadedApi> library(spec, detail::VendorLibrary::nvrtc, record_load);
  const auto entry = [](const NeverLoadedApi& api) { return static_cast<const void*>(&api.unused); };

  const std::size_t resolved = detail::identity_paths_resolved();
  const std::size_t stated = detail::identity_files_stated();
  const std::string identity = library.identity(entry);
  EXPECT_EQ(identity, reference_identity(built, "libfake-builtins"));
  EXPECT_NE(identity.find("libfake-builtins.so;"), std::string::npos) << identity;
  EXPECT_EQ(identity.find("libfake-builtins.d"), std::string::npos) << identity;
  EXPECT_EQ(detail::identity_paths_resolved() - resolved, 1u) << "choosing the file and naming it share one resolution";
  EXPECT_EQ(detail::identity_files_stated() - stated, 1u + 3u) << "the library once, each of its 3 siblings once";

  EXPECT_EQ(library.identity(entry), identity);
  EXPECT_EQ(detail::file_identity(built), reference_description(real)) << "the remote tier's name for it";
  EXPECT_EQ(detail::identity_paths_resolved() - resolved, 1u) << "asked again: answered from memory";
  EXPECT_EQ(detail::identity_files_stated() - stated, 4u) << "asked again: answered from memory";
  EXPECT_FALSE(fake_library_loaded) << "naming a library that exists never loads it";
}

}  // namespace
}  // namespace cujit
