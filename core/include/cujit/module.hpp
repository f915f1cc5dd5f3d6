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

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned shared_bytes = 0;
  StreamHandle stream = nullptr;  // nullptr: the legacy default stream
};

// One kernel argument: where its value lives and how many bytes it has.
struct KernelArg {
  const void* value;
  std::size_t size;
};

template <class T>
KernelArg arg(const T& value) noexcept {
  return KernelArg{&value, sizeof(T)};
}

// A kernel argument held by value (its bytes): for graph nodes, whose arguments can change
// until the graph is built, and for arguments assembled at run time.
struct ArgValue {
  std::vector<unsigned char> bytes;
};

template <class T>
ArgValue arg_value(const T& value) {
  ArgValue out;
  out.bytes.resize(sizeof(T));
  std::memcpy(out.bytes.data(), &value, sizeof(T));
  return out;
}

struct ParamInfo {
  std::size_t offset;
  std::size_t size;
};

class Kernel;

namespace detail {
struct JitLogs;
}

// A __device__ variable of a loaded module.
struct GlobalSymbol {
  DevicePtr ptr;
  std::size_t size;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  // Loads linked code (a cubin, a fatbin, or PTX the driver compiles); the driver's JIT
  // logs go into the error, which names the code. Other formats are Error(usage): link
  // them first. The module keeps the code (the driver reads it in place) and its lowered
  // names.
  static std::shared_ptr<Module> load(LinkableCode code);
  // The module loaded from `code`, shared by every caller that passes the same `identity`
  // (a cache key digest) while any of them holds it: one load per build in a process.
  static std::shared_ptr<Module> shared(const LinkableCode& code, const std::string& identity);

  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Throws Error(cuda) naming the kernel and the module when it is not there.
  Kernel kernel(const std::string& name) const;
  // The device variable `name`, or nullopt when the module has none.
  std::optional<GlobalSymbol> global(const std::string& name) const;
  // The kernel a name expression of the compile lowered to (LinkableCode::lowered_names).
  Kernel kernel_for_expression(const std::string& name_expression) const;
  const std::string& name() const noexcept { return code_.name(); }
  const LinkableCode& code() const noexcept { return code_; }
  // The CUlibrary.
  void* handle() const noexcept { return handle_; }

 private:
  Module(void* handle, LinkableCode code, std::unique_ptr<detail::JitLogs> logs);
  void* handle_;
  LinkableCode code_;
  // The driver may JIT the library into another context later (lazy loading) and write
  // its logs then: the buffers live as long as the library.
  std::unique_ptr<detail::JitLogs> logs_;
};

class Kernel {
 public:
  const std::string& name() const noexcept { return name_; }
  const std::vector<ParamInfo>& params() const noexcept { return params_; }
  void* handle() const noexcept { return function_; }
  const std::shared_ptr<const Module>& module() const noexcept { return module_; }

  // Throws Error(usage) naming the kernel and parameter when count or a size differs.
  void check_args(std::span<const KernelArg> args) const;
  void launch(const LaunchConfig& config, std::span<const KernelArg> args) const;

  template <class... Args>
  void operator()(const LaunchConfig& config, const Args&... args) const {
    const std::array<KernelArg, sizeof...(Args)> packed{arg(args)...};
    launch(config, packed);
  }

 private:
  friend class Module;
  Kernel(std::shared_ptr<const Module> module, void* function, std::string name,
         std::vector<ParamInfo> params)
      : module_(std::move(module)), function_(function), name_(std::move(name)),
        params_(std::move(params)) {}

  std::shared_ptr<const Module> module_;
  void* function_;
  std::string name_;
  std::vector<ParamInfo> params_;
};

}  // namespace cujit
