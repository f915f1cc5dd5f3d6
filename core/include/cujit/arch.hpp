#pragma once
// A GPU architecture: compute capability plus an optional suffix ('a' arch-specific,
// 'f' family). Parsed from a string or read from a device, so everything up to a cubin
// works without a GPU.

#include <compare>
#include <string>
#include <string_view>
#include <vector>

namespace cujit {

/// A GPU architecture: compute capability `major.minor` and a suffix ('a' arch-specific,
/// 'f' family, '\0' none). A value; comparisons order by major, minor, then suffix.
class Arch {
 public:
  /// sm_90 by default: the project's reference machine.
  constexpr Arch() = default;
  /// The architecture `major.minor` with `suffix` ('a', 'f' or '\0'); not checked.
  constexpr Arch(int major, int minor, char suffix = '\0') noexcept
      : major_(major), minor_(minor), suffix_(suffix) {}

  /// Parses "sm_90", "sm_90a", "compute_90", "lto_90", "90", "9.0", "sm_100f".
  /// \throws Error (usage) naming the text when it is none of these.
  static Arch parse(std::string_view text);
  /// The architecture of device `ordinal`.
  /// \throws CudaError when there is no such device or no driver (needs a GPU).
  static Arch of_device(int ordinal = 0);

  /// The major compute capability (9 for sm_90).
  int major() const noexcept { return major_; }
  /// The minor compute capability (0 for sm_90).
  int minor() const noexcept { return minor_; }
  /// 'a' (arch-specific), 'f' (family) or '\0'.
  char suffix() const noexcept { return suffix_; }
  /// major * 10 + minor: 90 for sm_90a.
  int number() const noexcept { return major_ * 10 + minor_; }

  /// The SASS name with its suffix: "sm_90a".
  std::string sm() const;
  /// The virtual (PTX) name with its suffix: "compute_90a".
  std::string compute() const;
  /// The same as sm().
  std::string str() const { return sm(); }

  /// Orders by major, minor, then suffix.
  friend auto operator<=>(const Arch&, const Arch&) = default;

 private:
  int major_ = 9;
  int minor_ = 0;
  char suffix_ = '\0';
};

/// Whether PTX for `ptx_target` can be compiled for `target`, by the rule nvJitLink and
/// ptxas apply: target is the same or a newer architecture, except arch-specific PTX ('a':
/// only that exact arch) and family PTX ('f': the same major version, same or newer minor).
/// Pure.
bool ptx_compiles_for(const Arch& ptx_target, const Arch& target) noexcept;
/// The architecture a link for a device of architecture `device` uses, given what its
/// inputs were built for: `device`, or its arch-specific variant (sm_90a for an sm_90
/// device) when an input was built for exactly that variant, which the device runs (numba-cuda
/// writes `.target sm_90a` PTX on an H100). Inputs for another arch-specific variant change
/// nothing (the link then refuses them, naming them). Pure.
Arch link_arch_for_device(const Arch& device, const std::vector<Arch>& inputs) noexcept;

/// Whether SASS built for `built` runs on `target`: same major version, same or newer
/// minor. Pure.
bool sass_runs_on(const Arch& built, const Arch& target) noexcept;

}  // namespace cujit
