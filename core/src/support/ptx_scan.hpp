#pragma once
// Reading PTX as tokens: comments and string literals blanked out, so that names inside
// them never match and matches are token-exact.

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

}  // namespace cujit::detail
