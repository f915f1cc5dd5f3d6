// The floor for a JIT reduction: CUB's device-wide sum, compiled ahead of time by nvcc with
// the toolkit's CUB, for every element type of the reduce_into benchmarks.
//
// The work is cujit's: items, accumulator and result all of type T (the benchmarks' spec).
// DeviceReduce::Sum accumulates in decltype(T + T), which is T for 4- and 8-byte types (the
// int32 and float64 floors have always called it) but int for 1- and 2-byte integers, and
// CUB sizes its tiles by the accumulator; for those DeviceReduce::Reduce with plus<T> and
// init T{0} accumulates in T as cujit does. The result is the same either way (wrapping
// sums); the tiles and partials are the ones cujit's spec asks for.
#include <cub/device/device_reduce.cuh>

#include <cuda/std/functional>
#include <type_traits>

#include "aot/cub_reduce.hpp"

namespace {

template <class T>
constexpr bool sum_accumulates_in_t = std::is_same_v<decltype(T{} + T{}), T>;

template <class T>
cudaError_t device_sum(void* temp, std::size_t& temp_bytes, const T* in, T* out, std::size_t n,
                       cudaStream_t stream) {
  const int count = static_cast<int>(n);
  if constexpr (sum_accumulates_in_t<T>) {
    return cub::DeviceReduce::Sum(temp, temp_bytes, in, out, count, stream);
  } else {
    return cub::DeviceReduce::Reduce(temp, temp_bytes, in, out, count, ::cuda::std::plus<T>{}, T{0}, stream);
  }
}

}  // namespace

template <class T>
std::size_t aot_cub_sum_temp_bytes(std::size_t n) {
  std::size_t bytes = 0;
  device_sum<T>(nullptr, bytes, nullptr, nullptr, n, nullptr);
  return bytes;
}

template <class T>
int aot_cub_sum(void* temp, std::size_t temp_bytes, const T* in, T* out, std::size_t n, void* stream) {
  return static_cast<int>(device_sum<T>(temp, temp_bytes, in, out, n, static_cast<cudaStream_t>(stream)));
}

#define CUJIT_AOT_CUB_INSTANTIATE(T)                          \
  template std::size_t aot_cub_sum_temp_bytes<T>(std::size_t); \
  template int aot_cub_sum<T>(void*, std::size_t, const T*, T*, std::size_t, void*);
CUJIT_AOT_CUB_TYPES(CUJIT_AOT_CUB_INSTANTIATE)
#undef CUJIT_AOT_CUB_INSTANTIATE

namespace {

// The operator of argmin_pair_operator, for nvcc.
struct ArgminOp {
  __device__ ArgminPair operator()(const ArgminPair& a, const ArgminPair& b) const {
    if (b.value < a.value || (b.value == a.value && b.index < a.index)) return b;
    return a;
  }
};

cudaError_t device_argmin(void* temp, std::size_t& temp_bytes, const ArgminPair* in, ArgminPair* out, std::size_t n,
                          ArgminPair init, cudaStream_t stream) {
  return cub::DeviceReduce::Reduce(temp, temp_bytes, in, out, static_cast<int>(n), ArgminOp{}, init, stream);
}

}  // namespace

std::size_t aot_cub_argmin_temp_bytes(std::size_t n) {
  std::size_t bytes = 0;
  device_argmin(nullptr, bytes, nullptr, nullptr, n, ArgminPair{}, nullptr);
  return bytes;
}

int aot_cub_argmin(void* temp, std::size_t temp_bytes, const ArgminPair* in, ArgminPair* out, std::size_t n,
                   ArgminPair init, void* stream) {
  return static_cast<int>(device_argmin(temp, temp_bytes, in, out, n, init, static_cast<cudaStream_t>(stream)));
}
