#pragma once
// The headers one NVRTC compile read from the file system, by content. NVRTC 13 has no
// dependency output, but its time trace (--fdevice-time-trace) names every header file the
// front end processed, resolved to its path: that list, with each file's SHA-256, is what
// keys the compile's result (compile_cache.cpp). In-memory headers are keyed by content
// elsewhere and NVRTC's built-in headers belong to the NVRTC identity.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

// The header paths a time trace names ("Processing Header File" events), in order, each
// once. Nullopt when the text is not such a trace.
std::optional<std::vector<std::string>> headers_in_trace(std::string_view trace_json);

// A file whose status changed this recently (ctime, which no tool can set back) may be
// changing still: its digest is not trusted for caching. 1 s covers the coarsest
// timestamp clocks of local and network file systems.
inline constexpr std::chrono::seconds settle_time{1};

// What identifies a file's content without reading it: device, inode, size, mtime and
// ctime (nanoseconds). Any write or replacement changes it.
struct Stamp {
  dev_t device;
  ino_t inode;
  off_t size;
  long long mtime_ns;
  long long ctime_ns;
  friend bool operator==(const Stamp&, const Stamp&) = default;
};

class HeaderManifest {
 public:
  // The manifest of a compile that started at `compile_start`: `reported` from its trace,
  // minus in-memory header names and NVRTC's built-ins; every other path must be a
  // readable regular file that settled before the compile started. For each header under
  // one of `include_dirs` (in -I order), the same relative path under every earlier
  // include dir is recorded as absent: a file appearing there would shadow it. Nullopt,
  // with `why_not`, when the compile cannot be keyed by what it read.
  static std::optional<HeaderManifest> capture(const std::vector<std::string>& reported,
                                               const std::vector<std::string>& in_memory_names,
                                               const std::vector<std::string>& include_dirs,
                                               std::chrono::system_clock::time_point compile_start,
                                               std::string& why_not);
  static std::optional<HeaderManifest> decode(std::string_view bytes);
  std::string encode() const;

  // Key fields of the headers as captured ("file", path, digest / "absent", path).
  std::vector<std::string> key_fields() const;
  // The same fields for the files as they are now; nullopt when a file is gone or
  // unreadable, or an absent path now exists (the compile would read something else).
  std::optional<std::vector<std::string>> current_key_fields() const;

  std::size_t file_count() const noexcept { return files_.size(); }

 private:
  struct File {
    std::string path;
    std::string digest;
    Stamp stamp;  // when captured
  };
  std::vector<File> files_;
  std::vector<std::string> absent_;
};

}  // namespace cujit::detail
