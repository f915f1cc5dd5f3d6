// Library identities (support/library_identity.hpp), which go into every cache key: the
// file's stamp (a swapped copy with its mtime restored is another library), the companion
// the loader would pick (LD_LIBRARY_PATH, then ld.so.cache, then beside the library), each
// path resolved and each file read once per process, and the library never loaded to name it.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "support/fixtures.hpp"
#include "support/library_identity.hpp"
#include "support/vendor_library.hpp"
#include "support/file_description.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

// ---- the format as keys have always written it, computed the plain way -------------------

std::string reference_description(const fs::path& path) { return test::stat_description(path); }

// The directories the loader searches for a bare name, found the plain way: LD_LIBRARY_PATH,
// then what `ldconfig -p` says its cache maps `prefix` names to.
std::vector<fs::path> loader_directories(const char* prefix) {
  std::vector<fs::path> out;
  if (const char* path = std::getenv("LD_LIBRARY_PATH")) {
    std::string rest = path;
    for (std::size_t at = 0; at <= rest.size();) {
      const std::size_t end = std::min(rest.find_first_of(":;", at), rest.size());
      out.emplace_back(end == at ? "." : rest.substr(at, end - at));
      at = end + 1;
    }
  }
  if (FILE* pipe = ::popen("ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, pipe) != nullptr) {
      std::string text = line;
      const std::size_t arrow = text.find(" => ");
      if (text.find(prefix) == std::string::npos || arrow == std::string::npos) continue;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      out.push_back(fs::path(text.substr(arrow + 4)).parent_path());
    }
    ::pclose(pipe);
  }
  return out;
}

// The real file, then each regular file whose name starts with `prefix` (none when null) in
// each directory the loader searches, then beside the library, by name.
std::string reference_identity(const fs::path& named, const char* prefix) {
  const fs::path real = fs::canonical(named);
  std::string identity = reference_description(real);
  if (prefix == nullptr) return identity;
  std::vector<fs::path> directories = loader_directories(prefix);
  directories.push_back(real.parent_path());
  std::vector<fs::path> seen;
  for (const fs::path& directory : directories) {
    if (std::find(seen.begin(), seen.end(), directory) != seen.end()) continue;
    seen.push_back(directory);
    std::vector<std::string> names;
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
      if (entry.path().filename().string().rfind(prefix, 0) == 0) names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      if (fs::is_regular_file(directory / name)) identity += "; " + reference_description((directory / name).string());
    }
  }
  return identity;
}

// The file a library is chosen from: the variable when set (absolute), else the build's.
fs::path chosen_library(const char* variable, const char* built) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value == '/' ? fs::path(value) : fs::path(built);
}

TEST(LibraryIdentity, TheInstalledToolkitIsNamedWithTheCompanionTheLoaderPicks) {
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
