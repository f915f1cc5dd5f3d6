#include "compile/header_manifest.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "cujit/cache_key.hpp"
#include "cujit/error.hpp"
#include "support/file_io.hpp"
#include "support/record.hpp"

namespace cujit::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::uint64_t header_limit = std::uint64_t{64} << 20;
constexpr const char* builtin_prefix = "__nv_nvrtc";

using Clock = std::chrono::system_clock;

Clock::time_point changed_at(const struct stat& info) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::seconds(info.st_ctim.tv_sec) + std::chrono::nanoseconds(info.st_ctim.tv_nsec)));
}

Stamp stamp_of(const struct stat& info) {
  return Stamp{info.st_dev, info.st_ino, info.st_size,
               info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec,
               info.st_ctim.tv_sec * 1000000000LL + info.st_ctim.tv_nsec};
}

// Digests of files already hashed in this process, reused while the file's stamp is
// unchanged and it had settled when hashed (a change within one timestamp tick would
// otherwise keep the same stamp).
struct DigestMemo {
  std::mutex mutex;
  std::map<std::string, std::pair<Stamp, std::string>> known;
};

DigestMemo& memo() {
  static DigestMemo instance;
  return instance;
}

struct FileState {
  std::string digest;
  Clock::time_point changed;
  Stamp stamp;
};

std::string encode_stamp(const Stamp& stamp) {
  return std::to_string(stamp.device) + " " + std::to_string(stamp.inode) + " " + std::to_string(stamp.size) + " " +
         std::to_string(stamp.mtime_ns) + " " + std::to_string(stamp.ctime_ns);
}

std::optional<Stamp> decode_stamp(const std::string& text) {
  unsigned long long device = 0, inode = 0;
  long long size = 0, mtime = 0, ctime = 0;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%llu %llu %lld %lld %lld%c", &device, &inode, &size, &mtime, &ctime, &extra) != 5) {
    return std::nullopt;
  }
  return Stamp{static_cast<dev_t>(device), static_cast<ino_t>(inode), static_cast<off_t>(size), mtime, ctime};
}

// The file's digest now, or nullopt when it is missing, not regular or unreadable.
std::optional<FileState> file_state(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  const Stamp stamp = stamp_of(info);
  const Clock::time_point changed = changed_at(info);
  {
    std::lock_guard<std::mutex> lock(memo().mutex);
    if (auto found = memo().known.find(path); found != memo().known.end() && found->second.first == stamp) {
      return FileState{found->second.second, changed, stamp};
    }
  }
  std::string bytes;
  try {
    bytes = read_file(path, "header manifest", header_limit);
  } catch (const Error&) {
    return std::nullopt;
  }
  FileState state{sha256_hex(bytes), changed, stamp};
  if (changed + settle_time < Clock::now()) {
    std::lock_guard<std::mutex> lock(memo().mutex);
    memo().known[path] = {stamp, state.digest};
  }
  return state;
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  const fs::path made = fs::absolute(path, ec);
  return ec ? path : made.lexically_normal().string();
}

