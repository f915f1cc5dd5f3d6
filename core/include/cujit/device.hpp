#pragma once
// Devices, contexts, streams and device memory. The Driver API is loaded at run time, so
// binaries linked with cujit start on machines without a driver; has_device() says
// whether GPU work can run.

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace cujit {

// True when libcuda loads, cuInit succeeds and at least one device exists. Never throws.
bool has_device() noexcept;
// Why has_device() is false ("libcuda.so.1 not found", "cuInit: CUDA_ERROR_NO_DEVICE"...),
// empty when it is true.
std::string no_device_reason();
int device_count();
std::string device_name(int ordinal = 0);
// Driver version as "13.0"; throws Error(cuda) without a driver.
std::string driver_version();

// Makes the primary context of `ordinal` current on the calling thread (retained once per
// process and device). Every cujit call that needs a context calls this for device 0 when
// the thread has none.
void use_device(int ordinal = 0);

// Opaque driver handles, so this header needs no cuda.h.
using StreamHandle = void*;
using DevicePtr = unsigned long long;

// Synchronous copies between host memory and any device address.
void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, DevicePtr src, std::size_t bytes);

// Asynchronous copies on a stream (host memory should be pinned for real overlap; pageable
// memory works and is staged by the driver).
void copy_to_device_async(DevicePtr dst, const void* src, std::size_t bytes, StreamHandle stream);
void copy_to_host_async(void* dst, DevicePtr src, std::size_t bytes, StreamHandle stream);
void copy_device_async(DevicePtr dst, DevicePtr src, std::size_t bytes, StreamHandle stream);
void synchronize(StreamHandle stream);

// Owning, move-only CUstream (non-blocking).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void synchronize() const;
  StreamHandle handle() const noexcept { return handle_; }

 private:
  StreamHandle handle_ = nullptr;
};

// Owning, move-only device allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DevicePtr ptr() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }

  void copy_from_host(const void* src, std::size_t bytes);
  void copy_to_host(void* dst, std::size_t bytes) const;
  void fill_bytes(unsigned char value);

  template <class T>
  std::vector<T> to_vector(std::size_t count) const {
    std::vector<T> out(count);
    copy_to_host(out.data(), count * sizeof(T));
    return out;
  }

 private:
  DevicePtr ptr_ = 0;
  std::size_t size_ = 0;
};

}  // namespace cujit
