#pragma once
// Device functions described in C++ and compiled, without a GPU, to PTX or LTO-IR with
// a C ABI (predictable name, result returned) or numba-cuda's ABI (mangled name, result
// through a pointer passed first, int32 status returned, 0 = ok), so code in other
// languages and numba-cuda's own output can call them and be called.

#include <optional>
#include <string>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/program.hpp"
#include "cujit/signature.hpp"

/// Device functions compiled with a C ABI or numba-cuda's ABI, and numba-cuda's names for
/// functions (docs/abi-and-providers.md).
namespace cujit::abi {

/// A calling convention: C (result returned, name as given) or numba-cuda's.
enum class Abi { c, numba };
/// "c" / "numba"; throws Error(unsupported) naming the text otherwise.
Abi parse_abi(std::string_view name);
/// "c" / "numba". Never throws.
std::string_view to_string(Abi abi) noexcept;

/// A device function described in C++.
struct DeviceFunction {
  std::string name;                 ///< an identifier
  std::string module = "__main__";  ///< numba's module, dotted: part of a numba-ABI name
  Signature signature;              ///< in numba's spelling
  /// One per argument; empty means arg0, arg1, ...
  std::vector<std::string> param_names;
  /// CUDA C++ statements; the parameters are in scope by name.
  std::string body;
  /// A __global__ kernel rather than a device function (numba ABI only).
  bool kernel = false;
};

/// The order in which numba built a function's `nvvm_options` dict; the flag summary keeps
/// it. `compile_ptx` and the dispatcher write fastmath first; numba's own overloads (as in
/// nrt_user_c_abi.ptx) opt first.
enum class NvvmOptionOrder { fastmath_first, opt_first };

/// numba-cuda's compilation flags for one function (its `CUDAFlags`, numba-cuda 0.30.4),
/// set as `@cuda.jit` / `cuda.compile_ptx` set them from their options. numba puts their
/// non-default values, compressed, into every symbol as an ABI tag, so the same function
/// compiled with other options has another name. The defaults are what a device function
/// gets from numba-cuda 0.30.4 with CUDA 13 and no options: compute capability 7.5 (numba's
/// lowest for this NVRTC; `cc` given to compile_ptx, or the device's, replaces it),
/// opt on, error model numpy, no debug information.
struct NumbaFlags {
  int cc_major = 7;  ///< compute_capability, major
  int cc_minor = 5;  ///< compute_capability, minor
  bool debug = false;     ///< debug=True: debuginfo, extended lifetimes, python error model, -g
  bool lineinfo = false;  ///< lineinfo=True: debuginfo, directives only
  bool fastmath = false;  ///< fastmath=True
  bool opt = true;        ///< opt=False gives nvvm option opt 0
  bool forceinline = false;    ///< forceinline=True
  bool inline_always = false;  ///< inline="always"
  bool lto = false;            ///< lto=True: the nvvm option gen-lto
  std::optional<int> max_registers;  ///< max_registers=N
  NvvmOptionOrder nvvm_order = NvvmOptionOrder::fastmath_first;  ///< see NvvmOptionOrder

  /// numba's summary of these flags, the text it compresses:
  /// "CUDAFlags(compute_capability=(7, 5), error_model=numpy, ...)". Never throws.
  std::string summary() const;
};

/// The ABI tag numba derives from `flags` (Flags.get_mangle_string: the summary deflated at
/// zlib level 9 against a dictionary of the flag names and defaults, in base64), before
/// mangling escapes it. Throws Error(unsupported) for a flag set whose compressed form
/// cujit cannot reproduce exactly (one zlib would write as a dynamic-Huffman block), rather
/// than give a name numba never uses.
std::string numba_flags_tag(const NumbaFlags& flags);

/// How a function is compiled by compile().
struct CompileOptions {
  Abi abi = Abi::numba;                 ///< the calling convention
  std::optional<std::string> abi_name;  ///< C ABI only: the symbol (default: the name)
  CompileTarget output = CompileTarget::ptx;  ///< ptx or ltoir
  Arch arch;                                  ///< what NVRTC compiles for
  std::vector<std::string> nvrtc_options;     ///< passed to NVRTC as given
  /// Numba ABI only: the flags and function number whose tags the symbol carries, so that
  /// it is the name numba would give the same function (default: a device function numba
  /// compiled first, with no options).
  NumbaFlags numba_flags;
  unsigned numba_uid = 1;  ///< numba ABI only: the "v<uid>" tag (numba counts compiles)
};

/// What compile() made.
struct CompiledFunction {
  LinkableCode code;        ///< PTX or LTO-IR
  std::string symbol;       ///< what callers link against
  std::string declaration;  ///< CUDA C++ declaration of `symbol` for callers
  std::string log;          ///< NVRTC log
};

/// Compiles through compile_cached (`cache`). Throws Error(unsupported) for a cubin output,
/// a C-ABI kernel or numba flags whose tag cannot be reproduced, Error(usage) for an
/// abi_name that is not an identifier, Error(compile) with the NVRTC log for a body that
/// does not compile.
CompiledFunction compile(const DeviceFunction& function, const CompileOptions& options,
                         BuildCache& cache = BuildCache::global());
/// As compile(), for the architecture of device 0 (needs a GPU; throws Error(cuda) without).
CompiledFunction compile_for_current_device(const DeviceFunction& function,
                                            CompileOptions options,
                                            BuildCache& cache = BuildCache::global());

/// numba-cuda's name for a function: "_ZN" + length-prefixed module parts and name
/// (characters outside [A-Za-z0-9_] escaped as _xx) + "B2v<uid>" + "B<len><flags tag>" +
/// "E" + argument codes (Type::itanium; nothing for no arguments), e.g. for
/// __main__.add(int32, int32) with the default flags "_ZN8__main__3addB2v1B92cw51c...AEii",
/// the symbol numba-cuda 0.30.4 emits. With an empty module the name is not nested:
/// "_Z3addB2v1B92...ii".
/// Throws Error(unsupported) as numba_flags_tag does.
std::string mangle_numba(const std::string& module, const std::string& name,
                         const std::vector<Type>& args, const NumbaFlags& flags = {},
                         unsigned uid = 1);
/// The same mangling with the ABI tags given literally (each as "B<len><tag>", escaped).
/// Never throws.
std::string mangle_numba_tags(const std::string& module, const std::string& name,
                              const std::vector<Type>& args,
                              const std::vector<std::string>& abi_tags);

/// The symbol a function gets under an ABI, without compiling: the C ABI's abi_name (or the
/// name), or mangle_numba with `flags` and `uid`. Throws as mangle_numba does.
std::string symbol_of(const DeviceFunction& function, Abi abi,
                      const std::optional<std::string>& abi_name = std::nullopt,
                      const NumbaFlags& flags = {}, unsigned uid = 1);
/// The CUDA C++ declaration callers use for `symbol` under an ABI (the numba ABI's result
/// pointer first, int status returned). Never throws except std::bad_alloc.
std::string declaration_of(const std::string& symbol, const Signature& signature, Abi abi);

/// Whether `text` is a C identifier: [A-Za-z_][A-Za-z0-9_]*.
bool is_identifier(std::string_view text) noexcept;

}  // namespace cujit::abi
