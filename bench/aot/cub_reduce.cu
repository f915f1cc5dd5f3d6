// The floor for a JIT reduction: CUB's DeviceReduce::Sum, compiled ahead of time by nvcc
// with the toolkit's CUB, for int and double.
#include <cub/device/device_reduce.cuh>

#include "aot/cub_reduce.hpp"

template <class T>
std::size_t aot_cub_sum_temp_bytes(std::size_t n) {
  std::size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const T*>(nullptr), static_cast<T*>(nullptr),
                         static_cast<int>(n));
  return bytes;
}

template <class T>
int aot_cub_sum(void* temp, std::size_t temp_bytes, const T* in, T* out, std::size_t n, void* stream) {
  return static_cast<int>(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, static_cast<int>(n),
                                                 static_cast<cudaStream_t>(stream)));
}

template std::size_t aot_cub_sum_temp_bytes<int>(std::size_t);
template std::size_t aot_cub_sum_temp_bytes<double>(std::size_t);
template int aot_cub_sum<int>(void*, std::size_t, const int*, int*, std::size_t, void*);
template int aot_cub_sum<double>(void*, std::size_t, const double*, double*, std::size_t, void*);
