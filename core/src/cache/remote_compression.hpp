#pragma once
// Compression of the remote tier's values with zlib (issue 32: entries shrink 1.7-6x, and a
// fleet's Redis holds every kernel it built). What Redis stores is then
//   "CUJITZLB" | uncompressed size (u64, little-endian) | a zlib stream (RFC 1950, with its
//   Adler-32) of the entry (the disk tier's encoding)
// and the signature (remote_signature.hpp) covers exactly those stored bytes, so a reader
// verifies before it inflates anything. A value that does not start with the magic is an
// entry as cujit wrote it before compression: read as it is (no miss for a fleet that
// upgrades). An entry that compression does not make smaller is stored as it is.
//
// libz is loaded with dlopen ("libz.so.1", the soname of zlib 1.x's ABI) the first time a
// value is compressed or inflated, like hiredis: a program linking libcujit needs no -lz,
// and one without a remote tier never maps it. Only the header (zlib1g-dev) is needed to
// build; without it, or without the library at run time, values are written uncompressed
// and a compressed value read is a miss that says why.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cujit::detail {

inline constexpr char compressed_value_magic[8] = {'C', 'U', 'J', 'I', 'T', 'Z', 'L', 'B'};
// zlib's deflate cannot expand more than about 1032:1; a declared size beyond that (or past
// this absolute cap) is a forged header, refused before any allocation.
inline constexpr std::uint64_t max_inflate_ratio = 1032;
inline constexpr std::uint64_t max_inflated_bytes = std::uint64_t{1} << 30;

// Whether libz could be loaded (empty), else why not.
std::string compression_unavailable();

// `entry` compressed in the format above, or `entry` itself when zlib is unavailable or the
// result would not be smaller.
std::string compress_value(std::string_view entry);

// Whether `value` is in the compressed format (starts with its magic).
bool is_compressed_value(std::string_view value) noexcept;

// The entry inside a compressed `value`, or nullopt with why in `problem` (truncated
// header, a declared size past the bounds, a stream that does not inflate to exactly the
// declared size, zlib unavailable).
std::optional<std::string> inflate_value(std::string_view value, std::string& problem);

}  // namespace cujit::detail
