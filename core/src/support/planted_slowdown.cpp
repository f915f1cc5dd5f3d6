#include "support/planted_slowdown.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <cstdlib>
#include <string>
#include <system_error>

#include "cujit/error.hpp"

namespace cujit::detail {
namespace {

constexpr const char* variable = "CUJIT_PLANTED_SLOWDOWN";

// The fraction, or nullopt when the value is not one.
std::optional<double> parse_fraction(const std::string& value) {
  double fraction = -1;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), fraction);
  if (error != std::errc{} || end != value.data() + value.size() || !(fraction >= 0 && fraction <= 1)) {
    return std::nullopt;
  }
  return fraction;
}

std::string value_of_variable() {
  const char* text = std::getenv(variable);
  return text != nullptr ? std::string(text) : std::string();
}

// At load time nothing may throw: a bad value is NaN here and an error at first use.
double fraction_at_load() {
  const std::string value = value_of_variable();
  if (value.empty()) return 0;
  return parse_fraction(value).value_or(std::numeric_limits<double>::quiet_NaN());
}

thread_local int open_scopes = 0;
thread_local double repeat_debt = 0;

}  // namespace

const double planted_fraction = fraction_at_load();

double planted_slowdown() {
  if (std::isnan(planted_fraction)) {
    throw Error(ErrorKind::usage, "environment",
                std::string(variable) + "='" + value_of_variable().substr(0, 64) +
                    "' is not a fraction in [0, 1] (0.10: 10% slower)");
  }
  return planted_fraction;
}

void PlantedDelay::open() {
  if (planted_slowdown() == 0) return;
  outermost_ = open_scopes++ == 0;
  if (outermost_) start_ = std::chrono::steady_clock::now();
}

void PlantedDelay::close() {
  --open_scopes;
  if (!outermost_) return;
  const auto elapsed = std::chrono::steady_clock::now() - start_;
  const auto until = start_ + elapsed + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                            elapsed * planted_slowdown());
  // Spinning, not sleeping: a sleep's wake-up latency (50 us and more) would add more than
  // the fraction to short operations.
  while (std::chrono::steady_clock::now() < until) {
  }
}

bool planted_repeat_due() {
  const double fraction = planted_slowdown();
  repeat_debt += fraction;
  if (repeat_debt < 1) return false;
  repeat_debt -= 1;
  return true;
}

}  // namespace cujit::detail
