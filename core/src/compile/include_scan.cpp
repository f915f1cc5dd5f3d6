#include "compile/include_scan.hpp"

#include <algorithm>

namespace cujit::detail {
namespace {

// The text with every backslash-newline removed (translation phase 2), and where each
// removal was, so that a range of the logical text maps back to the original bytes.
class LogicalText {
 public:
  explicit LogicalText(std::string_view original) {
    if (original.find('\\') == std::string_view::npos) {
      text_.assign(original);
      return;
    }
    text_.reserve(original.size());
    for (std::size_t i = 0; i < original.size(); ++i) {
      if (original[i] == '\\') {
        std::size_t length = 0;
        if (i + 1 < original.size() && original[i + 1] == '\n') length = 2;
        if (i + 2 < original.size() && original[i + 1] == '\r' && original[i + 2] == '\n') length = 3;
        if (length != 0) {
          removed_at_.push_back(text_.size());
          removed_before_.push_back((removed_before_.empty() ? 0 : removed_before_.back()) + length);
          i += length - 1;
          continue;
        }
      }
      text_.push_back(original[i]);
    }
  }

  const std::string& text() const noexcept { return text_; }

  // The original offset of logical offset `at` (after any splice just before it).
  std::size_t original(std::size_t at) const {
    const auto it = std::upper_bound(removed_at_.begin(), removed_at_.end(), at);
    const std::size_t index = static_cast<std::size_t>(it - removed_at_.begin());
    return at + (index == 0 ? 0 : removed_before_[index - 1]);
  }

  // Splices strictly inside the logical range [begin, end).
  std::size_t splices_inside(std::size_t begin, std::size_t end) const {
    const auto first = std::upper_bound(removed_at_.begin(), removed_at_.end(), begin);
    const auto last = std::lower_bound(removed_at_.begin(), removed_at_.end(), end);
    return last > first ? static_cast<std::size_t>(last - first) : 0;
  }

 private:
  std::string text_;
  std::vector<std::size_t> removed_at_;      // logical offsets, ascending
  std::vector<std::size_t> removed_before_;  // bytes removed up to and including each
};

bool identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool identifier_char(char c) { return identifier_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool horizontal_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }

class Scanner {
 public:
  Scanner(std::string_view original, const std::vector<std::string>& wrappers)
      : logical_(original), t_(logical_.text()), wrappers_(wrappers) {}

  IncludeScan run() {
    bool line_start = true;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\n') {
        line_start = true;
        in_define_ = false;
        ++i_;
      } else if (horizontal_space(c)) {
        ++i_;
      } else if (c == '/' && peek(1) == '/') {
        skip_line_comment();
      } else if (c == '/' && peek(1) == '*') {
        // A comment that spans lines may hide a newline before a directive: treating what
        // follows as a line start only ever finds more directives, never fewer.
        if (skip_block_comment()) line_start = true;
      } else if (line_start && (c == '#' || (c == '%' && peek(1) == ':'))) {
        i_ += c == '#' ? 1 : 2;
        line_start = false;
        directive();
      } else {
        line_start = false;
        token();
      }
    }
    return std::move(scan_);
  }

 private:
  char peek(std::size_t ahead) const { return i_ + ahead < t_.size() ? t_[i_ + ahead] : '\0'; }

  void skip_line_comment() {
    const std::size_t end = t_.find('\n', i_);
    i_ = end == std::string::npos ? t_.size() : end;
  }

  // Returns whether the comment held a newline.
  bool skip_block_comment() {
    const std::size_t end = t_.find("*/", i_ + 2);
    const std::size_t stop = end == std::string::npos ? t_.size() : end + 2;
    const bool newline = t_.find('\n', i_) < stop;
    i_ = stop;
    return newline;
  }

  // Spaces and comments within a line.
  void skip_inline_space() {
    while (i_ < t_.size()) {
      if (horizontal_space(t_[i_])) {
        ++i_;
      } else if (t_[i_] == '/' && peek(1) == '*') {
        skip_block_comment();
      } else {
        return;
      }
    }
  }

  std::string_view identifier() {
    const std::size_t start = i_;
    while (i_ < t_.size() && identifier_char(t_[i_])) ++i_;
    return std::string_view(t_).substr(start, i_ - start);
  }

