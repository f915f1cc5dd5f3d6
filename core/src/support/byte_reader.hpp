#pragma once
// Reading untrusted binary input: little-endian integers and sub-ranges, every read checked
// against the end of the bytes and every offset sum checked for overflow. Header-only: the
// readers are a handful of lines each and sit in the innermost loops of the format checks.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace cujit::detail {

// True when [offset, offset + size) lies inside [0, total), without computing a sum that
// could wrap.
constexpr bool fits(std::uint64_t offset, std::uint64_t size, std::uint64_t total) noexcept {
  return offset <= total && size <= total - offset;
}

// The little-endian T at `offset`, or nullopt when it would reach past the end. Every host
// cujit supports is little-endian, as are the formats it reads.
template <class T>
std::optional<T> read_le(std::string_view bytes, std::uint64_t offset) noexcept {
  if (!fits(offset, sizeof(T), bytes.size())) return std::nullopt;
  T value{};
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The `size` bytes at `offset`, or nullopt when they would reach past the end.
inline std::optional<std::string_view> slice(std::string_view bytes, std::uint64_t offset,
                                             std::uint64_t size) noexcept {
  if (!fits(offset, size, bytes.size())) return std::nullopt;
  return bytes.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
}

}  // namespace cujit::detail
