#include "link/link_log.hpp"

#include <algorithm>
#include <set>

namespace cujit::detail {
namespace {

// The quoted text starting at `at` (just after an opening quote), up to the closing one.
std::string_view quoted(std::string_view log, std::size_t at) {
  const std::size_t end = log.find('\'', at);
  return end == std::string_view::npos ? std::string_view{} : log.substr(at, end - at);
}

std::vector<std::string> distinct_symbols(std::string_view log, const std::vector<std::string_view>& phrases) {
  std::set<std::string> found;
  for (const LogMention& mention : mentions(log, phrases)) found.insert(mention.symbol);
  return {found.begin(), found.end()};
}

}  // namespace

std::vector<LogMention> mentions(std::string_view log, const std::vector<std::string_view>& phrases) {
  std::vector<std::pair<std::size_t, std::size_t>> starts;  // (position of the symbol, phrase)
  for (std::string_view phrase : phrases) {
    const std::string opener = std::string(phrase) + " '";
    for (std::size_t at = log.find(opener); at != std::string_view::npos; at = log.find(opener, at + 1)) {
      starts.emplace_back(at + opener.size(), 0);
    }
  }
  std::sort(starts.begin(), starts.end());
  std::vector<LogMention> out;
  for (const auto& [at, unused] : starts) {
    const std::string_view symbol = quoted(log, at);
    if (symbol.empty()) continue;
    LogMention mention{std::string(symbol), {}};
    constexpr std::string_view in = "' in '";
    const std::size_t after = at + symbol.size();
    if (log.compare(after, in.size(), in) == 0) mention.input = std::string(quoted(log, after + in.size()));
    out.push_back(std::move(mention));
  }
  return out;
}

std::vector<std::string> unresolved_symbols(std::string_view log) {
  return distinct_symbols(log, {"Undefined reference to", "Unresolved extern function",
                                "Unresolved extern variable"});
}

std::vector<std::string> duplicate_symbols(std::string_view log) {
  return distinct_symbols(log, {"Multiple definition of", "Linking globals named"});
}

std::vector<PrototypeMismatch> prototype_mismatches(std::string_view log) {
  std::vector<PrototypeMismatch> out;
  constexpr std::string_view phrase = "Prototype doesn't match for '";
  constexpr std::string_view first = "first defined in '";
  for (std::size_t at = log.find(phrase); at != std::string_view::npos; at = log.find(phrase, at + 1)) {
    const std::size_t start = at + phrase.size();
    const std::string_view symbol = quoted(log, start);
    if (symbol.empty()) continue;
    PrototypeMismatch mismatch{std::string(symbol), {}, {}};
    std::size_t line_end = log.find('\n', start);
    if (line_end == std::string_view::npos) line_end = log.size();
    const std::string_view line = log.substr(start, line_end - start);
    constexpr std::string_view in = "' in '";
    if (line.compare(symbol.size(), in.size(), in) == 0) {
      mismatch.input = std::string(quoted(line, symbol.size() + in.size()));
    }
    if (const std::size_t defined = line.find(first); defined != std::string_view::npos) {
      mismatch.defined_in = std::string(quoted(line, defined + first.size()));
    }
    if (std::none_of(out.begin(), out.end(), [&](const PrototypeMismatch& seen) {
          return seen.symbol == mismatch.symbol && seen.input == mismatch.input;
        })) {
      out.push_back(std::move(mismatch));
    }
  }
  return out;
}

bool has_error_line(std::string_view log) noexcept {
  return log.rfind("error", 0) == 0 || log.find("\nerror") != std::string_view::npos;
}

}  // namespace cujit::detail
