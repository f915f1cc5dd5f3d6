#pragma once
// The preprocessor's view of a file's dependencies, read without running it: every
// `#include` / `#include_next` directive and every `__has_include` / `__has_include_next`
// operand (directly, or through a function-like macro that wraps `__has_include`, as CCCL's
// `_CCCL_HAS_INCLUDE(<x>)` does), with the byte range that names it. The lexer follows
// translation phases 1-3 far enough for that: backslash-newline splices, comments, string,
// character and raw string literals, digit separators, `%:` for `#`. Conditionals are not
// evaluated: every directive counts, so the set is a superset of what a compile reads.
//
// Used by the hermetic compile (hermetic_inputs.hpp) to resolve includes itself and rewrite
// each operand to the in-memory header it resolved to.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cujit::detail {

enum class IncludeKind { include, include_next, has_include, has_include_next };

struct IncludeSite {
  IncludeKind kind = IncludeKind::include;
  bool angle = false;   // <name> rather than "name"
  std::string operand;  // the name between the delimiters, splices removed
  // The range of the original text to replace when the site is rewritten: for a directive
  // from its keyword (`include`, `include_next`) to the end of its operand; for a
  // `__has_include` operand, the operand with its delimiters.
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t splices = 0;  // backslash-newlines inside [begin, end)
};

// `#include TOKENS` where TOKENS is no literal: the preprocessor expands the macros first.
struct MacroInclude {
  IncludeKind kind = IncludeKind::include;
  std::string tokens;
};

struct IncludeScan {
  std::vector<IncludeSite> sites;            // in text order
  std::vector<MacroInclude> macro_includes;  // `#include MACRO`, in text order
  std::vector<std::string> computed;         // other operands that are not literals
  // Every object-like `#define NAME body` (bodies up to 256 bytes), to expand macro includes.
  std::vector<std::pair<std::string, std::string>> object_macros;
  std::vector<std::string> temporal_macros;  // __TIME__, __DATE__, __TIMESTAMP__ where used
  // Function-like macros defined here whose body asks `__has_include(parameter)`, and
  // (defined macro, macro it calls with an identifier argument) pairs, from which the
  // caller finds wrappers of wrappers.
  std::vector<std::string> has_include_wrappers;
  std::vector<std::pair<std::string, std::string>> forwards;
};

// `wrappers`: names of function-like macros (from any file of the compile) whose use
// `NAME(<x>)` / `NAME("x")` is a `__has_include` of its operand; a use with any other
// argument outside a `#define` is a computed operand.
IncludeScan scan_includes(std::string_view text, const std::vector<std::string>& wrappers = {});

}  // namespace cujit::detail
