#include "input_file.hpp"

#include <cerrno>
#include <cstring>

#include "support/file_io.hpp"

namespace cujit::cli {

// The reading itself is libcujit's (support/file_io.hpp: non-blocking open, checks on the
// descriptor, sized, a change while read caught); this adds the command's wording and its
// error type (exit 2).
std::string read_input_file(const std::filesystem::path& path, std::size_t limit) {
  const auto fail = [&](InputProblem problem, const std::string& why) { return InputFileError(problem, path, why); };
  detail::FileRead read = detail::read_regular_file(path, limit);
  const std::string error = read.error != 0 ? std::strerror(read.error) : "";
  switch (read.problem) {
    case detail::ReadProblem::none: return std::move(read.bytes);
    case detail::ReadProblem::missing: throw fail(InputProblem::missing, "does not exist");
    case detail::ReadProblem::not_regular: {
      const std::string kind = detail::kind_of_file(read.mode);
      throw fail(InputProblem::not_regular,
                 kind == "not a regular file" ? "is " + kind : "is " + kind + ", not a regular file");
    }
    case detail::ReadProblem::too_large:
      throw fail(InputProblem::too_large,
                 "is " + std::to_string(read.size) + " bytes, over the limit of " + std::to_string(limit));
    case detail::ReadProblem::changed: throw fail(InputProblem::changed, "changed size while being read");
    case detail::ReadProblem::unreadable:
      if (!read.opened && read.error == ENXIO) {
        throw fail(InputProblem::not_regular, "is a socket or device, not a regular file");
      }
      if (!read.opened) throw fail(InputProblem::unreadable, "cannot be opened: " + error);
      if (!read.examined) throw fail(InputProblem::unreadable, "cannot be examined: " + error);
      throw fail(InputProblem::unreadable, "cannot be read: " + error);
  }
  throw fail(InputProblem::unreadable, "cannot be read");
}

std::optional<std::string> read_input_file(const std::filesystem::path& path, std::string& why, std::size_t limit) {
  try {
    return read_input_file(path, limit);
  } catch (const InputFileError& error) {
    why = error.why();
    return std::nullopt;
  }
}

}  // namespace cujit::cli
