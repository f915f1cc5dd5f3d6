#include "support/library_identity.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace cujit::detail {
namespace {

std::atomic<std::size_t> paths_resolved{0};
std::atomic<std::size_t> files_stated{0};

std::optional<struct stat> status_of(const std::string& path) {
  files_stated.fetch_add(1, std::memory_order_relaxed);
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return info;
}

// Path, size and modification time identify an installed library file: a toolkit update
// or reinstall changes at least one. Hashing the bytes would be stronger but costs
// ~0.3 s for NVRTC's 100 MB, paid by every new process.
std::string describe_file(const std::string& path, const std::optional<struct stat>& status) {
  if (!status) return "unknown:stat failed for " + path;
  const long long mtime_ns = static_cast<long long>(status->st_mtim.tv_sec) * 1000000000LL +
                             status->st_mtim.tv_nsec;
  return "path=" + path + ";size=" + std::to_string(status->st_size) + ";mtime=" + std::to_string(mtime_ns);
}

// realpath(3), readdir(3) and string joins rather than std::filesystem: these run once per
// process on the way to the first cache hit, where std::filesystem's first use cost
// ~100 us against ~10 us for the same system calls made directly.
ResolvedFile resolve_uncached(const std::string& path) {
  paths_resolved.fetch_add(1, std::memory_order_relaxed);
  char resolved[PATH_MAX];
  ResolvedFile file{::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path, std::nullopt};
  file.status = status_of(file.path);
  return file;
}

// Descriptions of the regular files in the directory of `path` whose names start with
// `prefix`, in order of name: one stat each, whose answer both filters and describes.
std::vector<std::string> siblings_of(const std::string& path, std::string_view prefix) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string directory = slash == 0 ? "/" : path.substr(0, slash);
  std::vector<std::string> names;
  if (const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(directory.c_str()), ::closedir); dir) {
    while (const dirent* entry = ::readdir(dir.get())) {
      if (std::string_view(entry->d_name).starts_with(prefix)) names.emplace_back(entry->d_name);
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const std::string sibling = (slash == 0 ? "/" : directory + "/") + name;
    const std::optional<struct stat> status = status_of(sibling);
    if (status && S_ISREG(status->st_mode)) out.push_back(describe_file(sibling, status));
  }
  return out;
}

std::optional<std::string> object_path(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return std::nullopt;
  return std::string(info.dli_fname);
}

}  // namespace

ResolvedFile resolve_file(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, ResolvedFile, std::less<>> known;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = known.find(path); found != known.end()) return found->second;
  return known.emplace(path, resolve_uncached(path)).first->second;
}

std::string file_identity(const ResolvedFile& file, const char* siblings) {
  std::string identity = describe_file(file.path, file.status);
  if (siblings != nullptr) {
    for (const std::string& sibling : siblings_of(file.path, siblings)) identity += "; " + sibling;
  }
  return identity;
}

std::string file_identity(const std::string& path) { return file_identity(resolve_file(path), nullptr); }

std::string library_identity(const void* symbol, const char* siblings) {
  const std::optional<std::string> path = object_path(symbol);
  return path ? file_identity(resolve_file(*path), siblings) : "unknown:dladdr found no object";
}

std::string library_identity(const void* symbol) {
  static std::mutex mutex;
  static std::map<const void*, std::string> known;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = known.find(symbol); found != known.end()) return found->second;
  return known.emplace(symbol, library_identity(symbol, nullptr)).first->second;
}

std::size_t identity_paths_resolved() noexcept { return paths_resolved.load(std::memory_order_relaxed); }
std::size_t identity_files_stated() noexcept { return files_stated.load(std::memory_order_relaxed); }

}  // namespace cujit::detail
