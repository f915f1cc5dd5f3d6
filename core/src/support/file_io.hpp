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

// A whole regular file as bytes. The file is opened without blocking and checked on the
// open descriptor (so a FIFO, device or socket never blocks the reader and cannot be
// swapped in between a check and the read), sized before reading and read to at most
// `limit` bytes. Throws Error(io) naming the path and `component` when the path is
// missing, not a regular file, larger than `limit`, or unreadable.
std::string read_file(const std::filesystem::path& path, const std::string& component,
                      std::uint64_t limit = default_read_limit);

}  // namespace cujit::detail
