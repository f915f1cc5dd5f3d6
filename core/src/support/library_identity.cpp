#include "support/library_identity.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <mutex>

namespace cujit::detail {
namespace fs = std::filesystem;
namespace {

// Path, size and modification time identify an installed library file: a toolkit update
// or reinstall changes at least one. Hashing the bytes would be stronger but costs
// ~0.3 s for NVRTC's 100 MB, paid by every new process.
std::string describe_file(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "unknown:stat failed for " + path.string();
  const long long mtime_ns = static_cast<long long>(info.st_mtim.tv_sec) * 1000000000LL +
                             info.st_mtim.tv_nsec;
  return "path=" + path.string() + ";size=" + std::to_string(info.st_size) +
         ";mtime=" + std::to_string(mtime_ns);
}

// realpath(3) and readdir(3) rather than std::filesystem: these run once per process on
// the way to the first cache hit, where std::filesystem's first use cost ~100 us against
// ~10 us for the same system calls made directly.
fs::path real_path(const fs::path& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? fs::path(resolved) : path;
}

std::optional<fs::path> object_path(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return std::nullopt;
  return real_path(info.dli_fname);
}

std::vector<std::string> siblings_of(const fs::path& path, const std::string& prefix) {
  const fs::path directory = path.parent_path();
  std::vector<std::string> names;
  if (const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(directory.c_str()), ::closedir); dir) {
    while (const dirent* entry = ::readdir(dir.get())) {
      if (std::string_view(entry->d_name).substr(0, prefix.size()) == prefix) names.emplace_back(entry->d_name);
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const std::string& name : names) {
    struct stat info {};
    const fs::path sibling = directory / name;
    if (::stat(sibling.c_str(), &info) == 0 && S_ISREG(info.st_mode)) out.push_back(describe_file(sibling));
  }
  return out;
}

}  // namespace

std::string library_identity(const void* symbol) {
  static std::mutex mutex;
  static std::map<const void*, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = known.find(symbol); found != known.end()) return found->second;
  const auto path = object_path(symbol);
  std::string identity = path ? describe_file(*path) : "unknown:dladdr found no object";
  known.emplace(symbol, identity);
  return identity;
}

std::vector<std::string> sibling_library_identities(const void* symbol, const std::string& prefix) {
  const auto path = object_path(symbol);
  if (!path) return {};
  return siblings_of(*path, prefix);
}

std::string file_identity(const std::string& path) { return describe_file(real_path(path)); }

std::vector<std::string> sibling_file_identities(const std::string& path, const std::string& prefix) {
  return siblings_of(real_path(path), prefix);
}

}  // namespace cujit::detail
