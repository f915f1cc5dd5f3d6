#include "support/planted_slowdown.hpp"

#include <charconv>
#include <cstdlib>
#include <string>
#include <system_error>

#include "cujit/error.hpp"

namespace cujit::detail {
namespace {

constexpr const char* variable = "CUJIT_PLANTED_SLOWDOWN";

double read_fraction() {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return 0;
  const std::string value(text);
  double fraction = -1;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), fraction);
  if (error != std::errc{} || end != value.data() + value.size() || !(fraction >= 0 && fraction <= 1)) {
    throw Error(ErrorKind::usage, "environment",
                std::string(variable) + "='" + value.substr(0, 64) + "' is not a fraction in [0, 1] (0.10: 10% slower)");
  }
  return fraction;
}

thread_local int open_scopes = 0;
thread_local double repeat_debt = 0;

}  // namespace

double planted_slowdown() {
  static const double fraction = read_fraction();
  return fraction;
}

PlantedDelay::PlantedDelay() {
  if (planted_slowdown() == 0) return;
  outermost_ = open_scopes++ == 0;
  if (outermost_) start_ = std::chrono::steady_clock::now();
}

PlantedDelay::~PlantedDelay() {
  if (planted_slowdown() == 0) return;
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

bool planted_repeat() {
  const double fraction = planted_slowdown();
  if (fraction == 0) return false;
  repeat_debt += fraction;
  if (repeat_debt < 1) return false;
  repeat_debt -= 1;
  return true;
}

}  // namespace cujit::detail
