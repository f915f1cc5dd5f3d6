#pragma once
// Deterministic reduce inputs generated on the device, and their host reference.

#include <cstdint>
#include <string>
#include <vector>

#include "cujit/abi.hpp"
#include "cujit/reduce.hpp"
#include "cujit/signature.hpp"

namespace cujit::test {

// value(i) for a type: signed ints in [-1000, 1000], unsigned in [0, 2000], floats in
// [0, 31.25] in steps of 1/64 (exact). The same formula runs on the device and the host.
inline std::uint32_t mix(std::uint64_t i) {
  return static_cast<std::uint32_t>(i * 2654435761ull) ^ static_cast<std::uint32_t>(i >> 15);
}

// Fills `count` elements of `type` at `out` on the device with value(i).
void fill_device(const Type& type, DevicePtr out, std::uint64_t count);

struct Reference {
  long double value = 0;   // floats: the long double result; ints: the wrapped value
  long double sum_abs = 0; // for the floating-point tolerance
};

// The reference of op(init, value(0..n-1)) in long double (floats) or with the wrap-around
// of `type` (integers), computed with all host threads.
Reference reference(const Type& type, reduce::Builtin op, std::uint64_t n, long double init);

// The result at `out` read as `type`, widened to long double.
long double read_result(const Type& type, DevicePtr out);

// The C-ABI device function `max_i32` (int32 max) that reduce tests build operators from.
inline abi::DeviceFunction max_i32_device_function() {
  abi::DeviceFunction fn;
  fn.name = "max_i32";
  fn.signature = Signature::parse("int32(int32, int32)");
  fn.param_names = {"a", "b"};
  fn.body = "return a < b ? b : a;";
  return fn;
}

// The sizes of `all` (ascending) at or below CUJIT_TEST_MAX_N, when set: compute-sanitizer
// makes kernels far slower, so its runs cap what the GPU reduce tests check.
std::vector<std::uint64_t> sizes_up_to_cap(const std::vector<std::uint64_t>& all);

}  // namespace cujit::test
