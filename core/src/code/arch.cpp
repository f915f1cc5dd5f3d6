#include "cujit/arch.hpp"

#include <cctype>
#include <charconv>

#include "cujit/error.hpp"

namespace cujit {
namespace {

[[noreturn]] void bad_arch(std::string_view text) {
  throw Error(ErrorKind::usage, "Arch::parse",
              "'" + std::string(text) +
                  "' is not an architecture; expected e.g. sm_90, sm_90a, compute_90, 90");
}

}  // namespace

Arch Arch::parse(std::string_view text) {
  std::string_view rest = text;
  for (std::string_view prefix : {"sm_", "compute_", "lto_"}) {
    if (rest.substr(0, prefix.size()) == prefix) {
      rest.remove_prefix(prefix.size());
      break;
    }
  }
  char suffix = '\0';
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    suffix = rest.back();
    rest.remove_suffix(1);
  }
  if (const auto dot = rest.find('.'); dot != std::string_view::npos) {
    int major = 0, minor = 0;
    const auto a = std::from_chars(rest.data(), rest.data() + dot, major);
    const auto b = std::from_chars(rest.data() + dot + 1, rest.data() + rest.size(), minor);
    if (a.ec != std::errc{} || a.ptr != rest.data() + dot || b.ec != std::errc{} ||
        b.ptr != rest.data() + rest.size() || minor > 9 || major < 1) {
      bad_arch(text);
    }
    return Arch(major, minor, suffix);
  }
  int number = 0;
  const auto parsed = std::from_chars(rest.data(), rest.data() + rest.size(), number);
  if (rest.empty() || parsed.ec != std::errc{} || parsed.ptr != rest.data() + rest.size() ||
      number < 10 || number > 999) {
    bad_arch(text);
  }
  return Arch(number / 10, number % 10, suffix);
}

bool ptx_compiles_for(const Arch& ptx_target, const Arch& target) noexcept {
  if (ptx_target.suffix() == 'a') return ptx_target == target;
  if (ptx_target.suffix() == 'f') {
    return target.major() == ptx_target.major() && target.minor() >= ptx_target.minor();
  }
  return target.number() >= ptx_target.number();
}

Arch link_arch_for_device(const Arch& device, const std::vector<Arch>& inputs) noexcept {
  if (device.suffix() != '\0') return device;
  const Arch specific(device.major(), device.minor(), 'a');
  for (const Arch& input : inputs) {
    if (input == specific) return specific;
  }
  return device;
}

bool sass_runs_on(const Arch& built, const Arch& target) noexcept {
  return built.major() == target.major() && built.minor() <= target.minor();
}

std::string Arch::sm() const {
  std::string out = "sm_" + std::to_string(number());
  if (suffix_ != '\0') out += suffix_;
  return out;
}

std::string Arch::compute() const {
  std::string out = "compute_" + std::to_string(number());
  if (suffix_ != '\0') out += suffix_;
  return out;
}

}  // namespace cujit
