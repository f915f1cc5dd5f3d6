#include "detail/handle_counts.hpp"
#include "cujit/module.hpp"

#include <cstdint>
#include <cstring>

#include "cujit/error.hpp"
#include "detail/driver_api.hpp"

namespace cujit {
namespace {

constexpr std::size_t log_capacity = 1 << 14;

std::string text(const std::string& buffer) {
  return std::string(buffer.c_str(), strnlen(buffer.c_str(), buffer.size()));
}

std::vector<ParamInfo> read_params(CUfunction function) {
  std::vector<ParamInfo> params;
  for (std::size_t index = 0;; ++index) {
    std::size_t offset = 0, size = 0;
    // An index past the last parameter answers CUDA_ERROR_INVALID_VALUE.
    if (detail::driver().cuFuncGetParamInfo(function, index, &offset, &size) != CUDA_SUCCESS) {
      break;
    }
    params.push_back(ParamInfo{offset, size});
  }
  return params;
}

std::string kernel_names(CUmodule module) {
  const auto& api = detail::driver();
  unsigned count = 0;
  if (api.cuModuleGetFunctionCount(&count, module) != CUDA_SUCCESS || count == 0) return "none";
  std::vector<CUfunction> functions(count);
  if (api.cuModuleEnumerateFunctions(functions.data(), count, module) != CUDA_SUCCESS) {
    return "unknown";
  }
  std::string names;
  for (CUfunction function : functions) {
    const char* name = nullptr;
    if (api.cuFuncGetName(&name, function) == CUDA_SUCCESS && name != nullptr) {
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
  }
  return names;
}

}  // namespace

std::shared_ptr<Module> Module::load(const Bytes& image, std::string name) {
  const auto& api = detail::driver();
  detail::ensure_context();
  std::string info(log_capacity, '\0'), error(log_capacity, '\0');
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {info.data(), reinterpret_cast<void*>(std::uintptr_t{log_capacity}),
                    error.data(), reinterpret_cast<void*>(std::uintptr_t{log_capacity})};
  CUmodule module = nullptr;
  const CUresult result = api.cuModuleLoadDataEx(&module, image.data(), 4, options, values);
  if (result != CUDA_SUCCESS) {
    throw CudaError("cuModuleLoadDataEx", result,
                    "loading '" + name + "' (" + std::to_string(image.size()) +
                        " bytes) failed: " + detail::describe(result),
                    text(error) + text(info));
  }
  // Owned before anything else can throw.
  std::shared_ptr<Module> owner(new Module(module, std::move(name)));
  detail::handle_created(detail::HandleKind::module);
  return owner;
}

Module::~Module() {
  if (const auto* api = detail::try_driver(); api != nullptr && handle_ != nullptr) {
    api->cuModuleUnload(static_cast<CUmodule>(handle_));
    detail::handle_released(detail::HandleKind::module);
  }
}

Kernel Module::kernel(const std::string& kernel_name) const {
  CUfunction function = nullptr;
  const CUresult result = detail::driver().cuModuleGetFunction(
      &function, static_cast<CUmodule>(handle_), kernel_name.c_str());
  if (result != CUDA_SUCCESS) {
    throw CudaError("cuModuleGetFunction", result,
                    "no kernel '" + kernel_name + "' in module '" + name_ +
                        "' (kernels there: " + kernel_names(static_cast<CUmodule>(handle_)) +
                        "): " + detail::describe(result));
  }
  return Kernel(shared_from_this(), function, kernel_name, read_params(function));
}

std::optional<GlobalSymbol> Module::global(const std::string& symbol) const {
  CUdeviceptr ptr = 0;
  std::size_t size = 0;
  const CUresult result =
      detail::driver().cuModuleGetGlobal(&ptr, &size, static_cast<CUmodule>(handle_), symbol.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) return std::nullopt;
  detail::check(result, "cuModuleGetGlobal",
                "looking up '" + symbol + "' in module '" + name_ + "'");
  return GlobalSymbol{ptr, size};
}

void Kernel::check_args(std::span<const KernelArg> args) const {
  if (args.size() != params_.size()) {
    throw Error(ErrorKind::usage, "Kernel::launch",
                "kernel '" + name_ + "' takes " + std::to_string(params_.size()) +
                    " parameter(s) but " + std::to_string(args.size()) + " argument(s) were given");
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].size != params_[i].size) {
      throw Error(ErrorKind::usage, "Kernel::launch",
                  "kernel '" + name_ + "' parameter " + std::to_string(i) + " is " +
                      std::to_string(params_[i].size) + " bytes but the argument is " +
                      std::to_string(args[i].size) + " bytes");
    }
  }
}

void Kernel::launch(const LaunchConfig& config, std::span<const KernelArg> args) const {
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
