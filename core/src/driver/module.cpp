#include "cujit/module.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "cujit/error.hpp"
#include "driver/driver_api.hpp"
#include "support/handle_counts.hpp"
#include "support/planted_slowdown.hpp"
#include "support/trace_range.hpp"

namespace cujit {
namespace {

constexpr std::size_t log_capacity = 1 << 14;

std::vector<ParamInfo> read_params(CUfunction function) {
  std::vector<ParamInfo> params;
  const detail::DriverApi* api = detail::try_driver();
  if (api == nullptr) return params;  // a Kernel exists only with a driver
  for (std::size_t index = 0;; ++index) {
    std::size_t offset = 0, size = 0;
    // An index past the last parameter answers CUDA_ERROR_INVALID_VALUE.
    if (api->cuFuncGetParamInfo(function, index, &offset, &size) != CUDA_SUCCESS) break;
    params.push_back(ParamInfo{offset, size});
  }
  return params;
}

std::string kernel_names(CUlibrary library) {
  const auto& api = detail::driver();
  unsigned count = 0;
  if (api.cuLibraryGetKernelCount(&count, library) != CUDA_SUCCESS || count == 0) return "none";
  std::vector<CUkernel> kernels(count);
  if (api.cuLibraryEnumerateKernels(kernels.data(), count, library) != CUDA_SUCCESS) {
    return "unknown";
  }
  std::string names;
  for (CUkernel kernel : kernels) {
    const char* name = nullptr;
    if (api.cuKernelGetName(&name, kernel) == CUDA_SUCCESS && name != nullptr) {
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
  }
  return names;
}

bool loadable(Format format) {
  return format == Format::cubin || format == Format::fatbin || format == Format::ptx;
}

}  // namespace

namespace detail {
// The driver writes NUL-terminated logs into these; only their first bytes need clearing
// (a log it leaves alone reads as empty), not all 32 KB on every load.
struct JitLogs {
  std::unique_ptr<char[]> info = empty_log();
  std::unique_ptr<char[]> error = empty_log();
  static std::unique_ptr<char[]> empty_log() {
    auto buffer = std::make_unique_for_overwrite<char[]>(log_capacity);
    buffer[0] = '\0';
    return buffer;
  }
  static std::string text(const std::unique_ptr<char[]>& log) {
    return std::string(log.get(), strnlen(log.get(), log_capacity));
  }
  std::string text() const { return text(error) + text(info); }
};

// A kernel's parameter layout, read on first use (a launch's argument check, params()):
// cuFuncGetParamInfo answers one call per parameter and a failing one past the last, work
// that a load and a kernel lookup need not do. Shared by copies of the Kernel.
struct ParamTable {
  std::once_flag read;
  std::vector<ParamInfo> params;
};
}  // namespace detail

Module::Module(void* handle, LinkableCode code, std::unique_ptr<detail::JitLogs> logs)
    : handle_(handle), code_(std::move(code)), logs_(std::move(logs)) {}

std::shared_ptr<Module> Module::load(LinkableCode code) {
  if (!loadable(code.format())) {
    throw Error(ErrorKind::usage, "Module::load",
                "'" + code.name() + "' is " + std::string(to_string(code.format())) +
                    "; a module loads a cubin, a fatbin or PTX (link other formats first)");
  }
  const detail::TraceRange range("cujit module load");
  const detail::PlantedDelay planted;
  const auto& api = detail::driver();
  detail::ensure_context();
  auto logs = std::make_unique<detail::JitLogs>();
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {logs->info.get(), reinterpret_cast<void*>(std::uintptr_t{log_capacity}),
                    logs->error.get(), reinterpret_cast<void*>(std::uintptr_t{log_capacity})};
  // The module keeps the code for as long as the library lives, so the driver need not
  // copy it. PTX must end with a NUL: Bytes is a std::string, whose data() always has one
  // after its last byte, so the text is passed in place, never copied.
  const bool text_image = code.format() == Format::ptx;
  CUlibraryOption library_options[] = {CU_LIBRARY_BINARY_IS_PRESERVED};
  void* library_values[] = {reinterpret_cast<void*>(std::uintptr_t{1})};
  CUlibrary library = nullptr;
  const CUresult result = api.cuLibraryLoadData(
      &library, code.bytes().c_str(), options, values, 4, text_image ? nullptr : library_options,
      text_image ? nullptr : library_values, text_image ? 0 : 1);
  if (result != CUDA_SUCCESS) {
    throw CudaError("cuLibraryLoadData", result,
                    "loading '" + code.name() + "' (" + std::string(to_string(code.format())) + ", " +
                        std::to_string(code.bytes().size()) + " bytes) failed: " + detail::describe(result),
                    logs->text());
  }
  // Owned before anything else can throw.
  const std::string name = code.name();
  std::shared_ptr<Module> owner(new Module(library, std::move(code), std::move(logs)));
  detail::handle_created(detail::HandleKind::module);
  // With lazy loading (the default) the driver loads a library into a context when it is
  // first used there: load it into this one now, so that code the device cannot run (or
  // PTX that does not link) fails here, naming the code, with the JIT log.
  CUmodule module = nullptr;
  if (const CUresult loaded = api.cuLibraryGetModule(&module, library); loaded != CUDA_SUCCESS) {
    throw CudaError("cuLibraryGetModule", loaded,
                    "loading '" + name + "' into the current context failed: " + detail::describe(loaded),
                    owner->logs_->text());
  }
  return owner;
}

std::shared_ptr<Module> Module::shared(const LinkableCode& code, const std::string& identity) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<Module>> loaded;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto found = loaded.find(identity); found != loaded.end()) {
      if (auto module = found->second.lock()) return module;
    }
  }
  std::shared_ptr<Module> module = load(code);
  std::lock_guard<std::mutex> lock(mutex);
  std::erase_if(loaded, [](const auto& entry) { return entry.second.expired(); });
  auto [slot, inserted] = loaded.try_emplace(identity, module);
  if (auto existing = slot->second.lock(); !inserted && existing) return existing;
  slot->second = module;
  return module;
}

