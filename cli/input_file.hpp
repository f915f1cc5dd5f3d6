#pragma once
// Reading a file the command did not write in this run (a shard's results, a suite's JUnit
// XML): opened non-blocking and checked on the descriptor it is read from (a regular file,
// up to a size limit), so that a FIFO, a device or a runaway file cannot hang the command
// or exhaust its memory, not even one swapped in for a regular file while it is checked.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "output.hpp"

namespace cujit::cli {

inline constexpr std::size_t input_file_limit = std::size_t{256} << 20;

// What is wrong with an input file.
enum class InputProblem { missing, not_regular, too_large, unreadable, changed };

// A file that cannot be read as input: CliError (exit 2) with its problem and path.
class InputFileError : public CliError {
 public:
  InputFileError(InputProblem problem, std::filesystem::path path, const std::string& why)
      : CliError(shown(path.string()) + " " + why), problem_(problem), path_(std::move(path)), why_(why) {}
  InputProblem problem() const noexcept { return problem_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  // What is wrong, without the path ("is a FIFO, not a regular file").
  const std::string& why() const noexcept { return why_; }

 private:
  InputProblem problem_;
  std::filesystem::path path_;
  std::string why_;
};

// The file's bytes; throws InputFileError for a file that is missing, not a regular file
// (a FIFO, a device, a directory), over `limit` bytes, unreadable, or changing size.
std::string read_input_file(const std::filesystem::path& path, std::size_t limit = input_file_limit);

// The same as a value: nullopt with `why` saying what is wrong ("does not exist", "is a
// FIFO, not a regular file", "is N bytes, over the limit of M", the read error).
std::optional<std::string> read_input_file(const std::filesystem::path& path, std::string& why,
                                           std::size_t limit = input_file_limit);

}  // namespace cujit::cli