// The include dir (absolute) a header was found under, first in -I order, and its
// relative name there.
std::optional<std::pair<std::size_t, std::string>> found_under(const std::string& header,
                                                               const std::vector<std::string>& dirs) {
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    std::string dir = dirs[i];
    if (!dir.empty() && dir.back() != '/') dir += '/';
    if (header.size() > dir.size() && header.compare(0, dir.size(), dir) == 0) {
      return std::make_pair(i, header.substr(dir.size()));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<std::string>> headers_in_trace(std::string_view trace_json) {
  const nlohmann::json trace = nlohmann::json::parse(trace_json, nullptr, false);
  if (trace.is_discarded() || !trace.is_object() || !trace.contains("traceEvents") ||
      !trace["traceEvents"].is_array()) {
    return std::nullopt;
  }
  std::vector<std::string> headers;
  std::set<std::string> seen;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (!event.is_object() || event.value("name", "") != "Processing Header File") continue;
    const auto args = event.find("args");
    if (args == event.end() || !args->is_object()) continue;
    const auto detail = args->find("detail");
    if (detail == args->end() || !detail->is_string()) continue;
    const std::string path = detail->get<std::string>();
    if (seen.insert(path).second) headers.push_back(path);
  }
  return headers;
}

std::optional<HeaderManifest> HeaderManifest::capture(const std::vector<std::string>& reported,
                                                      const std::vector<std::string>& in_memory_names,
                                                      const std::vector<std::string>& include_dirs,
                                                      Clock::time_point compile_start,
                                                      std::string& why_not) {
  std::vector<std::string> dirs;
  for (const std::string& dir : include_dirs) dirs.push_back(absolute(dir));
  HeaderManifest manifest;
  std::set<std::string> absent;
  for (const std::string& name : reported) {
    const bool in_memory =
        std::find(in_memory_names.begin(), in_memory_names.end(), name) != in_memory_names.end();
    if (in_memory || name.rfind(builtin_prefix, 0) == 0) continue;
    const std::string path = absolute(name);
    const auto state = file_state(path);
    if (!state) {
      why_not = "header '" + name + "' that the compile read is not a readable regular file now";
      return std::nullopt;
    }
    if (state->changed + settle_time > compile_start) {
      why_not = "header '" + path + "' changed less than " +
                std::to_string(settle_time.count()) + " s before the compile";
      return std::nullopt;
    }
    manifest.files_.push_back(File{path, state->digest, state->stamp});
    if (const auto under = found_under(path, dirs)) {
      for (std::size_t earlier = 0; earlier < under->first; ++earlier) {
        absent.insert((fs::path(dirs[earlier]) / under->second).lexically_normal().string());
      }
    }
  }
  manifest.absent_.assign(absent.begin(), absent.end());
  return manifest;
}

std::string HeaderManifest::encode() const {
  Record record;
  record["files"] = std::to_string(files_.size());
  for (std::size_t i = 0; i < files_.size(); ++i) {
    record["path." + std::to_string(i)] = files_[i].path;
    record["digest." + std::to_string(i)] = files_[i].digest;
    record["stamp." + std::to_string(i)] = encode_stamp(files_[i].stamp);
  }
  record["absent"] = std::to_string(absent_.size());
  for (std::size_t i = 0; i < absent_.size(); ++i) record["absent." + std::to_string(i)] = absent_[i];
  return encode_record(record);
}

std::optional<HeaderManifest> HeaderManifest::decode(std::string_view bytes) {
  const auto record = decode_record(bytes);
  if (!record) return std::nullopt;
  const auto count = [&](const char* field) -> std::optional<std::size_t> {
    const auto found = record->find(field);
    if (found == record->end() || found->second.empty() || found->second.size() > 9 ||
        found->second.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stoul(found->second);
  };
  const auto files = count("files");
  const auto absent = count("absent");
  if (!files || !absent) return std::nullopt;
  HeaderManifest manifest;
  for (std::size_t i = 0; i < *files; ++i) {
    const auto path = record->find("path." + std::to_string(i));
    const auto digest = record->find("digest." + std::to_string(i));
    const auto stamp = record->find("stamp." + std::to_string(i));
    if (path == record->end() || digest == record->end() || stamp == record->end()) return std::nullopt;
    const auto decoded = decode_stamp(stamp->second);
    if (!decoded) return std::nullopt;
    manifest.files_.push_back(File{path->second, digest->second, *decoded});
  }
  for (std::size_t i = 0; i < *absent; ++i) {
    const auto path = record->find("absent." + std::to_string(i));
    if (path == record->end()) return std::nullopt;
    manifest.absent_.push_back(path->second);
  }
  return manifest;
}

std::vector<std::string> HeaderManifest::key_fields() const {
  std::vector<std::string> fields;
  for (const File& file : files_) {
    fields.push_back("file");
    fields.push_back(file.path);
    fields.push_back(file.digest);
  }
  for (const std::string& path : absent_) {
    fields.push_back("absent");
    fields.push_back(path);
  }
  return fields;
}

std::optional<std::vector<std::string>> HeaderManifest::current_key_fields() const {
  std::vector<std::string> fields;
  for (const File& file : files_) {
    fields.push_back("file");
    fields.push_back(file.path);
    // The stamp it had when captured, which was after it settled: content cannot change
    // without changing the stamp (ctime cannot be set back), so the recorded digest stands
    // and the file is not read. One stat per header in a new process.
    struct stat info {};
    if (::stat(file.path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && stamp_of(info) == file.stamp) {
      fields.push_back(file.digest);
      continue;
    }
    const auto state = file_state(file.path);
    if (!state) return std::nullopt;
    fields.push_back(state->digest);
  }
  for (const std::string& path : absent_) {
    if (exists(path)) return std::nullopt;
    fields.push_back("absent");
    fields.push_back(path);
  }
  return fields;
}

}  // namespace cujit::detail
