// The floor for a JIT reduction: CUB's DeviceReduce::Sum over int32, compiled ahead of
// time by nvcc, with the same CUB the JIT build uses.
#include <cub/device/device_reduce.cuh>

#include "aot/cub_reduce.hpp"

std::size_t aot_cub_sum_temp_bytes(std::size_t n) {
  std::size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                         static_cast<int>(n));
  return bytes;
}

int aot_cub_sum(void* temp, std::size_t temp_bytes, const int* in, int* out, std::size_t n, void* stream) {
  return static_cast<int>(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, static_cast<int>(n),
                                                 static_cast<cudaStream_t>(stream)));
}
