#pragma once
// Reading PTX declarations as tokens. PTX code is read as the sequence of its tokens:
// comments (// to the end of the line, /* to */) and string literals ("...", where a
// backslash escapes the next character) count as white space, so that names inside them
// never match; a token is a run of ASCII letters, digits, _ $ and . (a leading % joins the
// run after it), or any other single character. Matches are token-exact. Neither scan
// copies the PTX or tokenizes more of it than the directives it looks for (about 3 us for
// NRT's 23 KB of PTX, against 140 us when every token was listed).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

// Names of the functions PTX declares `.extern .func` (with or without a return parameter
// list, over any lines), each once, in order of first appearance.
std::vector<std::string> extern_functions(std::string_view ptx);
// Names of the functions and kernels PTX defines with external linkage (.visible .func,
// .visible .entry; .weak definitions are not counted), each once.
std::vector<std::string> visible_functions(std::string_view ptx);

// One parameter (or return value) of a function prototype: its PTX type token (".b32",
// ".u64", ".f32", ...) and its size in bytes (an array `.b8 p[16]` is 16; 0 when the
// type is not one PTX defines a width for).
struct PtxParameter {
  std::string type;
  std::uint64_t bytes = 0;
};

// A function's prototype as PTX spells it.
struct PtxPrototype {
  std::string name;
  bool declaration = false;  // .extern .func; otherwise a .visible or .weak definition
  std::vector<PtxParameter> returns;
  std::vector<PtxParameter> parameters;
};

// Prototypes of the functions PTX declares `.extern .func` or defines `.visible .func` /
// `.weak .func`, in order (a name declared twice is listed twice).
std::vector<PtxPrototype> function_prototypes(std::string_view ptx);

// "(.b32) f(.b64, .b32)": how messages show a prototype.
std::string to_string(const PtxPrototype& prototype);

}  // namespace cujit::detail
