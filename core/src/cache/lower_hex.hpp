#pragma once
// Bytes as lower-case hexadecimal, two digits a byte: how digests appear in keys and files.

#include <cstddef>
#include <string>

namespace cujit::detail {

inline std::string lower_hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

}  // namespace cujit::detail
