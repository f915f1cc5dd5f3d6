#include "driver/driver_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include "cujit/error.hpp"
#include "support/library_identity.hpp"

namespace cujit::detail {
namespace {

struct LoadedDriver {
  DriverApi api;
  bool usable = false;
  std::string reason;
};

// The exported symbol a cuda.h name stands for: "cuLinkCreate" expands to cuLinkCreate_v2,
// whose declaration is the type of the table entry. cuGetProcAddress is not used: for some
// entry points (cuCtxGetDevice, cuCtxSynchronize) it returns the CUDA 13 variant, whose
// parameters differ from the declaration cuda.h gives that name.
#define CUJIT_STRINGIFY(name) #name
#define CUJIT_EXPANDED_NAME(name) CUJIT_STRINGIFY(name)

LoadedDriver load_driver() {
  LoadedDriver loaded;
  // Never unloaded: handles from it live until process exit.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    loaded.reason = std::string("libcuda.so.1 could not be loaded (") +
                    (why != nullptr ? why : "no reason given") + ")";
    return loaded;
  }
  auto resolve = [&](const char* name, void** slot) {
    *slot = dlsym(library, name);
    if (*slot == nullptr && loaded.reason.empty()) {
      loaded.reason = std::string("libcuda.so.1 has no ") + name + " (driver older than CUDA " +
                      std::to_string(CUDA_VERSION / 1000) + "." +
                      std::to_string(CUDA_VERSION % 1000 / 10) + "?)";
    }
  };
#define CUJIT_RESOLVE_DRIVER_MEMBER(fn) \
  resolve(CUJIT_EXPANDED_NAME(fn), reinterpret_cast<void**>(&loaded.api.fn.function));
  CUJIT_DRIVER_FUNCTIONS(CUJIT_RESOLVE_DRIVER_MEMBER)
#undef CUJIT_RESOLVE_DRIVER_MEMBER
  if (!loaded.reason.empty()) return loaded;

  const CUresult init = loaded.api.cuInit(0);
  if (init != CUDA_SUCCESS) {
    const char* name = nullptr;
    loaded.api.cuGetErrorName(init, &name);
    loaded.reason = std::string("cuInit failed: ") + (name != nullptr ? name : "unknown");
    return loaded;
  }
  int count = 0;
  if (loaded.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    loaded.reason = "the driver reports no CUDA device";
    return loaded;
  }
  loaded.usable = true;
  return loaded;
}

const LoadedDriver& loaded_driver() {
  static const LoadedDriver loaded = load_driver();
  return loaded;
}

}  // namespace

const DriverApi* try_driver() noexcept {
  try {
    const LoadedDriver& loaded = loaded_driver();
    return loaded.usable ? &loaded.api : nullptr;
  } catch (...) {
    return nullptr;
  }
}

std::string driver_unavailable_reason() { return loaded_driver().reason; }

std::string driver_identity() {
  const DriverApi* api = try_driver();
  if (api == nullptr) return "no driver: " + driver_unavailable_reason();
  int version = 0;
  api->cuDriverGetVersion(&version);
  return "driver " + std::to_string(version) + ": " +
         library_identity(reinterpret_cast<const void*>(api->cuDriverGetVersion.function));
}

const DriverApi& driver() {
  const LoadedDriver& loaded = loaded_driver();
  if (!loaded.usable) {
    throw CudaError("Driver API", CUDA_ERROR_NO_DEVICE,
                    "no usable CUDA driver: " + loaded.reason);
  }
  return loaded.api;
}

std::string describe(CUresult result) {
  const DriverApi* api = try_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api != nullptr) {
    api->cuGetErrorName(result, &name);
    api->cuGetErrorString(result, &text);
  }
  std::string out = name != nullptr ? name : "CUresult " + std::to_string(result);
  if (text != nullptr) out += std::string(": ") + text;
  return out;
}

void check(CUresult result, const char* api_call, const std::string& what,
           const std::string& log) {
  if (result == CUDA_SUCCESS) return;
  throw CudaError(api_call, static_cast<int>(result), what + " failed: " + describe(result),
                  log);
}

void ensure_context() {
  const DriverApi& api = driver();
  CUcontext current = nullptr;
  check(api.cuCtxGetCurrent(&current), "cuCtxGetCurrent", "querying the current context");
  if (current == nullptr) {
    make_primary_context_current(0);
  }
}

}  // namespace cujit::detail
