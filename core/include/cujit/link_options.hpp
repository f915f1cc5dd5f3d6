#pragma once
// What a link is asked to do: the backend, the architecture, LTO, how `cu` inputs are
// compiled, and typed code-generation options (LinkFlags) that both backends understand.
// Each flag maps to an nvJitLink option string and to a CU_JIT_* option of the driver
// linker; a flag a backend cannot honour is refused with Error(unsupported) naming the
// flag and the backend, never dropped (docs/linking.md, "Link options").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/program.hpp"

namespace cujit {

/// The two linker backends: nvJitLink (every format, no GPU needed) and the Driver API
/// linker (cuLink*, needs a GPU context, takes no LTO-IR).
enum class LinkerBackend { nvjitlink, driver };

/// "nvjitlink" / "driver".
std::string_view to_string(LinkerBackend backend) noexcept;
/// The backend named "nvjitlink" or "driver"; nullopt for any other name.
std::optional<LinkerBackend> parse_linker_backend(std::string_view name) noexcept;

/// Typed code-generation options of a link. Unset / empty means the backend's default.
/// They act where the link generates code: PTX inputs (both backends) and LTO-IR inputs
/// (nvJitLink with LTO); a cubin input is already machine code. Options that change how
/// CUDA C++ compiles also reach NVRTC for `cu` inputs (link_nvrtc_options).
struct LinkFlags {
  /// Device debug information (nvJitLink -g, CU_JIT_GENERATE_DEBUG_INFO; NVRTC -G for `cu`).
  bool debug = false;
  /// Line tables (nvJitLink -lineinfo, CU_JIT_GENERATE_LINE_INFO; NVRTC -lineinfo for `cu`).
  bool line_info = false;
  /// Register limit per thread, 1 to 255 (-maxrregcount=N, CU_JIT_MAX_REGISTERS).
  std::optional<unsigned> max_registers;
  /// ptxas optimisation level 0 to 3 (-O0 to -O3, CU_JIT_OPTIMIZATION_LEVEL). nvJitLink takes
  /// only 0 and 3.
  std::optional<unsigned> optimization_level;
  /// Flush single-precision denormals to zero (-ftz=). nvJitLink with LTO only.
  std::optional<bool> ftz;
  /// IEEE single-precision division (-prec-div=). nvJitLink with LTO only.
  std::optional<bool> prec_div;
  /// IEEE single-precision square root (-prec-sqrt=). Refused by both backends: nvJitLink
  /// 13.0 ignores -prec-sqrt= (LTO-IR keeps the setting it was compiled with); set NVRTC's
  /// --prec-sqrt= in CompileOptions::options instead.
  std::optional<bool> prec_sqrt;
  /// Contract multiplies and adds into FMA (-fma=). nvJitLink with LTO only.
  std::optional<bool> fma;
  /// Kernels the program uses; others may be removed (-kernels-used=). nvJitLink only.
  std::vector<std::string> kernels_used;
  /// Variables the program uses; others may be removed (-variables-used=). nvJitLink with
  /// LTO only.
  std::vector<std::string> variables_used;
  /// Threads for split compilation, 0 = all processors (-split-compile=N,
  /// CU_JIT_SPLIT_COMPILE).
  std::optional<unsigned> split_compile;
  /// Verbose messages in the info log (-verbose, CU_JIT_LOG_VERBOSE).
  bool verbose = false;
  /// Extra ptxas options, in order, each passed as -Xptxas=OPTION. nvJitLink only.
  std::vector<std::string> ptxas_options;

