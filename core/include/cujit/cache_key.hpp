#pragma once
// Build cache keys: SHA-256 over labelled, length-prefixed fields, so that no two
// different field lists can produce the same byte stream. A key names every byte that can
// change what is built and nothing else (never pointers, sizes of data or values). The
// cache stage knows nothing of compilers: each key recipe (compile_key, link_key) adds the
// identity of the tools it runs and its inputs; docs/cache.md lists every recipe's fields.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cujit {

/// SHA-256 of bytes, as 64 lowercase hex digits (OpenSSL's SHA-256, no provider lookup).
std::string sha256_hex(std::string_view bytes);

/// One field of a key's recipe (CacheKey::recipe()): what a miss explanation compares. The
/// value itself is never kept, only its size, a digest and, for a short printable value of
/// a field that may show it (options, tool identities), its text.
struct RecipeField {
  std::string label;   ///< "nvrtc", "options#3" (a list's 3rd item), "files:inc/val.h" (a grouped list's item)
  std::uint64_t size = 0;  ///< the value's size in bytes
  std::string digest;  ///< the first 16 hex digits of the value's SHA-256
  std::string shown;   ///< the value as text when short and printable, else empty
};

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
  /// add_list() of items that come in tuples of `group` (name, content, ...): the same key,
  /// but the recipe names each tuple by its first item ("files:inc/val.h") and never shows
  /// the other items' values, so that a miss explanation can say "header inc/val.h: content
  /// changed".
  CacheKey& add_list(std::string_view label, const std::vector<std::string>& items, std::size_t group);

  /// The digest: 64 hex digits.
  std::string digest() const;
  /// What is built, as given to the constructor.
  const std::string& kind() const noexcept { return kind_; }
  /// The labelled fields as text, for diagnostics ("label=value" lines).
  /// Made from the fields when asked: a lookup pays nothing for it.
  std::string description() const;

  /// The fields as a recipe, for miss explanations: computed here from the key's bytes (a
  /// digest per field), so that making a key for a lookup costs nothing more than before.
  std::vector<RecipeField> recipe() const;
  /// The value of the first field labelled `label`, or empty.
  std::string field(std::string_view label) const;

  /// The version of the key layout, in every key: a new layout misses every old entry.
  static constexpr int schema_version = 4;

 private:
  std::string kind_;
  std::string stream_;
  // Where each field lies in stream_, for recipe(): offsets only, so add() stays cheap.
  struct Span {
    std::uint32_t label_at, label_size, value_at, value_size;
    std::int32_t item;    // -1: a field; -2: a list's count; >= 0: a list's item index
    std::uint32_t group;  // the list's tuple size (add_list with group), else 1
  };
  std::vector<Span> spans_;
  CacheKey& add_span(std::string_view label, std::string_view value, std::int32_t item, std::uint32_t group);
};

}  // namespace cujit
