#pragma once
// CUB DeviceReduce::Sum over int32, compiled ahead of time (aot/cub_reduce.cu).
#include <cstddef>

std::size_t aot_cub_sum_temp_bytes(std::size_t n);
// Returns the cudaError_t.
int aot_cub_sum(void* temp, std::size_t temp_bytes, const int* in, int* out, std::size_t n, void* stream);
