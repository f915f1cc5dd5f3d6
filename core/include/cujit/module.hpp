#pragma once
// Module and Kernel: RAII over a loaded library (cuLibraryLoadData: context-independent,
// loaded into each context as it is used, as cuda.core and jitify2 do) and its kernels. A
// Kernel holds its Module alive; its parameter layout comes from cuFuncGetParamInfo, so
// launches are checked (count and size of every argument) before they reach the driver.

#include <array>
#include <cstring>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cujit/device.hpp"
#include "cujit/linkable_code.hpp"

namespace cujit {

/// A grid or block extent, as cuLaunchKernel takes it.
struct Dim3 {
  unsigned x = 1;  ///< extent in x
  unsigned y = 1;  ///< extent in y
  unsigned z = 1;  ///< extent in z
};

/// Where and how a kernel launch runs.
struct LaunchConfig {
  Dim3 grid;                      ///< blocks in the grid
  Dim3 block;                     ///< threads in a block
  unsigned shared_bytes = 0;      ///< dynamic shared memory per block, in bytes
  StreamHandle stream = nullptr;  ///< the stream; nullptr: the legacy default stream
};

/// One kernel argument: where its value lives and how many bytes it has.
struct KernelArg {
  const void* value;  ///< the argument's bytes (read at launch)
  std::size_t size;   ///< how many bytes it has
};

/// A KernelArg pointing at `value` (which must outlive the launch).
template <class T>
KernelArg arg(const T& value) noexcept {
  return KernelArg{&value, sizeof(T)};
}

/// A kernel argument held by value (its bytes): for graph nodes, whose arguments can change
/// until the graph is built, and for arguments assembled at run time.
struct ArgValue {
  std::vector<unsigned char> bytes;  ///< the argument's bytes
};

/// An ArgValue holding a copy of `value`'s bytes.
template <class T>
ArgValue arg_value(const T& value) {
  ArgValue out;
  out.bytes.resize(sizeof(T));
  std::memcpy(out.bytes.data(), &value, sizeof(T));
  return out;
}

/// One kernel parameter's place in the parameter buffer (cuFuncGetParamInfo).
struct ParamInfo {
  std::size_t offset;  ///< byte offset in the parameter buffer
  std::size_t size;    ///< size in bytes
};

class Kernel;

namespace detail {
struct JitLogs;
struct ParamTable;
}  // namespace detail

/// A __device__ variable of a loaded module.
struct GlobalSymbol {
  DevicePtr ptr;     ///< its device address in the current context
  std::size_t size;  ///< its size in bytes
};

/// A loaded library (CUlibrary) and the code it was loaded from; owned through shared_ptr,
/// since every Kernel of it holds it alive.
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// Loads linked code (a cubin, a fatbin, or PTX the driver compiles); the driver's JIT
  /// logs go into the error, which names the code. Other formats are Error(usage): link
  /// them first; a load the driver refuses is Error(cuda) with the JIT log. The module keeps
  /// the code (the driver reads it in place, PTX included) and its lowered names. The driver
  /// calls are those of the raw floor (cuLibraryLoadData with log buffers and the binary
  /// preserved, cuLibraryGetModule); an NVTX range "cujit module load" marks it.
  static std::shared_ptr<Module> load(LinkableCode code);
  /// The module loaded from `code`, shared by every caller that passes the same `identity`
  /// (a cache key digest) while any of them holds it: one load per build in a process.
  /// Throws what load() throws.
  static std::shared_ptr<Module> shared(const LinkableCode& code, const std::string& identity);

  /// Unloads the library (never throws).
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The kernel `name` in the current context (cuLibraryGetKernel, cuKernelGetFunction); its
  /// parameter table is read when first needed. Throws Error(cuda) naming the kernel, the
  /// module and the kernels it has when it is not there.
  Kernel kernel(const std::string& name) const;
  /// The device variable `name`, or nullopt when the module has none; Error(cuda) when the
  /// lookup itself fails.
  std::optional<GlobalSymbol> global(const std::string& name) const;
  /// The kernel a name expression of the compile lowered to (LinkableCode::lowered_names);
  /// Error(usage) when the compile had no such name expression, else as kernel().
  Kernel kernel_for_expression(const std::string& name_expression) const;
  /// The name of the code it was loaded from.
  const std::string& name() const noexcept { return code_.name(); }
  /// The code it was loaded from (the driver reads it in place).
  const LinkableCode& code() const noexcept { return code_; }
  /// The CUlibrary.
  void* handle() const noexcept { return handle_; }

 private:
  Module(void* handle, LinkableCode code, std::unique_ptr<detail::JitLogs> logs);
  void* handle_;
  LinkableCode code_;
  // The driver may JIT the library into another context later (lazy loading) and write
  // its logs then: the buffers live as long as the library.
  std::unique_ptr<detail::JitLogs> logs_;
};

/// A kernel of a loaded Module in one context (a CUfunction); holds its Module alive.
class Kernel {
 public:
  /// The kernel's (lowered) name.
  const std::string& name() const noexcept { return name_; }
  /// The parameter layout (cuFuncGetParamInfo), read on the first call (or launch) and
  /// shared by copies of this Kernel; thread-safe.
  const std::vector<ParamInfo>& params() const noexcept;
  /// The CUfunction.
  void* handle() const noexcept { return function_; }
  /// The module it belongs to.
  const std::shared_ptr<const Module>& module() const noexcept { return module_; }

  /// Throws Error(usage) naming the kernel and parameter when count or a size differs.
  void check_args(std::span<const KernelArg> args) const;
  /// Checks the arguments (check_args), then cuLaunchKernel; Error(cuda) naming the kernel
  /// when the launch fails.
  void launch(const LaunchConfig& config, std::span<const KernelArg> args) const;

  /// launch() with each argument passed by reference: kernel(config, ptr, n).
  template <class... Args>
  void operator()(const LaunchConfig& config, const Args&... args) const {
    const std::array<KernelArg, sizeof...(Args)> packed{arg(args)...};
    launch(config, packed);
  }

 private:
  friend class Module;
  Kernel(std::shared_ptr<const Module> module, void* function, std::string name);

  std::shared_ptr<const Module> module_;
  void* function_;
  std::string name_;
  std::shared_ptr<detail::ParamTable> params_;
};

}  // namespace cujit
