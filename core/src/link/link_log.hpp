#pragma once
// What a linker log says, read without regular expressions: logs are unbounded text (a
// mangled symbol can be tens of thousands of characters) and std::regex recurses per
// character. Each reader is one linear scan.

#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

// A symbol a log line names, and the input it names with "in '<input>'" after it (empty
// when the line names none).
struct LogMention {
  std::string symbol;
  std::string input;
};

// Every "<phrase> '<symbol>'" in `log` for any of `phrases`, in order of appearance.
std::vector<LogMention> mentions(std::string_view log, const std::vector<std::string_view>& phrases);

// Symbols the linker could not resolve: nvJitLink's "Undefined reference to 'f'" and
// ptxas' "Unresolved extern function 'f'" / "Unresolved extern variable 'v'"; each once,
// sorted.
std::vector<std::string> unresolved_symbols(std::string_view log);
// Symbols defined more than once ("Multiple definition of 'f'", "Linking globals named
// 'g'"); each once, sorted.
std::vector<std::string> duplicate_symbols(std::string_view log);

// A declaration whose prototype does not match the definition: nvJitLink's "Prototype
// doesn't match for 'f' in '<input>', first defined in '<input>'" (written only to stderr
// unless the link is LTO).
struct PrototypeMismatch {
  std::string symbol;
  std::string input;         // where the mismatch was found
  std::string defined_in;    // "first defined in"; empty when the line names none
};
std::vector<PrototypeMismatch> prototype_mismatches(std::string_view log);

// Whether a line of `log` is an error ("error   : ...", as nvJitLink and ptxas write them).
bool has_error_line(std::string_view log) noexcept;

}  // namespace cujit::detail