  // A "..." or <...> operand at i_, up to its closing delimiter on the same line.
  bool literal_operand(bool& angle, std::string& operand) {
    if (i_ >= t_.size() || (t_[i_] != '"' && t_[i_] != '<')) return false;
    angle = t_[i_] == '<';
    const char close = angle ? '>' : '"';
    std::size_t end = i_ + 1;
    while (end < t_.size() && t_[end] != close && t_[end] != '\n') ++end;
    if (end >= t_.size() || t_[end] != close) return false;
    operand.assign(t_, i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return true;
  }

  void add_site(IncludeKind kind, bool angle, std::string operand, std::size_t begin) {
    IncludeSite site;
    site.kind = kind;
    site.angle = angle;
    site.operand = std::move(operand);
    site.begin = logical_.original(begin);
    site.end = logical_.original(i_ - 1) + 1;
    site.splices = logical_.splices_inside(begin, i_);
    scan_.sites.push_back(std::move(site));
  }

  std::string rest_of_line() {
    const std::size_t end = std::min(t_.find('\n', i_), t_.size());
    std::string rest = t_.substr(i_, end - i_);
    while (!rest.empty() && horizontal_space(rest.back())) rest.pop_back();
    return rest;
  }

  void directive() {
    skip_inline_space();
    const std::size_t keyword_at = i_;
    const std::string_view name = identifier();
    if (name == "include" || name == "include_next") {
      skip_inline_space();
      bool angle = false;
      std::string operand;
      if (literal_operand(angle, operand)) {
        add_site(name == "include" ? IncludeKind::include : IncludeKind::include_next, angle,
                 std::move(operand), keyword_at);
      } else {
        scan_.macro_includes.push_back(
            MacroInclude{name == "include" ? IncludeKind::include : IncludeKind::include_next, rest_of_line()});
      }
    } else if (name == "define") {
      skip_inline_space();
      define_name_ = std::string(identifier());
      in_define_ = true;
      define_function_like_ = i_ < t_.size() && t_[i_] == '(';
      if (!define_function_like_ && !define_name_.empty()) {
        const std::size_t body_at = i_;
        skip_inline_space();
        std::string body = rest_of_line();
        if (body.size() <= 256 && body.find("/*") == std::string::npos && body.find("//") == std::string::npos) {
          scan_.object_macros.emplace_back(define_name_, std::move(body));
        }
        i_ = body_at;
      }
    }
  }

  // One token outside a directive's head.
  void token() {
    const char c = t_[i_];
    if (identifier_start(c)) {
      const std::string_view name = identifier();
      if (i_ < t_.size() && (t_[i_] == '"' || t_[i_] == '\'') && string_prefix(name)) {
        if (name.back() == 'R' && t_[i_] == '"') {
          raw_string();
        } else {
          quoted(t_[i_]);
        }
        return;
      }
      identifier_use(name);
    } else if (digit(c) || (c == '.' && digit(peek(1)))) {
      pp_number();
    } else if (c == '"' || c == '\'') {
      quoted(c);
    } else {
      ++i_;
    }
  }

  static bool string_prefix(std::string_view name) {
    for (std::string_view prefix : {"L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R"}) {
      if (name == prefix) return true;
    }
    return false;
  }

  void quoted(char close) {
    ++i_;
    while (i_ < t_.size() && t_[i_] != close && t_[i_] != '\n') i_ += t_[i_] == '\\' ? 2 : 1;
    if (i_ < t_.size() && t_[i_] == close) ++i_;
  }

  void raw_string() {
    // R"delim( ... )delim"
    const std::size_t open = t_.find('(', i_ + 1);
    if (open == std::string::npos || open - i_ - 1 > 16) {
      quoted('"');
      return;
    }
    const std::string terminator = ")" + t_.substr(i_ + 1, open - i_ - 1) + "\"";
    const std::size_t end = t_.find(terminator, open + 1);
    i_ = end == std::string::npos ? t_.size() : end + terminator.size();
  }

  void pp_number() {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (identifier_char(c) || c == '.') {
        ++i_;
      } else if (c == '\'' && identifier_char(peek(1))) {
        i_ += 2;
      } else if ((c == '+' || c == '-') && i_ > 0 &&
                 (t_[i_ - 1] == 'e' || t_[i_ - 1] == 'E' || t_[i_ - 1] == 'p' || t_[i_ - 1] == 'P')) {
        ++i_;
      } else {
        return;
      }
    }
  }

  void identifier_use(std::string_view name) {
    const std::size_t name_at = i_ - name.size();
    if (name == "__TIME__" || name == "__DATE__" || name == "__TIMESTAMP__") {
      if (std::find(scan_.temporal_macros.begin(), scan_.temporal_macros.end(), name) ==
          scan_.temporal_macros.end()) {
        scan_.temporal_macros.emplace_back(name);
      }
      return;
    }
    const bool builtin = name == "__has_include" || name == "__has_include_next";
    const bool wrapper = !builtin && std::find(wrappers_.begin(), wrappers_.end(), name) != wrappers_.end();
    const bool in_function_define = in_define_ && define_function_like_ && name != define_name_;
    if (!builtin && !wrapper && !in_function_define) return;
    const std::size_t after_name = i_;
    skip_inline_space();
    if (i_ >= t_.size() || t_[i_] != '(') {
      i_ = after_name;  // `defined(__has_include)`, `#ifdef __has_include`: not a use
      return;
    }
    ++i_;
    skip_inline_space();
    const std::size_t operand_at = i_;
    bool angle = false;
    std::string operand;
    if ((builtin || wrapper) && literal_operand(angle, operand)) {
      // __has_include_next is rewritten from its name on: it becomes __has_include of the
      // header it resolved to.
      const bool next = name == "__has_include_next";
      add_site(next ? IncludeKind::has_include_next : IncludeKind::has_include, angle, std::move(operand),
               next ? name_at : operand_at);
      return;
    }
    if (in_function_define && i_ < t_.size() && identifier_start(t_[i_])) {
      // `#define W(x) __has_include(x)` or `#define W2(x) W(x)`: W, W2 wrap __has_include.
      if (builtin) {
        scan_.has_include_wrappers.push_back(define_name_);
      } else {
        scan_.forwards.emplace_back(define_name_, std::string(name));
      }
      return;
    }
    if (builtin || wrapper) scan_.computed.push_back(std::string(name) + "(" + rest_of_line());
  }

  LogicalText logical_;
  const std::string& t_;
  const std::vector<std::string>& wrappers_;
  std::size_t i_ = 0;
  bool in_define_ = false;
  bool define_function_like_ = false;
  std::string define_name_;
  IncludeScan scan_;
};

}  // namespace

IncludeScan scan_includes(std::string_view text, const std::vector<std::string>& wrappers) {
  return Scanner(text, wrappers).run();
}

}  // namespace cujit::detail
