#include "cujit/cache_key.hpp"

// SHA256_Init/Update/Final, deprecated in OpenSSL 3 in favour of EVP, and used on purpose:
// the first EVP digest in a process fetches the algorithm from the default provider, which
// costs 0.4-2.4 ms (measured on the build machine), more than a whole disk hit may take.
// The low-level functions run the same SHA-NI/AVX code with no provider and no allocation
// (first call about 7 us).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

namespace cujit {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_CTX context;
  // These return 0 only for a null context.
  SHA256_Init(&context);
  SHA256_Update(&context, bytes.data(), bytes.size());
  SHA256_Final(digest, &context);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(2 * SHA256_DIGEST_LENGTH, '0');
  for (std::size_t i = 0; i < SHA256_DIGEST_LENGTH; ++i) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  return out;
}

CacheKey::CacheKey(std::string_view kind) : kind_(kind) {
  add("key-schema", schema_version);
  add("kind", kind);
  add("cujit", CUJIT_VERSION);
}

CacheKey& CacheKey::add(std::string_view label, std::string_view value) {
  // label length, label, value length, value: unambiguous whatever the bytes are.
  for (std::string_view part : {label, value}) {
    stream_ += std::to_string(part.size());
    stream_ += ':';
    stream_ += part;
  }
  description_ += std::string(label) + "=" +
                  (value.size() > 80 ? "<" + std::to_string(value.size()) + " bytes>"
                                     : std::string(value)) +
                  "\n";
  return *this;
}

CacheKey& CacheKey::add(std::string_view label, long long value) {
  return add(label, std::to_string(value));
}

CacheKey& CacheKey::add_list(std::string_view label, const std::vector<std::string>& items) {
  add(label, static_cast<long long>(items.size()));
  for (const std::string& item : items) add(label, item);
  return *this;
}

std::string CacheKey::digest() const { return sha256_hex(stream_); }

}  // namespace cujit
