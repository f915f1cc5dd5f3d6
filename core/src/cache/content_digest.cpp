#include "cache/content_digest.hpp"

#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "cujit/cache_key.hpp"

namespace cujit::detail {
namespace {

struct Entry {
  std::string bytes;
  std::string digest;
};

// A cheap fingerprint to find the candidates: the size and up to 24 bytes from the start,
// the middle and the end. Equal bytes have equal fingerprints; a candidate is then compared
// in full.
std::uint64_t fingerprint(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ull ^ bytes.size();
  const auto mix = [&](std::size_t at) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + at, sizeof word);
    h = (h ^ word) * 1099511628211ull;
    h ^= h >> 29;
  };
  mix(0);
  mix(bytes.size() / 2 - 4);
  mix(bytes.size() - 8);
  return h;
}

class Memo {
 public:
  std::string digest_of(std::string_view bytes) {
    const std::uint64_t print = fingerprint(bytes);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const auto [first, last] = by_print_.equal_range(print);
      for (auto at = first; at != last; ++at) {
        const Entry& entry = entries_[at->second - dropped_];
        if (entry.bytes.size() == bytes.size() && std::memcmp(entry.bytes.data(), bytes.data(), bytes.size()) == 0) {
          ++counts_.hits;
          return entry.digest;
        }
      }
      ++counts_.misses;
    }
    std::string digest = sha256_hex(bytes);
    if (bytes.size() <= memo_max_item_bytes) keep(print, bytes, digest);
    return digest;
  }

  ContentDigestCounts counts() {
    const std::lock_guard<std::mutex> lock(mutex_);
    ContentDigestCounts out = counts_;
    out.entries = entries_.size();
    out.bytes = bytes_;
    return out;
  }

 private:
  void keep(std::uint64_t print, std::string_view bytes, const std::string& digest) {
    const std::lock_guard<std::mutex> lock(mutex_);
    // Another thread may have kept the same bytes meanwhile; a full bucket keeps no more.
    const auto [first, last] = by_print_.equal_range(print);
    std::size_t in_bucket = 0;
    for (auto at = first; at != last; ++at, ++in_bucket) {
      const Entry& entry = entries_[at->second - dropped_];
      if (entry.bytes.size() == bytes.size() && std::memcmp(entry.bytes.data(), bytes.data(), bytes.size()) == 0) return;
    }
    if (in_bucket >= memo_max_per_fingerprint) return;
    // Oldest first out, until the new copy fits.
    while (!entries_.empty() && bytes_ + bytes.size() > memo_max_bytes) drop_oldest();
    entries_.push_back(Entry{std::string(bytes), digest});
    bytes_ += bytes.size();
    by_print_.emplace(print, dropped_ + entries_.size() - 1);
  }

  void drop_oldest() {
    const Entry& oldest = entries_.front();
    const std::uint64_t print = fingerprint(oldest.bytes);
    const auto [first, last] = by_print_.equal_range(print);
    for (auto at = first; at != last; ++at) {
      if (at->second == dropped_) {
        by_print_.erase(at);
        break;
      }
    }
    bytes_ -= oldest.bytes.size();
    entries_.pop_front();
    ++dropped_;
  }

  std::mutex mutex_;
  std::deque<Entry> entries_;  // oldest first; entry i has the sequence number dropped_ + i
  std::unordered_multimap<std::uint64_t, std::size_t> by_print_;  // fingerprint -> sequence number
  std::size_t dropped_ = 0;
  std::size_t bytes_ = 0;
  ContentDigestCounts counts_;
};

Memo& memo() {
  static Memo* instance = new Memo();  // never destroyed: hashing may run during exit
  return *instance;
}

}  // namespace

std::string content_digest(std::string_view bytes) {
  if (bytes.size() < memo_min_bytes) return sha256_hex(bytes);
  return memo().digest_of(bytes);
}

ContentDigestCounts content_digest_counts() { return memo().counts(); }

}  // namespace cujit::detail
