#pragma once
// CUB's device-wide sum compiled ahead of time (aot/cub_reduce.cu), for every element type
// the reduce_into benchmarks compare: each type cujit's reduce supports (int8..int64,
// uint8..uint64, float32, float64); and an argmin over a user-defined pair type.
#include <cstddef>
#include <cstdint>

// The element types, once: X(T) for each.
#define CUJIT_AOT_CUB_TYPES(X)                                                                     \
  X(std::int8_t) X(std::int16_t) X(int) X(std::int64_t) X(std::uint8_t) X(std::uint16_t)          \
  X(std::uint32_t) X(std::uint64_t) X(float) X(double)

template <class T>
std::size_t aot_cub_sum_temp_bytes(std::size_t n);
// The sum of in[0, n) into *out, accumulated in T (see aot/cub_reduce.cu). Returns the
// cudaError_t.
template <class T>
int aot_cub_sum(void* temp, std::size_t temp_bytes, const T* in, T* out, std::size_t n, void* stream);

#define CUJIT_AOT_CUB_DECLARE(T)                                     \
  extern template std::size_t aot_cub_sum_temp_bytes<T>(std::size_t); \
  extern template int aot_cub_sum<T>(void*, std::size_t, const T*, T*, std::size_t, void*);
CUJIT_AOT_CUB_TYPES(CUJIT_AOT_CUB_DECLARE)
#undef CUJIT_AOT_CUB_DECLARE

// The user-defined type of the argmin benchmarks: the JIT side gets the same layout as a
// reduce::UserType with the definition below, and the same operator in CUDA C++.
struct ArgminPair {
  float value;
  int index;
};
inline constexpr const char* argmin_pair_definition = "struct pair { float value; int index; };";
// The smaller value, ties to the smaller index: a total order, so every grouping of the
// reduction gives the same pair.
inline constexpr const char* argmin_pair_operator =
    "extern \"C\" __device__ pair argmin(pair a, pair b) {\n"
    "  if (b.value < a.value || (b.value == a.value && b.index < a.index)) return b;\n"
    "  return a;\n"
    "}\n";

std::size_t aot_cub_argmin_temp_bytes(std::size_t n);
// DeviceReduce::Reduce of in[0, n) with that operator and `init`. Returns the cudaError_t.
int aot_cub_argmin(void* temp, std::size_t temp_bytes, const ArgminPair* in, ArgminPair* out, std::size_t n,
                   ArgminPair init, void* stream);
