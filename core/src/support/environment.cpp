#include "cujit/environment.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>

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

std::optional<std::string> absolute_path(const char* name) {
  const std::string_view value = value_of(name);
  if (value.empty()) return std::nullopt;
  if (value.front() != '/') refuse(name, value, "an absolute path");
  return std::string(value);
}

}  // namespace cujit::environment
