#pragma once
// A directory of small records remembered across processes under file stamps: the one
// store implementation behind the library digests (library_content.hpp) and the header
// stamps of hermetic compiles (compile/header_stamps.hpp).
//
// Where: the kind's environment variable (a directory; "off": none), else
// $CUJIT_CACHE_DIR/<subdirectory>, else $XDG_CACHE_HOME/cujit/<subdirectory>, else
// $HOME/.cache/cujit/<subdirectory>; created (mode 0700) when missing. Trust: the directory
// and each entry must be a real directory / regular file of this user's that no one else
// can write, or nothing is read from it; an entry begins with a head its reader names (a
// magic line and what the entry is for), so an entry renamed, damaged or written for
// something else is ignored. Entries are written whole to a private file and renamed into
// place: a reader sees an old entry, a new one, or none. The number of entries is bounded:
// past the bound, the oldest (by modification time) are removed.
//
// What may be remembered under a stamp: a stamp (device, inode, size, mtime, ctime) names
// one content because writing a file moves its ctime, which no tool can set back; except
// within a coarse clock's tick, so a file changed within the last 2 s
// (`changed_too_recently`) is never remembered.

#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cujit::detail {

struct StampStoreKind {
  const char* environment;   // e.g. "CUJIT_LIBRARY_DIGESTS"
  const char* subdirectory;  // e.g. "library-digests"
  std::size_t max_entries;   // past this, the oldest entries are removed
  std::size_t max_entry_bytes;
  // Off unless the variable names a directory or says "on" (the default place then).
  bool opt_in = false;
};

class StampStore {
 public:
  // The store of this kind when it is on and trusted (checked once per directory and
  // process); nullopt otherwise.
  static std::optional<StampStore> open(const StampStoreKind& kind);

  // The entry's text after `head` when the entry is trusted, at most max_entry_bytes long
  // and begins with exactly `head`; nullopt otherwise.
  std::optional<std::string> read(const std::string& name, std::string_view head) const;
  // Writes `text` as the entry `name` (failures only cost a later process the work).
  void write(const std::string& name, std::string_view text) const;
  // Removes the entry (one found wrong by its reader).
  void remove(const std::string& name) const;

  const std::string& directory() const noexcept { return directory_; }

 private:
  StampStore(std::string directory, const StampStoreKind& kind) : directory_(std::move(directory)), kind_(&kind) {}
  void bound() const;

  std::string directory_;
  const StampStoreKind* kind_;
};

// Whether a file with this status changed (mtime or ctime) within the last 2 s: then it is
// not remembered under its stamp.
bool changed_too_recently(const struct stat& info);
bool changed_too_recently(long long mtime_ns, long long ctime_ns);

}  // namespace cujit::detail
