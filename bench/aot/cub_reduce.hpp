#pragma once
// CUB DeviceReduce::Sum compiled ahead of time (aot/cub_reduce.cu), for the element types
// the reduce_into benchmarks compare: int and double.
#include <cstddef>

template <class T>
std::size_t aot_cub_sum_temp_bytes(std::size_t n);
// Returns the cudaError_t.
template <class T>
int aot_cub_sum(void* temp, std::size_t temp_bytes, const T* in, T* out, std::size_t n, void* stream);

extern template std::size_t aot_cub_sum_temp_bytes<int>(std::size_t);
extern template std::size_t aot_cub_sum_temp_bytes<double>(std::size_t);
extern template int aot_cub_sum<int>(void*, std::size_t, const int*, int*, std::size_t, void*);
extern template int aot_cub_sum<double>(void*, std::size_t, const double*, double*, std::size_t, void*);