  /// Field-wise equality.
  bool operator==(const LinkFlags&) const = default;
};

/// Where an nvJitLink link runs. Isolated, Linker::link runs the link (cujit's checks and
/// nvJitLink) in cujit's worker process (`cujit-compile-worker`) and returns the same result
/// or throws the same error; a worker that crashes, runs past `timeout` or past
/// `memory_limit_bytes` is a LinkError naming the inputs, never the caller's death: for
/// callers that link code they did not build (a damaged LTO-IR body can still kill
/// nvJitLink, docs/reliability.md). CUJIT_LINK_ISOLATE=1 isolates every nvJitLink link of
/// the process. Driver-backend links stay in the caller, whose CUDA context they need.
/// Not part of the cache key: where a link runs does not change its result.
struct LinkIsolation {
  bool enabled = false;  ///< run nvJitLink links in the worker
  /// A worker still linking then is killed: that link's LinkError.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::uint64_t memory_limit_bytes = 0;  ///< > 0: the worker's address-space limit
};

/// Everything a Linker is asked to do.
struct LinkOptions {
  /// The architecture linked for.
  Arch arch;
  /// `arch` is the device's (link_options_for_device), not asked for: an input built for
  /// the arch-specific variant of `arch` (sm_90a PTX for an sm_90 device, which runs it)
  /// makes the link use that variant (link_arch_for_device), and LinkResult::arch says so.
  /// With false, `arch` is used as given, and such an input is refused.
  bool arch_is_device = false;
  /// Link-time optimisation over the LTO-IR inputs. nvJitLink only; with no LTO-IR among
  /// the inputs it is a no-op rather than nvJitLink's NO_MODULE_IN_PROGRAM failure.
  bool lto = false;
  /// nullopt: choose_backend() decides.
  std::optional<LinkerBackend> backend;
  /// How `cu` inputs are compiled (through compile_cached) before they are linked; the
  /// linker sets the architecture and the target (cu_compile_target) and appends
  /// link_nvrtc_options(flags).
  CompileOptions compile;
  /// Typed code-generation options, honoured by both backends or refused.
  LinkFlags flags;
  /// Escape hatch: nvJitLink option strings passed verbatim after those of `flags`.
  /// Refused (Error(unsupported)) on the driver backend, which has no such strings.
  std::vector<std::string> nvjitlink_options;
  /// Run nvJitLink links in a child process (docs/linking.md, "Isolated links").
  LinkIsolation isolation;
};

/// One option a link can be given, as messages and docs name it.
enum class LinkOption {
  debug,
  line_info,
  max_registers,
  optimization_level,
  ftz,
  prec_div,
  prec_sqrt,
  fma,
  kernels_used,
  variables_used,
  split_compile,
  verbose,
  ptxas_options,
  nvjitlink_options,
};

/// "debug", "line_info", ... (the LinkFlags / LinkOptions field name).
std::string_view to_string(LinkOption option) noexcept;

/// The options `options` sets, in the canonical order of LinkOption.
std::vector<LinkOption> options_set(const LinkOptions& options);

/// Checks `options` for a link on `backend`. Throws Error(usage) naming the option for a
/// value out of range or a name that is empty or holds whitespace, and Error(unsupported)
/// naming the option and the backend for an option that backend cannot honour (for
/// nvJitLink: prec_sqrt, other math flags and variables_used without lto, optimisation
/// levels 1 and 2; for the driver: math flags, kernels_used, variables_used, ptxas_options,
/// nvjitlink_options).
void check_link_options(const LinkOptions& options, LinkerBackend backend);

/// Options for a link for device `ordinal`: its architecture, arch_is_device set.
/// \throws CudaError when there is no such device or no driver (needs a GPU).
LinkOptions link_options_for_device(int ordinal = 0);

/// The nvJitLink option strings of `options` after "-arch=" and "-lto": the flags in
/// canonical order, then nvjitlink_options verbatim. `lto` says whether the link runs LTO:
/// options that act only on LTO-IR (math flags, variables_used) are left out without it,
/// as they would act on nothing (and -variables-used without -lto drops every kernel).
/// Does not check: call check_link_options first.
std::vector<std::string> nvjitlink_option_strings(const LinkOptions& options, bool lto);

/// The NVRTC options a `cu` input of a link with `flags` is compiled with, on top of the
/// link's CompileOptions: -G (debug), -lineinfo, --ftz=, --prec-div=, --prec-sqrt=,
/// --fmad= (fma). Code already compiled is linked as it is.
std::vector<std::string> link_nvrtc_options(const LinkFlags& flags);

/// Adds every flag to `key` under fixed labels in a fixed order (kernels_used and
/// variables_used sorted: their order means nothing; ptxas_options in order), so equal
/// flags give equal keys and any changed flag a different key.
void add_link_flags(CacheKey& key, const LinkFlags& flags);

}  // namespace cujit
