#pragma once
/// @file
/// NRT: the device runtime (reference-counted device allocations), its detection in PTX,
/// the policy that decides when it is linked, the compiled library, and its statistics.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/program.hpp"

namespace cujit {
class Module;
}

/// NRT, numba-cuda's device runtime: detection, the linking policy, the library, statistics.
namespace cujit::nrt {

/// The NRT device function names, from the same table nrt.cuh declares them from.
std::span<const std::string_view> function_names() noexcept;
/// Whether `name` is one of function_names().
bool is_function_name(std::string_view name) noexcept;

/// NRT functions `ptx` declares `.extern .func` (with or without a return parameter, over
/// any number of lines), in order of first appearance. Token-exact: comments, strings,
/// definitions (.visible .func) and other externs do not count.
std::vector<std::string> referenced_functions(std::string_view ptx);
/// Whether referenced_functions(ptx) is not empty.
bool references_nrt(std::string_view ptx);

/// What scan() found in one input: its NRT use as a link for one architecture sees it.
struct InputScan {
  /// NRT functions the code the link uses references without defining, each once, in
  /// order of first appearance.
  std::vector<std::string> functions;
  /// Code of the input that could not be read, described ("LTO-IR", "LTO-IR entry
  /// (sm_90)", a compressed entry whose decompressor is not installed): NRT use there is
  /// unknown, and only LinkableCode::set_nrt(true) says it.
  std::vector<std::string> unread;
  /// Whether the readable code uses NRT.
  bool uses_nrt() const noexcept { return !functions.empty(); }
};

/// Finds NRT users in an input of any format without a GPU: PTX by its `.extern .func`
/// declarations; cubins by the undefined symbols of their ELF symbol table; fatbins by the
/// entry a link for `target` takes from each container (the SASS for `target`, else the
/// PTX and LTO-IR that compile for it, else SASS that runs on it; other architectures'
/// entries are not read); host objects and archives by the fatbins embedded in them.
/// LTO-IR and CUDA C++ (compiled before it is linked) are reported in `unread`. Damaged
/// input is read as far as it is sound (the linker refuses it with the reason); never
/// throws for the bytes' content. Detection informs errors: it never links NRT in (see
/// docs/nrt.md, "When NRT is linked").
InputScan scan(const LinkableCode& code, const Arch& target);


/// Why NRT is or is not linked into a kernel.
enum class Reason {
  disabled,          ///< NRT is off (globally, or by the kernel's override)
  not_used,          ///< on, but neither the kernel's own PTX nor any flagged input uses it
  own_ptx,           ///< on, and the kernel's own PTX declares NRT functions
  flagged_input,     ///< on, and an input is marked nrt = true
};
/// The reason as the NRT error's message words it ("nothing uses NRT").
std::string_view to_string(Reason reason) noexcept;

/// Whether NRT is linked into a kernel, and why.
struct Decision {
  bool link = false;                  ///< NRT's library is part of the link
  Reason reason = Reason::disabled;   ///< why (or why not)
};

/// The policy, pure: NRT is enabled for the kernel when its override says so, else when
/// the global switch does; it is linked iff enabled AND (the kernel's own PTX references
/// NRT OR any item of the kernel's link set is marked nrt = true).
Decision decide(bool globally_enabled, std::optional<bool> kernel_override,
                bool own_ptx_references_nrt, bool any_input_flagged) noexcept;

/// The global switch: initially from CUJIT_ENABLE_NRT (a flag), default off.
/// Throws Error(usage) naming CUJIT_ENABLE_NRT when its value is not a flag (see
/// cujit/environment.hpp) and set_enabled() has not decided.
bool enabled();
/// Sets the global switch for the process (wins over CUJIT_ENABLE_NRT).
void set_enabled(bool on) noexcept;

/// nrt.cuh (and the table it includes) as NVRTC headers, named as external code includes
/// them: "cujit/nrt.cuh".
std::vector<Header> headers();
/// The header text, for code compiled outside cujit.
std::string_view header_source() noexcept;

/// The NRT library for `arch`, compiled with NVRTC once per (arch, target, options) and
/// reused through the build cache (memory, then disk); marked nrt = false (it is the
/// runtime, not a user of it). Throws what compiling throws (Error(compile), ...).
LinkableCode library(const Arch& arch, CompileTarget target,
                     const std::vector<std::string>& options = {},
                     BuildCache& cache = BuildCache::global());
/// How many times library() compiled in this process (the rest came from the cache).
std::uint64_t library_compilations() noexcept;

/// The runtime's allocation counters (counted while statistics are enabled).
struct Stats {
  std::uint64_t alloc = 0;     ///< raw device-heap allocations
  std::uint64_t free = 0;      ///< raw frees
  std::uint64_t mi_alloc = 0;  ///< MemInfos created
  std::uint64_t mi_free = 0;   ///< MemInfos destroyed
  /// Every allocation freed and every MemInfo destroyed.
  bool balanced() const noexcept { return alloc == free && mi_alloc == mi_free; }
};

/// Statistics of a module NRT was linked into (Error(nrt) otherwise). Reading synchronises
/// with the device through the copy.
Stats read_stats(const Module& module);
/// Turns counting on or off in `module` (Error(nrt) when NRT was not linked into it).
void set_stats_enabled(const Module& module, bool on);
/// Zeroes `module`'s counters (Error(nrt) when NRT was not linked into it).
void reset_stats(const Module& module);

}  // namespace cujit::nrt
