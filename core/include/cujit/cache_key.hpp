#pragma once
// Build cache keys: SHA-256 over labelled, length-prefixed fields, so that no two
// different field lists can produce the same byte stream. A key names every byte that can
// change what is built and nothing else (never pointers, sizes of data or values). The
// cache stage knows nothing of compilers: each key recipe (compile_key, link_key) adds the
// identity of the tools it runs and its inputs; docs/cache.md lists every recipe's fields.

#include <string>
#include <string_view>
#include <vector>

namespace cujit {

/// SHA-256 of bytes, as 64 lowercase hex digits (OpenSSL's SHA-256, no provider lookup).
std::string sha256_hex(std::string_view bytes);

/// A build cache key: labelled fields, hashed by digest() (see the top of this header).
class CacheKey {
 public:
  /// `kind` says what is built ("nvrtc-compile", "link", ...): keys of different kinds
  /// never collide. The key schema version and the cujit version are always included.
  explicit CacheKey(std::string_view kind);

  /// Adds the field `label` = `value` (any bytes); returns this key.
  CacheKey& add(std::string_view label, std::string_view value);
  /// Adds the field `label` = `value` in decimal; returns this key.
  CacheKey& add(std::string_view label, long long value);
  /// A list in the order given, each item a field of its own: order is meaning.
  CacheKey& add_list(std::string_view label, const std::vector<std::string>& items);

  /// The digest: 64 hex digits.
  std::string digest() const;
  /// What is built, as given to the constructor.
  const std::string& kind() const noexcept { return kind_; }
  /// The labelled fields as text, for diagnostics ("label=value" lines).
  const std::string& description() const noexcept { return description_; }

  /// The version of the key layout, in every key: a new layout misses every old entry.
  static constexpr int schema_version = 3;

 private:
  std::string kind_;
  std::string stream_;
  std::string description_;
};

}  // namespace cujit
