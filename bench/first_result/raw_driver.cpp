// The floor of the "exec to first result" family: the Driver API and nothing else. It
// loads the cubin cujit built for saxpy.cu (written by `first_result_cujit --write-cubin`
// in the driver's setup), so it does cujit's work minus the JIT and the cache lookup.
//
// Usage: first_result_raw_driver CUBIN
// Prints one JSON line (first_result.hpp); exit 0 when the result was checked correct.

#include <cuda.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "first_result.hpp"

namespace fr = cujit::first_result;

namespace {

// Names for the codes a machine without a usable GPU gives, for when cuGetErrorName
// cannot answer (the toolkit's stub libcuda answers nothing).
const char* fallback_name(CUresult status) {
  switch (status) {
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY (libcuda is the toolkit's stub, not a driver)";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    default: return nullptr;
  }
}

// A driver call's failure as text: the call, the error's name and its description.
void check(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  // cuGetErrorName works before cuInit succeeded; an unknown code leaves both null.
  if (cuGetErrorName(status, &name) != CUDA_SUCCESS) name = fallback_name(status);
  if (cuGetErrorString(status, &text) != CUDA_SUCCESS) text = nullptr;
  std::string message = std::string(call) + ": " + (name != nullptr ? name : "CUresult " + std::to_string(status));
  if (text != nullptr) message += std::string(" (") + text + ")";
  throw std::runtime_error(message);
}

// The cubin: a regular file of at most 64 MiB, read whole.
std::string read_cubin(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw std::runtime_error("cubin " + path + ": cannot be read (missing?)");
  if (!S_ISREG(info.st_mode)) throw std::runtime_error("cubin " + path + ": not a regular file");
  if (info.st_size <= 0 || info.st_size > (64 << 20)) {
    throw std::runtime_error("cubin " + path + ": size " + std::to_string(info.st_size) + " is not 1 byte to 64 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw std::runtime_error("cubin " + path + ": read failed");
  if (bytes.size() != static_cast<std::size_t>(info.st_size)) throw std::runtime_error("cubin " + path + ": short read");
  return bytes;
}

// Releases what was created, after the result line (untimed, like every program's exit).
struct Resources {
  bool retained = false;
  CUdevice device = 0;
  CUmodule module = nullptr;
  CUdeviceptr x = 0;
  CUdeviceptr y = 0;
  ~Resources() {
    if (x != 0) cuMemFree(x);
    if (y != 0) cuMemFree(y);
    if (module != nullptr) cuModuleUnload(module);
    if (retained) cuDevicePrimaryCtxRelease(device);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = fr::Clock::now();
  fr::Result result;
  result.program = "raw_driver";
  if (argc != 2) {
    result.error = "usage: first_result_raw_driver CUBIN";
    fr::print(result);
    return 2;
  }
  Resources owned;
  auto t_context = t0;
  bool have_context = false;
  try {
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&owned.device, 0), "cuDeviceGet");
    CUcontext context = nullptr;
    check(cuDevicePrimaryCtxRetain(&context, owned.device), "cuDevicePrimaryCtxRetain");
    owned.retained = true;
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    t_context = fr::Clock::now();
    have_context = true;

    const std::string cubin = read_cubin(argv[1]);
    check(cuModuleLoadData(&owned.module, cubin.data()), "cuModuleLoadData");
    CUfunction function = nullptr;
    check(cuModuleGetFunction(&function, owned.module, fr::kernel_name), "cuModuleGetFunction");
    const std::vector<float> x = fr::inputs_x();
    std::vector<float> y = fr::inputs_y();
    const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(fr::n);
    check(cuMemAlloc(&owned.x, bytes), "cuMemAlloc");
    check(cuMemAlloc(&owned.y, bytes), "cuMemAlloc");
    check(cuMemcpyHtoD(owned.x, x.data(), bytes), "cuMemcpyHtoD");
    check(cuMemcpyHtoD(owned.y, y.data(), bytes), "cuMemcpyHtoD");
    float a = fr::a;
    int n = fr::n;
    void* params[] = {&a, &owned.x, &owned.y, &n};
    check(cuLaunchKernel(function, fr::grid, 1, 1, fr::block, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
    // Synchronous on the legacy default stream: waits for the kernel.
    check(cuMemcpyDtoH(y.data(), owned.y, bytes), "cuMemcpyDtoH");
    result.error = fr::check(y);
    result.ok = result.error.empty();
  } catch (const std::exception& error) {
    result.error = error.what();
  }
  const auto t_done = fr::Clock::now();
  result.context_s = fr::seconds_between(t0, have_context ? t_context : t_done);
  result.build_launch_s = have_context ? fr::seconds_between(t_context, t_done) : 0.0;
  fr::print(result);
  return result.ok ? 0 : 1;
}
