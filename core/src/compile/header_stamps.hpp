#pragma once
// Header stamps: what resolving a hermetic compile's includes gave, remembered across
// processes, so that a new process's cache hit resolves a CUB include tree (~630 headers,
// 7 MB) by `stat` calls alone, reading no header.
//
// Resolution (hermetic_inputs.hpp) is a function of its inputs (the program's name and
// text, the NVRTC options, the in-memory headers) and of what each path it probed held:
// nothing (missing, or no regular file), or a file with a stamp (device, inode, size,
// mtime ns, ctime ns), and a stamp names one content (stamp_store.hpp). So a record holds,
// under a digest of the inputs, every path probed with what it held, and the resolution's
// results (the key fields, the NVRTC options, whether it was cacheable and read the disk).
// A record is used only when every probe still holds, all of them probed again: a file
// edited (ctime moves, whatever mtime and size say), replaced by a rename (another inode),
// a path that found nothing and now finds a file, or a symlink retargeted, all make it
// unused. A resolution is recorded only when every file it found last changed more than
// 2 s before (stamp_store.hpp's rule), it was hermetic, and no path gave two answers
// during it. One entry per compile's inputs: one open and read per new process.
//
// The store: off unless CUJIT_HEADER_STAMPS says "on" ("header-stamps" beside the library
// digests, stamp_store.hpp) or names a directory ("off": none and no record in memory
// either), with the library digests' trust rules; at most 4096 entries of at most 32 MiB.
// Opt-in because a stat stamp does not always name the content (docs/cache.md).

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cujit/program.hpp"

namespace cujit::detail {

// One path the resolution probed, and what it held then.
struct HeaderProbe {
  std::string path;
  bool present = false;  // a regular file (symbolic links followed)
  std::uint64_t device = 0, inode = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const HeaderProbe&) const = default;
};

struct ResolutionRecord {
  std::vector<HeaderProbe> probes;
  std::string uncacheable;
  bool reads_disk = true;
  std::vector<std::string> nvrtc_options;
  std::vector<std::string> key_fields;
};

// Whether header stamps are on (CUJIT_HEADER_STAMPS is not "off" and the store is trusted).
bool header_stamps_on();

// The digest of everything a resolution reads besides the disk (and the working directory,
// so that two directories' records do not replace each other).
std::string resolution_inputs_key(const Program& program, const CompileOptions& options);

// The record for these inputs (this process's, else the store's), probes not yet checked.
std::shared_ptr<const ResolutionRecord> recall_resolution(const std::string& inputs_key);
// Whether every probe holds what it held (each path stat'ed again).
bool probes_hold(const ResolutionRecord& record);
void remember_resolution(const std::string& inputs_key, ResolutionRecord record);
// Drops a record found wrong (its results differ from a resolution that read the files).
void forget_resolution(const std::string& inputs_key);

// The record's text and back (nullopt for any text that is not a whole record): exposed
// for tests of damaged entries.
std::string encode_resolution(const ResolutionRecord& record);
std::optional<ResolutionRecord> decode_resolution(std::string_view text);

// Resolutions this process took from a record, and records it stored.
std::size_t resolutions_recalled() noexcept;
std::size_t resolutions_stored() noexcept;

}  // namespace cujit::detail
