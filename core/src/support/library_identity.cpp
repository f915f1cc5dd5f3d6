#include "support/library_identity.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "cujit/error.hpp"
#include "support/file_io.hpp"

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

// Path, size, modification and change time, device and inode identify an installed
// library file: a toolkit update, a reinstall or a copy swapped in changes at least one, and
// no tool sets the change time back (restoring an mtime with touch moves it). Hashing the
// bytes would also share identical copies at two paths, but costs ~0.3 s for NVRTC's 100 MB
// in every new process.
std::string describe_file(const std::string& path, const std::optional<struct stat>& status) {
  if (!status) return "unknown:stat failed for " + path;
  const auto ns = [](const timespec& t) { return std::to_string(static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec); };
  return "path=" + path + ";size=" + std::to_string(status->st_size) + ";mtime=" + ns(status->st_mtim) +
         ";ctime=" + ns(status->st_ctim) + ";device=" + std::to_string(status->st_dev) +
         ";inode=" + std::to_string(status->st_ino);
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

// The paths /etc/ld.so.cache maps names starting with `prefix` to (glibc's
// "glibc-ld.so.cache1.1" format: a header, 24-byte entries of flags, key and value offsets,
// then the strings, offsets counted from the header). Empty when there is no such cache.
std::vector<std::string> ld_cache_paths(std::string_view prefix) {
  std::vector<std::string> out;
  std::string bytes;
  try {
    bytes = read_file("/etc/ld.so.cache", "library identity (ld.so.cache)", std::uint64_t{64} << 20);
  } catch (const Error&) {
    return out;
  }
  static constexpr std::string_view magic = "glibc-ld.so.cache1.1";
  std::size_t header = bytes.find(magic);
  if (header == std::string::npos) return out;
  const auto u32 = [&](std::size_t at) -> std::optional<std::uint32_t> {
    if (at + 4 > bytes.size()) return std::nullopt;
    std::uint32_t value = 0;
    std::memcpy(&value, bytes.data() + at, 4);
    return value;
  };
  const auto count = u32(header + magic.size());
  if (!count) return out;
  constexpr std::size_t header_size = 48, entry_size = 24;
  const auto string_at = [&](std::uint32_t offset) -> std::string_view {
    const std::size_t at = header + offset;
    if (at >= bytes.size()) return {};
    const std::size_t end = bytes.find('\0', at);
    return std::string_view(bytes).substr(at, (end == std::string::npos ? bytes.size() : end) - at);
  };
  for (std::uint32_t i = 0; i < *count && i < 100000; ++i) {
    const std::size_t entry = header + header_size + std::size_t{i} * entry_size;
    const auto key = u32(entry + 4), value = u32(entry + 8);
    if (!key || !value) break;
    if (string_at(*key).starts_with(prefix)) out.emplace_back(string_at(*value));
  }
  return out;
}

// The directories dlopen of a bare name searches first, before its cache: LD_LIBRARY_PATH
// (ignored for set-user-ID programs, as the loader does).
std::vector<std::string> library_path_directories() {
  std::vector<std::string> out;
  const char* value = ::secure_getenv("LD_LIBRARY_PATH");
  if (value == nullptr) return out;
  std::string current;
  for (const char* c = value;; ++c) {
    if (*c == ':' || *c == ';' || *c == '\0') {
      out.push_back(current.empty() ? "." : current);
      current.clear();
      if (*c == '\0') break;
    } else {
      current.push_back(*c);
    }
  }
  return out;
}

// Descriptions of the regular files in `directory` whose names start with `prefix`, in
// order of name: one stat each, whose answer both filters and describes.
std::vector<std::string> files_in(const std::string& directory, std::string_view prefix) {
  std::vector<std::string> names;
  if (const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(directory.c_str()), ::closedir); dir) {
    while (const dirent* entry = ::readdir(dir.get())) {
      if (std::string_view(entry->d_name).starts_with(prefix)) names.emplace_back(entry->d_name);
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const std::string sibling = (directory == "/" ? "/" : directory + "/") + name;
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
  if (siblings == nullptr) return identity;
  // The library loads its companion by bare name (NVRTC: dlopen("libnvrtc-builtins.so.13.0"),
  // no RUNPATH), so the loader picks it: from LD_LIBRARY_PATH first, then from its cache, and
  // the one beside the library is only found by that route. Every candidate on that search,
  // in its order, is named: a change to any of them is a change of what may be loaded.
  std::vector<std::string> directories = library_path_directories();
  for (const std::string& path : ld_cache_paths(siblings)) {
    const std::size_t slash = path.rfind('/');
    if (slash != std::string::npos) directories.push_back(slash == 0 ? "/" : path.substr(0, slash));
  }
  const std::size_t slash = file.path.rfind('/');
  if (slash != std::string::npos) directories.push_back(slash == 0 ? "/" : file.path.substr(0, slash));
  std::vector<std::string> seen;
  for (const std::string& directory : directories) {
    if (std::find(seen.begin(), seen.end(), directory) != seen.end()) continue;
    seen.push_back(directory);
    for (const std::string& candidate : files_in(directory, siblings)) identity += "; " + candidate;
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
