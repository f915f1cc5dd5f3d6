#pragma once
// The Driver API, loaded at run time with dlopen + dlsym of the symbols cuda.h names. Linking libcuda
// directly would stop every cujit binary from starting on machines without a driver (CI),
// where NVRTC and nvJitLink work fine.

#include <cuda.h>

#include <string>

#include "support/vendor_call.hpp"

namespace cujit::detail {

// Each entry's type comes from cuda.h, so the versioned symbol (cuLinkCreate_v2...) and
// its signature always match the headers cujit was built with.
#define CUJIT_DRIVER_FUNCTIONS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet)    \
  X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)                          \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent)             \
  X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuLinkCreate) X(cuLinkAddData)                 \
  X(cuLinkComplete) X(cuLinkDestroy) X(cuLibraryLoadData) X(cuLibraryUnload) X(cuLibraryGetModule)              \
  X(cuLibraryGetKernel) X(cuKernelGetFunction) X(cuLibraryGetGlobal) X(cuLibraryGetKernelCount) \
  X(cuLibraryEnumerateKernels) X(cuKernelGetName) X(cuFuncGetParamInfo) X(cuLaunchKernel) X(cuStreamCreate)              \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD)    \
  X(cuMemcpyDtoH) X(cuMemsetD8) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)                 \
  X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) X(cuLaunchHostFunc) X(cuGraphCreate)           \
  X(cuGraphDestroy) X(cuGraphAddKernelNode) X(cuGraphAddMemcpyNode) X(cuGraphAddMemsetNode) \
  X(cuGraphAddHostNode) X(cuGraphAddEmptyNode) X(cuGraphGetNodes) X(cuGraphInstantiateWithFlags) \
  X(cuGraphExecDestroy) X(cuGraphLaunch) X(cuGraphExecKernelNodeSetParams) X(cuGraphExecUpdate) \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuCtxGetDevice)                      \
  X(cuGraphAddChildGraphNode) X(cuGraphAddEventRecordNode) X(cuGraphAddEventWaitNode)    \
  X(cuGraphAddMemAllocNode) X(cuGraphAddMemFreeNode) X(cuGraphConditionalHandleCreate)   \
  X(cuGraphAddNode) X(cuGraphUpload) X(cuGraphDebugDotPrint)                             \
  X(cuGraphExecMemcpyNodeSetParams) X(cuGraphExecMemsetNodeSetParams) X(cuEventCreate)   \
  X(cuEventDestroy) X(cuEventSynchronize) X(cuEventQuery) X(cuStreamIsCapturing) \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

// Every entry is timed and counted on the calling thread (cujit/vendor_time.hpp); `.function`
// is the raw pointer, for dlsym and for the library's identity.
struct DriverApi {
#define CUJIT_DECLARE_DRIVER_MEMBER(fn) VendorEntry<VendorLibrary::driver, decltype(&::fn)> fn;
  CUJIT_DRIVER_FUNCTIONS(CUJIT_DECLARE_DRIVER_MEMBER)
#undef CUJIT_DECLARE_DRIVER_MEMBER
};

// The loaded table, or nullptr when the driver cannot be loaded or initialised; the reason
// is then in driver_unavailable_reason(). Loaded once, thread-safe.
const DriverApi* try_driver() noexcept;
std::string driver_unavailable_reason();
// The table; throws Error(cuda) with the reason when there is no usable driver.
const DriverApi& driver();

// The driver in use, for keys of driver links: its CUDA version and the libcuda file this
// process loaded; "no driver: <reason>" without one.
std::string driver_identity();

// "CUDA_ERROR_INVALID_VALUE: invalid argument"
std::string describe(CUresult result);
// Throws CudaError naming `api_call` and `what` when result is not CUDA_SUCCESS.
void check(CUresult result, const char* api_call, const std::string& what,
           const std::string& log = {});

// The calling thread has a current context afterwards (device 0's primary unless one is
// current already).
void ensure_context();
// Retains (once per process) and makes current the primary context of `ordinal`.
void make_primary_context_current(int ordinal);

}  // namespace cujit::detail
