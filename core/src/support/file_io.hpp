#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include <sys/types.h>

namespace cujit::detail {

// "a directory", "a FIFO", "a character device"... for messages about a file that is not
// a regular one (st_mode from stat / fstat / lstat).
std::string kind_of_file(mode_t mode);

// Files cujit reads are at most this large unless a caller says otherwise.
inline constexpr std::uint64_t default_read_limit = std::uint64_t{1} << 30;

// What went wrong reading a file (read_regular_file).
enum class ReadProblem { none, missing, not_regular, too_large, unreadable, changed };

// A checked read as a value, for callers that word their own errors (the cujit command).
struct FileRead {
  std::string bytes;  // what was read (for `changed`: up to the size it had when sized)
  ReadProblem problem = ReadProblem::none;
  int error = 0;      // errno of the failed open / fstat / read (missing, unreadable)
  mode_t mode = 0;    // the file's mode (not_regular)
  std::uint64_t size = 0;  // its size when sized (too_large, changed)
  bool opened = false;     // unreadable: the open succeeded and a later call failed
  bool examined = false;   // unreadable: fstat succeeded (the read failed)
};

// The reader of read_file as a value: opened non-blocking, checked on the descriptor,
// sized, read to one byte past its size so that a file that grew or shrank while read is
// `changed`, never silently cut.
FileRead read_regular_file(const std::filesystem::path& path, std::uint64_t limit);

// A whole regular file as bytes. The file is opened without blocking and checked on the
// open descriptor (so a FIFO, device or socket never blocks the reader and cannot be
// swapped in between a check and the read), sized before reading and read to at most
// `limit` bytes. Throws Error(io) naming the path and `component` when the path is
// missing, not a regular file, larger than `limit`, or unreadable.
std::string read_file(const std::filesystem::path& path, const std::string& component,
                      std::uint64_t limit = default_read_limit);

}  // namespace cujit::detail
