#include "cujit/environment.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "cujit/error.hpp"

namespace cujit::environment {
namespace {

std::string_view value_of(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string_view(value) : std::string_view{};
}

[[noreturn]] void refuse(const char* name, std::string_view value, const std::string& accepted) {
  throw Error(ErrorKind::usage, "environment",
              std::string(name) + "='" + std::string(value) + "' is not " + accepted);
}

}  // namespace

bool flag(const char* name, bool fallback) {
  const std::string_view value = value_of(name);
  if (value.empty()) return fallback;
  for (std::string_view yes : {"1", "true", "on", "yes", "TRUE", "ON", "YES"}) {
    if (value == yes) return true;
  }
  for (std::string_view no : {"0", "false", "off", "no", "FALSE", "OFF", "NO"}) {
    if (value == no) return false;
  }
  refuse(name, value, "a flag (1, true, on, yes / 0, false, off, no)");
}

std::string choice(const char* name, std::initializer_list<std::string_view> allowed,
                   std::string_view fallback) {
  const std::string_view value = value_of(name);
  if (value.empty()) return std::string(fallback);
  std::string accepted;
  for (std::string_view option : allowed) {
    if (value == option) return std::string(value);
    accepted += (accepted.empty() ? "" : ", ") + std::string(option);
  }
  refuse(name, value, "one of " + accepted);
}

std::uint64_t count(const char* name, std::uint64_t fallback) {
  const std::string_view value = value_of(name);
  if (value.empty()) return fallback;
  std::uint64_t parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error != std::errc{} || end != value.data() + value.size()) {
    refuse(name, value, "a decimal count of at most 18446744073709551615");
  }
  return parsed;
}

namespace {

constexpr const char* byte_size_forms = "a byte size (1073741824, 512M, 1G, 1.5G, 64KiB)";

// The power of 1024 a unit names (K=1 ... T=4, none or "B" = 0), or -1.
int unit_power(std::string_view unit) {
  if (unit.empty() || unit == "B") return 0;
  int power = -1;
  switch (unit.front()) {
    case 'K': case 'k': power = 1; break;
    case 'M': case 'm': power = 2; break;
    case 'G': case 'g': power = 3; break;
    case 'T': case 't': power = 4; break;
    default: return -1;
  }
  const std::string_view rest = unit.substr(1);
  return rest.empty() || rest == "B" || rest == "iB" ? power : -1;
}

__extension__ using Wide = unsigned __int128;  // __extension__: no -Wpedantic warning

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The size `text` gives, or nullopt when it is not one.
std::optional<std::uint64_t> byte_size_of(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size() && is_digit(text[at])) ++at;
  const std::string_view whole = text.substr(0, at);
  std::string_view fraction;
  if (at < text.size() && text[at] == '.') {
    const std::size_t start = ++at;
    while (at < text.size() && is_digit(text[at])) ++at;
    fraction = text.substr(start, at - start);
    if (fraction.empty()) return std::nullopt;
  }
  if (whole.empty()) return std::nullopt;
  const int power = unit_power(text.substr(at));
  if (power < 0 || (!fraction.empty() && power == 0)) return std::nullopt;
  std::uint64_t count = 0;
  const auto [end, error] = std::from_chars(whole.data(), whole.data() + whole.size(), count);
  if (error != std::errc{} || end != whole.data() + whole.size()) return std::nullopt;
  const Wide unit = static_cast<Wide>(1) << (10 * power);
  Wide bytes = static_cast<Wide>(count) * unit;
  // The fraction, rounded down. Its first 19 digits (part < 10^19, times a unit of at most
  // 2^40, fits in 128 bits): what follows is worth less than a millionth of a byte.
  const std::string_view digits = fraction.substr(0, 19);
  Wide part = 0, scale = 1;
  for (char digit : digits) {
    part = part * 10 + static_cast<unsigned>(digit - '0');
    scale *= 10;
  }
  bytes += part * unit / scale;
  if (bytes > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace

std::uint64_t parse_byte_size(std::string_view text) {
  if (const auto bytes = byte_size_of(text)) return *bytes;
  throw Error(ErrorKind::usage, "environment",
              "'" + std::string(text.substr(0, 64)) + (text.size() > 64 ? "...'" : "'") + " is not " + byte_size_forms +
                  " of at most 2^64-1 bytes");
}

std::uint64_t byte_size(const char* name, std::uint64_t fallback) {
  const std::string_view value = value_of(name);
  if (value.empty()) return fallback;
  if (const auto bytes = byte_size_of(value)) return *bytes;
  refuse(name, value, std::string(byte_size_forms) + " of at most 2^64-1 bytes");
}

std::optional<std::string> absolute_path(const char* name) {
  const std::string_view value = value_of(name);
  if (value.empty()) return std::nullopt;
  if (value.front() != '/') refuse(name, value, "an absolute path");
  return std::string(value);
}

}  // namespace cujit::environment
