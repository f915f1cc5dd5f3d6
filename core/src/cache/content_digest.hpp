#pragma once
// SHA-256 of texts and code a process hashes again and again: a KernelBuilder keys NRT's
// headers, the caller's headers and every input it is given, and a new builder over the
// same inputs hashes them all again (a third of a new builder's memory hit was SHA-256 of
// bytes it had hashed before). The memo keeps each digest with a copy of the bytes it was
// taken of and answers only when the bytes asked about are equal to that copy, compared in
// full: never a digest of other bytes, whatever their address, size or first bytes. A
// comparison reads the bytes an order of magnitude faster than SHA-256 does.

#include <cstddef>
#include <string>
#include <string_view>

namespace cujit::detail {

// sha256_hex(bytes), remembered for bytes of at least memo_min_bytes.
std::string content_digest(std::string_view bytes);

// Below this a digest is taken each time: the lookup would cost about as much.
inline constexpr std::size_t memo_min_bytes = 512;
static_assert(memo_min_bytes >= 16, "the fingerprint reads 8 bytes at the start, middle and end");
// What the memo holds at most (the copies of the bytes), and the largest item it keeps.
inline constexpr std::size_t memo_max_bytes = std::size_t{16} << 20;
inline constexpr std::size_t memo_max_item_bytes = std::size_t{4} << 20;
// Texts of one size that differ only away from the fingerprint's samples (an autotuner's
// variants, constants of one width) share a fingerprint: past this many, a new one is not
// kept, so a lookup compares at most this many candidates under the lock.
inline constexpr std::size_t memo_max_per_fingerprint = 8;

struct ContentDigestCounts {
  std::size_t hits = 0;
  std::size_t misses = 0;
  std::size_t entries = 0;
  std::size_t bytes = 0;
};
// For tests: what the memo did in this process.
ContentDigestCounts content_digest_counts();

}  // namespace cujit::detail
