#pragma once
// A GPU architecture: compute capability plus an optional suffix ('a' arch-specific,
// 'f' family). Parsed from a string or read from a device, so everything up to a cubin
// works without a GPU.

#include <compare>
#include <string>
#include <string_view>

namespace cujit {

class Arch {
 public:
  // sm_90 by default: the project's reference machine.
  constexpr Arch() = default;
  constexpr Arch(int major, int minor, char suffix = '\0') noexcept
      : major_(major), minor_(minor), suffix_(suffix) {}

  // Accepts "sm_90", "sm_90a", "compute_90", "lto_90", "90", "9.0", "sm_100f".
  // Throws Error(usage) naming the text otherwise.
  static Arch parse(std::string_view text);
  // The architecture of device `ordinal` (needs a GPU; Error(cuda) otherwise).
  static Arch of_device(int ordinal = 0);

  int major() const noexcept { return major_; }
  int minor() const noexcept { return minor_; }
  char suffix() const noexcept { return suffix_; }
  int number() const noexcept { return major_ * 10 + minor_; }

  std::string sm() const;       // "sm_90a"
  std::string compute() const;  // "compute_90a"
  std::string str() const { return sm(); }

  friend auto operator<=>(const Arch&, const Arch&) = default;

 private:
  int major_ = 9;
  int minor_ = 0;
  char suffix_ = '\0';
};

// Pure compatibility rules, the ones nvJitLink and ptxas apply:
// PTX for `ptx_target` can be compiled for `target` when target is the same or a newer
// architecture, except arch-specific PTX ('a': only that exact arch) and family PTX ('f':
// the same major version, same or newer minor).
bool ptx_compiles_for(const Arch& ptx_target, const Arch& target) noexcept;
// SASS built for `built` runs on `target`: same major version, same or newer minor.
bool sass_runs_on(const Arch& built, const Arch& target) noexcept;

}  // namespace cujit
