#pragma once
// Reading a file the command did not write in this run (a shard's results, a suite's JUnit
// XML): only a regular file, and only up to a size limit, so that a FIFO, a device or a
// runaway file cannot hang the command or exhaust its memory.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace cujit::cli {

inline constexpr std::size_t input_file_limit = std::size_t{256} << 20;

// The file's bytes, or nullopt with `why` saying what is wrong ("does not exist", "is not
// a regular file", "is N bytes, over the limit of M", the read error).
std::optional<std::string> read_input_file(const std::filesystem::path& path, std::string& why,
                                           std::size_t limit = input_file_limit);

}  // namespace cujit::cli
