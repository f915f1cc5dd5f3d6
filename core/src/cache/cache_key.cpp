#include "cujit/cache_key.hpp"

// SHA256_Init/Update/Final, deprecated in OpenSSL 3 in favour of EVP, and used on purpose:
// the first EVP digest in a process fetches the algorithm from the default provider, which
// costs 0.4-2.4 ms (measured on the build machine), more than a whole disk hit may take.
// The low-level functions run the same SHA-NI/AVX code with no provider and no allocation
// (first call about 7 us).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "cache/lower_hex.hpp"

namespace cujit {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_CTX context;
  // These return 0 only for a null context.
  SHA256_Init(&context);
  SHA256_Update(&context, bytes.data(), bytes.size());
  SHA256_Final(digest, &context);
  return detail::lower_hex(digest, sizeof digest);
}

CacheKey::CacheKey(std::string_view kind) : kind_(kind) {
  spans_.reserve(16);  // one allocation for a typical key's field offsets
  add("key-schema", schema_version);
  add("kind", kind);
  add("cujit", CUJIT_VERSION);
}

CacheKey& CacheKey::add(std::string_view label, std::string_view value) { return add_span(label, value, -1, 1); }

CacheKey& CacheKey::add_span(std::string_view label, std::string_view value, std::int32_t item, std::uint32_t group) {
  // label length, label, value length, value: unambiguous whatever the bytes are.
  Span span{0, 0, 0, 0, item, group};
  for (int which = 0; which < 2; ++which) {
    const std::string_view part = which == 0 ? label : value;
    stream_ += std::to_string(part.size());
    stream_ += ':';
    (which == 0 ? span.label_at : span.value_at) = static_cast<std::uint32_t>(stream_.size());
    stream_ += part;
  }
  span.label_size = static_cast<std::uint32_t>(label.size());
  span.value_size = static_cast<std::uint32_t>(value.size());
  spans_.push_back(span);
  return *this;
}

std::string CacheKey::description() const {
  std::string out;
  for (const Span& span : spans_) {
    const std::string_view value(stream_.data() + span.value_at, span.value_size);
    out.append(stream_.data() + span.label_at, span.label_size).append("=");
    if (value.size() > 80) {
      out += "<" + std::to_string(value.size()) + " bytes>";
    } else {
      out += value;
    }
    out += '\n';
  }
  return out;
}

CacheKey& CacheKey::add(std::string_view label, long long value) {
  return add(label, std::to_string(value));
}

CacheKey& CacheKey::add_list(std::string_view label, const std::vector<std::string>& items) {
  return add_list(label, items, 1);
}

CacheKey& CacheKey::add_list(std::string_view label, const std::vector<std::string>& items, std::size_t group) {
  // The same bytes whatever the group: it changes the recipe, never the digest.
  const std::string count = std::to_string(items.size());
  add_span(label, count, -2, 1);
  if (group == 0) group = 1;
  for (std::size_t i = 0; i < items.size(); ++i) {
    add_span(label, items[i], static_cast<std::int32_t>(i), static_cast<std::uint32_t>(group));
  }
  return *this;
}

namespace {

// A value short and printable enough to be shown in an explanation ("-DV=2"); longer or
// binary values are known by size and digest only.
constexpr std::size_t longest_shown = 160;

std::string shown_value(std::string_view value) {
  if (value.size() > longest_shown) return {};
  for (const char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) return {};
  }
  return std::string(value);
}

}  // namespace

std::vector<RecipeField> CacheKey::recipe() const {
  std::vector<RecipeField> out;
  out.reserve(spans_.size());
  std::string tuple_name;  // the first item of the current tuple of a grouped list
  std::vector<std::string> names_seen;
  for (const Span& span : spans_) {
    const std::string_view label(stream_.data() + span.label_at, span.label_size);
    const std::string_view value(stream_.data() + span.value_at, span.value_size);
    if (span.item == -2) {  // a list's count: its items say it
      names_seen.clear();
      continue;
    }
    RecipeField field;
    field.size = value.size();
    field.digest = sha256_hex(value).substr(0, 16);
    if (span.item < 0) {
      field.label = std::string(label);
      field.shown = shown_value(value);
    } else if (span.group <= 1) {
      field.label = std::string(label) + "#" + std::to_string(span.item + 1);
      field.shown = shown_value(value);
    } else {
      const std::size_t position = static_cast<std::size_t>(span.item) % span.group;
      if (position == 0) {
        // A tuple is named by its first item; a name met twice in the list ("alias") is
        // told apart by its place.
        tuple_name = std::string(value);
        int repeats = 0;
        for (const std::string& seen : names_seen) repeats += seen == tuple_name;
        names_seen.push_back(tuple_name);
        if (repeats > 0) tuple_name += " (" + std::to_string(repeats + 1) + ")";
        continue;  // the name is in the label
      }
      field.label = std::string(label) + ":" + tuple_name + (position == 1 ? "" : "#" + std::to_string(position));
    }
    out.push_back(std::move(field));
  }
  return out;
}

std::string CacheKey::field(std::string_view label) const {
  for (const Span& span : spans_) {
    if (span.item != -1) continue;
    if (std::string_view(stream_.data() + span.label_at, span.label_size) == label) {
      return stream_.substr(span.value_at, span.value_size);
    }
  }
  return {};
}

std::string CacheKey::digest() const { return sha256_hex(stream_); }

}  // namespace cujit
