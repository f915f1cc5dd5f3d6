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

namespace cujit::abi {

enum class Abi { c, numba };
// "c" / "numba"; throws Error(unsupported) naming the text otherwise.
Abi parse_abi(std::string_view name);
std::string_view to_string(Abi abi) noexcept;

struct DeviceFunction {
  std::string name;
  std::string module = "__main__";
  Signature signature;
  // One per argument; empty means arg0, arg1, ...
  std::vector<std::string> param_names;
  // CUDA C++ statements; the parameters are in scope by name.
  std::string body;
  // A __global__ kernel rather than a device function (numba ABI only).
  bool kernel = false;
};

struct CompileOptions {
  Abi abi = Abi::numba;
  std::optional<std::string> abi_name;  // C ABI only: the symbol (default: the name)
  CompileTarget output = CompileTarget::ptx;  // ptx or ltoir
  Arch arch;
  std::vector<std::string> nvrtc_options;
};

struct CompiledFunction {
  LinkableCode code;
  std::string symbol;       // what callers link against
  std::string declaration;  // CUDA C++ declaration of `symbol` for callers
  std::string log;          // NVRTC log
};

// Compiles through compile_cached (`cache`). Throws Error(unsupported) for a cubin output
// or a C-ABI kernel, Error(usage) for an abi_name that is not an identifier,
// Error(compile) with the NVRTC log for a body that does not compile.
CompiledFunction compile(const DeviceFunction& function, const CompileOptions& options,
                         BuildCache& cache = BuildCache::global());
// As compile(), for the architecture of device 0 (needs a GPU).
CompiledFunction compile_for_current_device(const DeviceFunction& function,
                                            CompileOptions options,
                                            BuildCache& cache = BuildCache::global());

// numba-cuda's mangling: "_ZN" + length-prefixed module parts and name (characters outside
// [A-Za-z0-9_] escaped as _xx) + "B<len><tag>" per ABI tag + "E" + Itanium argument codes.
std::string mangle_numba(const std::string& module, const std::string& name,
                         const std::vector<Type>& args,
                         const std::vector<std::string>& abi_tags = {"v1"});

// The symbol and caller-side declaration a function gets under an ABI, without compiling.
std::string symbol_of(const DeviceFunction& function, Abi abi,
                      const std::optional<std::string>& abi_name = std::nullopt);
std::string declaration_of(const std::string& symbol, const Signature& signature, Abi abi);

bool is_identifier(std::string_view text) noexcept;

}  // namespace cujit::abi
