#include "cujit/device.hpp"
#include "cujit/arch.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "cujit/error.hpp"
#include "driver/driver_api.hpp"

namespace cujit {

namespace detail {

void make_primary_context_current(int ordinal) {
  // Primary contexts are retained once per device and held until exit: every Module,
  // buffer and stream made through cujit lives in them, and releasing at static
  // destruction would race the driver's own teardown.
  static std::mutex mutex;
  static std::map<int, CUcontext> retained;
  const DriverApi& api = driver();
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = retained.find(ordinal);
    if (found == retained.end()) {
      CUdevice device = 0;
      check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet",
            "getting device " + std::to_string(ordinal));
      check(api.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain",
            "retaining the primary context of device " + std::to_string(ordinal));
      found = retained.emplace(ordinal, context).first;
    }
    context = found->second;
  }
  check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent",
        "making device " + std::to_string(ordinal) + "'s primary context current");
}

}  // namespace detail

bool has_device() noexcept { return detail::try_driver() != nullptr; }

std::string no_device_reason() {
  return has_device() ? std::string{} : detail::driver_unavailable_reason();
}

int device_count() {
  int count = 0;
  detail::check(detail::driver().cuDeviceGetCount(&count), "cuDeviceGetCount",
                "counting devices");
  return count;
}

std::string device_name(int ordinal) {
  const auto& api = detail::driver();
  CUdevice device = 0;
  detail::check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet",
                "getting device " + std::to_string(ordinal));
  char name[256] = {};
  detail::check(api.cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName",
                "reading the name of device " + std::to_string(ordinal));
  return name;
}

std::string driver_version() {
  int version = 0;
  detail::check(detail::driver().cuDriverGetVersion(&version), "cuDriverGetVersion",
                "reading the driver version");
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

void use_device(int ordinal) { detail::make_primary_context_current(ordinal); }

Stream::Stream() {
  detail::ensure_context();
  CUstream stream = nullptr;
  detail::check(detail::driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                "cuStreamCreate", "creating a stream");
  handle_ = stream;
}

Stream::~Stream() {
  if (handle_ != nullptr) detail::driver().cuStreamDestroy(static_cast<CUstream>(handle_));
}

Stream::Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream doomed(std::move(*this));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
  detail::check(detail::driver().cuStreamSynchronize(static_cast<CUstream>(handle_)),
                "cuStreamSynchronize", "synchronising a stream");
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : size_(bytes) {
  detail::ensure_context();
  CUdeviceptr ptr = 0;
  detail::check(detail::driver().cuMemAlloc(&ptr, bytes == 0 ? 1 : bytes), "cuMemAlloc",
                "allocating " + std::to_string(bytes) + " bytes");
  ptr_ = ptr;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0) detail::driver().cuMemFree(static_cast<CUdeviceptr>(ptr_));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer doomed(std::move(*this));
    ptr_ = std::exchange(other.ptr_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

namespace {
void check_range(std::size_t bytes, std::size_t size, const char* what) {
  if (bytes > size) {
    throw Error(ErrorKind::usage, what,
                std::to_string(bytes) + " bytes requested from a buffer of " +
                    std::to_string(size));
  }
}
}  // namespace

void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) {
  detail::ensure_context();
  detail::check(detail::driver().cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD",
                "copying " + std::to_string(bytes) + " bytes to the device");
}

void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) {
  detail::ensure_context();
  detail::check(detail::driver().cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH",
                "copying " + std::to_string(bytes) + " bytes from the device");
}

void copy_to_device_async(DevicePtr dst, const void* src, std::size_t bytes, StreamHandle stream) {
  detail::ensure_context();
  detail::check(detail::driver().cuMemcpyHtoDAsync(dst, src, bytes, static_cast<CUstream>(stream)),
                "cuMemcpyHtoDAsync", "copying " + std::to_string(bytes) + " bytes to the device");
}

void copy_to_host_async(void* dst, DevicePtr src, std::size_t bytes, StreamHandle stream) {
  detail::ensure_context();
  detail::check(detail::driver().cuMemcpyDtoHAsync(dst, src, bytes, static_cast<CUstream>(stream)),
                "cuMemcpyDtoHAsync", "copying " + std::to_string(bytes) + " bytes from the device");
}

void copy_device_async(DevicePtr dst, DevicePtr src, std::size_t bytes, StreamHandle stream) {
  detail::ensure_context();
  detail::check(detail::driver().cuMemcpyDtoDAsync(dst, src, bytes, static_cast<CUstream>(stream)),
                "cuMemcpyDtoDAsync", "copying " + std::to_string(bytes) + " bytes on the device");
}

void synchronize(StreamHandle stream) {
  detail::ensure_context();
  detail::check(detail::driver().cuStreamSynchronize(static_cast<CUstream>(stream)),
                "cuStreamSynchronize", "synchronising a stream");
}

void DeviceBuffer::copy_from_host(const void* src, std::size_t bytes) {
  check_range(bytes, size_, "DeviceBuffer::copy_from_host");
  copy_to_device(ptr_, src, bytes);
}

void DeviceBuffer::copy_to_host(void* dst, std::size_t bytes) const {
  check_range(bytes, size_, "DeviceBuffer::copy_to_host");
  cujit::copy_to_host(dst, ptr_, bytes);
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  detail::check(detail::driver().cuMemsetD8(ptr_, value, size_), "cuMemsetD8",
                "filling " + std::to_string(size_) + " bytes");
}

// Declared with Arch (code/), defined here: reading a device is the driver stage's job.
Arch Arch::of_device(int ordinal) {
  const auto& api = detail::driver();
  CUdevice device = 0;
  detail::check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet",
                "getting device " + std::to_string(ordinal));
  int major = 0, minor = 0;
  detail::check(api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                         device),
                "cuDeviceGetAttribute", "reading the compute capability");
  detail::check(api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                         device),
                "cuDeviceGetAttribute", "reading the compute capability");
  return Arch(major, minor);
}

}  // namespace cujit