Module::~Module() {
  // The unload is part of what the module-load family times (load, kernel, unload): planted
  // too, so that the planted fraction slows the whole of it. A destructor must not throw, and
  // a bad CUJIT_PLANTED_SLOWDOWN (NaN here) was refused by the load already.
  std::optional<detail::PlantedDelay> planted;
  if (!std::isnan(detail::planted_fraction)) planted.emplace();
  if (const auto* api = detail::try_driver(); api != nullptr && handle_ != nullptr) {
    api->cuLibraryUnload(static_cast<CUlibrary>(handle_));
    detail::handle_released(detail::HandleKind::module);
  }
}

Kernel Module::kernel(const std::string& kernel_name) const {
  // With lazy loading (CUDA's default) the kernel is loaded into the context here, not in
  // load(): most of the module-load family's time, so planted like load().
  const detail::PlantedDelay planted;
  const auto& api = detail::driver();
  CUkernel kernel = nullptr;
  const CUresult result =
      api.cuLibraryGetKernel(&kernel, static_cast<CUlibrary>(handle_), kernel_name.c_str());
  if (result != CUDA_SUCCESS) {
    throw CudaError("cuLibraryGetKernel", result,
                    "no kernel '" + kernel_name + "' in module '" + name() +
                        "' (kernels there: " + kernel_names(static_cast<CUlibrary>(handle_)) +
                        "): " + detail::describe(result));
  }
  // The function of this kernel in the calling thread's context (loaded there on first use).
  detail::ensure_context();
  CUfunction function = nullptr;
  detail::check(api.cuKernelGetFunction(&function, kernel), "cuKernelGetFunction",
                "loading kernel '" + kernel_name + "' of module '" + name() + "' into the context");
  return Kernel(shared_from_this(), function, kernel_name);
}

Kernel::Kernel(std::shared_ptr<const Module> module, void* function, std::string name)
    : module_(std::move(module)),
      function_(function),
      name_(std::move(name)),
      params_(std::make_shared<detail::ParamTable>()) {}

const std::vector<ParamInfo>& Kernel::params() const noexcept {
  std::call_once(params_->read, [&] { params_->params = read_params(static_cast<CUfunction>(function_)); });
  return params_->params;
}

Kernel Module::kernel_for_expression(const std::string& name_expression) const {
  const auto found = code_.lowered_names().find(name_expression);
  if (found == code_.lowered_names().end()) {
    throw Error(ErrorKind::usage, "Module::kernel_for_expression",
                "module '" + name() + "' has no lowered name for '" + name_expression +
                    "' (add it to CompileOptions::name_expressions)");
  }
  return kernel(found->second);
}

std::optional<GlobalSymbol> Module::global(const std::string& symbol) const {
  detail::ensure_context();
  CUdeviceptr ptr = 0;
  std::size_t size = 0;
  const CUresult result = detail::driver().cuLibraryGetGlobal(
      &ptr, &size, static_cast<CUlibrary>(handle_), symbol.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) return std::nullopt;
  detail::check(result, "cuLibraryGetGlobal",
                "looking up '" + symbol + "' in module '" + name() + "'");
  return GlobalSymbol{ptr, size};
}

void Kernel::check_args(std::span<const KernelArg> args) const {
  const std::vector<ParamInfo>& params = this->params();
  if (args.size() != params.size()) {
    throw Error(ErrorKind::usage, "Kernel::launch",
                "kernel '" + name_ + "' takes " + std::to_string(params.size()) +
                    " parameter(s) but " + std::to_string(args.size()) + " argument(s) were given");
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].size != params[i].size) {
      throw Error(ErrorKind::usage, "Kernel::launch",
                  "kernel '" + name_ + "' parameter " + std::to_string(i) + " is " +
                      std::to_string(params[i].size) + " bytes but the argument is " +
                      std::to_string(args[i].size) + " bytes");
    }
  }
}

void Kernel::launch(const LaunchConfig& config, std::span<const KernelArg> args) const {
  const detail::PlantedDelay planted;
  check_args(args);
  std::vector<void*> pointers;
  pointers.reserve(args.size());
  for (const KernelArg& argument : args) pointers.push_back(const_cast<void*>(argument.value));
  detail::ensure_context();
  const CUresult result = detail::driver().cuLaunchKernel(
      static_cast<CUfunction>(function_), config.grid.x, config.grid.y, config.grid.z,
      config.block.x, config.block.y, config.block.z, config.shared_bytes,
      static_cast<CUstream>(config.stream), pointers.data(), nullptr);
  detail::check(result, "cuLaunchKernel", "launching kernel '" + name_ + "'");
}

}  // namespace cujit
