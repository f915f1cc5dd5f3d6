#include "support/ptx_scan.hpp"

#include <algorithm>
#include <cctype>

namespace cujit::detail {
namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

// PTX with comments and string literals blanked out (replaced by spaces), so names inside
// them cannot match and token boundaries stay where they were.
std::string code_only(std::string_view ptx) {
  std::string out(ptx);
  std::size_t i = 0;
  while (i < out.size()) {
    if (out.compare(i, 2, "//") == 0) {
      const std::size_t end = out.find('\n', i);
      const std::size_t stop = end == std::string::npos ? out.size() : end;
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(i),
                out.begin() + static_cast<std::ptrdiff_t>(stop), ' ');
      i = stop;
    } else if (out.compare(i, 2, "/*") == 0) {
      const std::size_t end = out.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? out.size() : end + 2;
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(i),
                out.begin() + static_cast<std::ptrdiff_t>(stop), ' ');
      i = stop;
    } else if (out[i] == '"') {
      std::size_t end = i + 1;
      while (end < out.size() && out[end] != '"') end += out[end] == '\\' ? 2 : 1;
      const std::size_t stop = std::min(end + 1, out.size());
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(i),
                out.begin() + static_cast<std::ptrdiff_t>(stop), ' ');
      i = stop;
    } else {
      ++i;
    }
  }
  return out;
}

// Tokens of PTX code: identifiers / directives, and single punctuation characters.
std::vector<std::string_view> tokens(std::string_view code) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < code.size()) {
    if (std::isspace(static_cast<unsigned char>(code[i]))) {
      ++i;
    } else if (is_identifier_char(code[i]) || code[i] == '%') {
      std::size_t end = i + 1;
      while (end < code.size() && is_identifier_char(code[end])) ++end;
      out.push_back(code.substr(i, end - i));
      i = end;
    } else {
      out.push_back(code.substr(i, 1));
      ++i;
    }
  }
  return out;
}

}  // namespace

namespace {

// Names following `linkage` then .func (or .entry when entries count), after an optional
// return parameter list.
std::vector<std::string> functions_with(std::string_view ptx, std::string_view linkage, bool entries) {
  const std::string code = code_only(ptx);
  const std::vector<std::string_view> toks = tokens(code);
  std::vector<std::string> found;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    if (toks[i] != linkage || (toks[i + 1] != ".func" && !(entries && toks[i + 1] == ".entry"))) continue;
    std::size_t at = i + 2;
    if (at < toks.size() && toks[at] == "(") {
      int depth = 0;
      for (; at < toks.size(); ++at) {
        if (toks[at] == "(") ++depth;
        if (toks[at] == ")" && --depth == 0) break;
      }
      ++at;
    }
    if (at >= toks.size()) break;
    const std::string_view name = toks[at];
    if (std::find(found.begin(), found.end(), name) == found.end()) found.emplace_back(name);
  }
  return found;
}

}  // namespace

std::vector<std::string> extern_functions(std::string_view ptx) {
  return functions_with(ptx, ".extern", false);
}

std::vector<std::string> visible_functions(std::string_view ptx) {
  return functions_with(ptx, ".visible", true);
}

}  // namespace cujit::detail
