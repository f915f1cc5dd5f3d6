#include "support/ptx_scan.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_set>
#include <utility>

namespace cujit::detail {
namespace {

constexpr std::size_t none = std::string_view::npos;

// One table for the two questions every byte gets (a call to isalnum per byte cost more
// than the rest of the scan); ASCII only, as isalnum in the "C" locale answers.
enum CharClass : unsigned char { other, space, identifier };
constexpr std::array<CharClass, 256> char_classes = [] {
  std::array<CharClass, 256> table{};
  for (const char c : std::string_view(" \t\n\v\f\r")) table[static_cast<unsigned char>(c)] = space;
  for (const char c : std::string_view("_$.")) table[static_cast<unsigned char>(c)] = identifier;
  for (int c = '0'; c <= '9'; ++c) table[static_cast<std::size_t>(c)] = identifier;
  for (int c = 'a'; c <= 'z'; ++c) table[static_cast<std::size_t>(c)] = identifier;
  for (int c = 'A'; c <= 'Z'; ++c) table[static_cast<std::size_t>(c)] = identifier;
  return table;
}();

bool is_space(char c) { return char_classes[static_cast<unsigned char>(c)] == space; }
bool is_identifier_char(char c) { return char_classes[static_cast<unsigned char>(c)] == identifier; }

// One past the comment or string literal that starts at `at`, or `at` when none starts
// there. An unterminated one runs to the end.
std::size_t skip_blank(std::string_view text, std::size_t at) {
  const std::size_t n = text.size();
  if (text[at] == '/' && at + 1 < n && text[at + 1] == '/') {
    const std::size_t end = text.find('\n', at + 2);
    return end == none ? n : end;
  }
  if (text[at] == '/' && at + 1 < n && text[at + 1] == '*') {
    const std::size_t end = text.find("*/", at + 2);
    return end == none ? n : end + 2;
  }
  if (text[at] != '"') return at;
  std::size_t end = at + 1;
  while (end < n && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
  return std::min(end + 1, n);
}

// The token that starts at or after `at`, a position in code (not inside a comment or
// string literal); `at` moves past it. Empty at the end of the text.
std::string_view next_token(std::string_view text, std::size_t& at) {
  while (at < text.size()) {
    if (is_space(text[at])) {
      ++at;
    } else if (const std::size_t after = skip_blank(text, at); after != at) {
      at = after;
    } else {
      break;
    }
  }
  if (at >= text.size()) return {};
  std::size_t end = at + 1;
  if (is_identifier_char(text[at]) || text[at] == '%') {
    while (end < text.size() && is_identifier_char(text[end])) ++end;
  }
  return text.substr(std::exchange(at, end), end - at);
}

// Answers "is this position code?" for increasing positions, jumping from one comment or
// string literal to the next with memchr instead of reading every byte.
class CodeCursor {
 public:
  explicit CodeCursor(std::string_view text)
      : text_(text), slash_(find(text, '/', 0)), quote_(find(text, '"', 0)) {}

  // Whether `at` (not before any position asked earlier) is outside every comment and
  // string literal; when it is not, resume() is where the one holding it ends.
  bool in_code(std::size_t at) {
    while (true) {
      const std::size_t start = next_blank(at);
      if (start == none) {
        code_ = at;
        return true;
      }
      code_ = skip_blank(text_, start);
      if (code_ > at) return false;
    }
  }
  std::size_t resume() const { return code_; }

 private:
  static std::size_t find(std::string_view text, char c, std::size_t from) {
    const void* found = from < text.size() ? std::memchr(text.data() + from, c, text.size() - from) : nullptr;
    return found != nullptr ? static_cast<std::size_t>(static_cast<const char*>(found) - text.data()) : text.size();
  }

  // The first comment or string literal that starts in [code_, limit), or none.
  std::size_t next_blank(std::size_t limit) {
    std::size_t from = code_;
    while (true) {
      if (slash_ < from) slash_ = find(text_, '/', from);
      if (quote_ < from) quote_ = find(text_, '"', from);
      const std::size_t first = std::min(slash_, quote_);
      if (first >= limit) return none;
      if (skip_blank(text_, first) != first) return first;
      from = first + 1;  // a lone '/' is code
    }
  }

  std::string_view text_;
  std::size_t code_ = 0;      // a position known to be in code
  std::size_t slash_, quote_;  // the next '/' and '"' at or after the last search (size: none)
};

// Where the parenthesised list whose '(' is at `open` ends (one past its ')'), or none when
// it never closes. Lists met inside it are remembered, so that a scan of PTX nesting
// declarations inside lists stays linear.
class Parentheses {
 public:
  explicit Parentheses(std::string_view text) : text_(text) {}

  std::size_t close_of(std::size_t open) {
    const auto known = std::lower_bound(closes_.begin(), closes_.end(), std::pair{open, std::size_t{0}});
    if (known != closes_.end() && known->first == open) return known->second;
    closes_.clear();
    std::vector<std::size_t> opened;  // indices into closes_ of the lists still open
    for (std::size_t at = open; at < text_.size();) {
      if (text_[at] == '(') {
        opened.push_back(closes_.size());
        closes_.emplace_back(at, none);
      } else if (text_[at] == ')') {
        closes_[opened.back()].second = at + 1;
        opened.pop_back();
        if (opened.empty()) return at + 1;
      } else if (const std::size_t after = skip_blank(text_, at); after != at) {
        at = after;
        continue;
      }
      ++at;
    }
    closes_.clear();
    return none;
  }

 private:
  std::string_view text_;
  std::vector<std::pair<std::size_t, std::size_t>> closes_;  // (open, one past close), by open
};

// The names found, each once, in order; a hash set behind them once there are many.
class UniqueNames {
 public:
  void add(std::string_view name) {
    if (names_.size() < linear_limit) {
      if (std::find(names_.begin(), names_.end(), name) != names_.end()) return;
    } else {
      if (seen_.empty()) seen_.insert(names_.begin(), names_.end());
      if (!seen_.insert(name).second) return;
    }
    names_.emplace_back(name);
  }
  std::vector<std::string> take() const { return {names_.begin(), names_.end()}; }

 private:
  static constexpr std::size_t linear_limit = 32;
  std::vector<std::string_view> names_;
  std::unordered_set<std::string_view> seen_;
};

// Names following the token `linkage` then .func (or .entry when entries count), after an
// optional return parameter list. Every occurrence of `linkage` in code counts, those
// inside another's parameter list too; a list that never closes ends the scan.
std::vector<std::string> functions_with(std::string_view ptx, std::string_view linkage, bool entries) {
  CodeCursor cursor(ptx);
  Parentheses parentheses(ptx);
  UniqueNames found;
  std::size_t from = 0;
  while (from < ptx.size()) {
    const void* hit = ::memmem(ptx.data() + from, ptx.size() - from, linkage.data(), linkage.size());
    if (hit == nullptr) break;
    const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(hit) - ptx.data());
    if (!cursor.in_code(at)) {
      from = cursor.resume();
      continue;
    }
    from = at + 1;
    std::size_t next = at + linkage.size();
    const bool starts_token = at == 0 || (!is_identifier_char(ptx[at - 1]) && ptx[at - 1] != '%');
    if (!starts_token || (next < ptx.size() && is_identifier_char(ptx[next]))) continue;
    const std::string_view kind = next_token(ptx, next);
    if (kind != ".func" && !(entries && kind == ".entry")) continue;
    std::string_view name = next_token(ptx, next);
    if (name == "(") {
      next = parentheses.close_of(static_cast<std::size_t>(name.data() - ptx.data()));
      if (next == none) break;
      name = next_token(ptx, next);
    }
    if (name.empty()) break;
    found.add(name);
  }
  return found.take();
}

// Bytes of a PTX fundamental type (".b32" 4, ".f16x2" 4, ".pred" 1), 0 when unknown.
std::uint64_t type_bytes(std::string_view type) {
  if (type == ".pred") return 1;
  if (type == ".f16x2" || type == ".bf16x2") return 4;
  if (type.size() < 3 || type[0] != '.') return 0;
  const char kind = type[1];
  if (kind != 'b' && kind != 'u' && kind != 's' && kind != 'f') {
    if (type.substr(1, 4) == "bf16") return 2;
    return 0;
  }
  const std::string_view bits = type.substr(2);
  if (bits == "8") return 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  if (bits == "128") return 16;
  return 0;
}

// The parameters of the list between `open` (its '(') and `close` (one past its ')').
std::vector<PtxParameter> parameters_in(std::string_view ptx, std::size_t open, std::size_t close) {
  std::vector<PtxParameter> out;
  std::size_t at = open + 1;
  PtxParameter current;
  bool any = false;
  std::uint64_t count = 1;
  const auto finish = [&] {
    if (any) {
      current.bytes *= count;
      out.push_back(std::move(current));
    }
    current = {};
    any = false;
    count = 1;
  };
  while (at < close - 1) {
    const std::string_view token = next_token(ptx, at);
    if (token.empty() || at > close - 1) break;
    if (token == ",") {
      finish();
      continue;
    }
    any = true;
    if (token == "[") {
      const std::string_view size = next_token(ptx, at);
      std::uint64_t n = 0;
      for (const char c : size) n = (c >= '0' && c <= '9') ? n * 10 + static_cast<std::uint64_t>(c - '0') : n;
      count *= n == 0 ? 1 : n;
      continue;
    }
    if (token == ".align") {
      (void)next_token(ptx, at);
      continue;
    }
    if (current.type.empty() && type_bytes(token) != 0) {
      current.type = std::string(token);
      current.bytes = type_bytes(token);
    }
  }
  finish();
  return out;
}

}  // namespace

std::vector<PtxPrototype> function_prototypes(std::string_view ptx) {
  std::vector<PtxPrototype> out;
  CodeCursor cursor(ptx);
  Parentheses parentheses(ptx);
  std::size_t from = 0;
  // Every ".func" in code preceded by .extern, .visible or .weak.
  constexpr std::string_view func = ".func";
  while (from < ptx.size()) {
    const void* hit = ::memmem(ptx.data() + from, ptx.size() - from, func.data(), func.size());
    if (hit == nullptr) break;
    const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(hit) - ptx.data());
    if (!cursor.in_code(at)) {
      from = cursor.resume();
      continue;
    }
    from = at + 1;
    std::size_t next = at + func.size();
    if (next < ptx.size() && is_identifier_char(ptx[next])) continue;
    // The linkage token just before: back over white space to the previous token.
    std::size_t before = at;
    while (before > 0 && is_space(ptx[before - 1])) --before;
    std::size_t start = before;
    while (start > 0 && is_identifier_char(ptx[start - 1])) --start;
    const std::string_view linkage = ptx.substr(start, before - start);
    if (linkage != ".extern" && linkage != ".visible" && linkage != ".weak") continue;
    PtxPrototype prototype;
    prototype.declaration = linkage == ".extern";
    std::string_view name = next_token(ptx, next);
    if (name == "(") {
      const std::size_t open = static_cast<std::size_t>(name.data() - ptx.data());
      next = parentheses.close_of(open);
      if (next == none) break;
      prototype.returns = parameters_in(ptx, open, next);
      name = next_token(ptx, next);
    }
    if (name.empty()) break;
    prototype.name = std::string(name);
    std::size_t after_name = next;
    const std::string_view list = next_token(ptx, after_name);
    if (list == "(") {
      const std::size_t open = static_cast<std::size_t>(list.data() - ptx.data());
      const std::size_t close = parentheses.close_of(open);
      if (close == none) break;
      prototype.parameters = parameters_in(ptx, open, close);
      from = close;
    }
    out.push_back(std::move(prototype));
  }
  return out;
}

std::string to_string(const PtxPrototype& prototype) {
  const auto list = [](const std::vector<PtxParameter>& parameters) {
    std::string out;
    for (const PtxParameter& parameter : parameters) {
      if (!out.empty()) out += ", ";
      out += parameter.type.empty() ? std::string("?") : parameter.type;
      if (!parameter.type.empty() && parameter.bytes != type_bytes(parameter.type)) {
        out += "[" + std::to_string(parameter.bytes / std::max<std::uint64_t>(1, type_bytes(parameter.type))) + "]";
      }
    }
    return out;
  };
  std::string out;
  if (!prototype.returns.empty()) out += "(" + list(prototype.returns) + ") ";
  return out + prototype.name + "(" + list(prototype.parameters) + ")";
}

std::vector<std::string> extern_functions(std::string_view ptx) {
  return functions_with(ptx, ".extern", false);
}

std::vector<std::string> visible_functions(std::string_view ptx) {
  return functions_with(ptx, ".visible", true);
}

}  // namespace cujit::detail
