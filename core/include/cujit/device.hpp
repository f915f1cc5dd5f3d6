#pragma once
// Devices, contexts, streams and device memory. The Driver API is loaded at run time, so
// binaries linked with cujit start on machines without a driver; has_device() says
// whether GPU work can run.

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace cujit {

/// True when libcuda loads, cuInit succeeds and at least one device exists. Never throws.
bool has_device() noexcept;
/// Why has_device() is false ("libcuda.so.1 not found", "cuInit: CUDA_ERROR_NO_DEVICE"...),
/// empty when it is true.
std::string no_device_reason();
/// How many devices the driver sees; Error(cuda) without a driver.
int device_count();
/// The name of device `ordinal` ("NVIDIA H100 80GB HBM3"); Error(cuda) without it.
std::string device_name(int ordinal = 0);
/// Driver version as "13.0"; throws Error(cuda) without a driver.
std::string driver_version();

/// Makes the primary context of `ordinal` current on the calling thread (retained once per
/// process and device); Error(cuda) when it cannot. Every cujit call that needs a context
/// calls this for device 0 when the thread has none.
void use_device(int ordinal = 0);

/// A CUstream, opaque so that this header needs no cuda.h.
using StreamHandle = void*;
/// A device address (CUdeviceptr).
using DevicePtr = unsigned long long;

/// Copies `bytes` from host memory to a device address, synchronously; Error(cuda) on failure.
void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes);
/// Copies `bytes` from a device address to host memory, synchronously; Error(cuda) on failure.
void copy_to_host(void* dst, DevicePtr src, std::size_t bytes);

/// Copies host to device on `stream` (host memory should be pinned for real overlap;
/// pageable memory works and is staged by the driver); Error(cuda) on failure.
void copy_to_device_async(DevicePtr dst, const void* src, std::size_t bytes, StreamHandle stream);
/// Copies device to host on `stream`; Error(cuda) on failure.
void copy_to_host_async(void* dst, DevicePtr src, std::size_t bytes, StreamHandle stream);
/// Copies device to device on `stream`; Error(cuda) on failure.
void copy_device_async(DevicePtr dst, DevicePtr src, std::size_t bytes, StreamHandle stream);
/// Waits for `stream`'s work; Error(cuda) when it failed.
void synchronize(StreamHandle stream);

/// Owning, move-only CUstream (non-blocking).
class Stream {
 public:
  /// Creates a stream in the current context (device 0's primary when none); Error(cuda).
  Stream();
  /// Destroys the stream (never throws).
  ~Stream();
  /// Takes `other`'s stream; `other` holds none after.
  Stream(Stream&& other) noexcept;
  /// Destroys this stream and takes `other`'s.
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Waits for the stream's work; Error(cuda) when it failed.
  void synchronize() const;
  /// The CUstream.
  StreamHandle handle() const noexcept { return handle_; }

 private:
  StreamHandle handle_ = nullptr;
};

/// Owning, move-only device allocation.
class DeviceBuffer {
 public:
  /// Allocates `bytes` (cuMemAlloc) in the current context; Error(cuda) when it cannot.
  explicit DeviceBuffer(std::size_t bytes);
  /// Frees the allocation (never throws).
  ~DeviceBuffer();
  /// Takes `other`'s allocation; `other` holds none after.
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  /// Frees this allocation and takes `other`'s.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// The device address.
  DevicePtr ptr() const noexcept { return ptr_; }
  /// The size in bytes.
  std::size_t size() const noexcept { return size_; }

  /// Copies `bytes` from host memory to the start of the buffer; Error(usage) when `bytes`
  /// exceeds size(), Error(cuda) when the copy fails.
  void copy_from_host(const void* src, std::size_t bytes);
  /// Copies the first `bytes` of the buffer to host memory; errors as copy_from_host.
  void copy_to_host(void* dst, std::size_t bytes) const;
  /// Sets every byte of the buffer to `value`; Error(cuda) on failure.
  void fill_bytes(unsigned char value);

  /// The first `count` elements of type T, copied to the host; errors as copy_to_host.
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
