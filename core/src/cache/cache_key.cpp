#include "cujit/cache_key.hpp"

#include <openssl/evp.h>

#include <memory>

#include "cujit/error.hpp"

namespace cujit {

std::string sha256_hex(std::string_view bytes) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(context.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(context.get(), digest, &length) != 1) {
    throw Error(ErrorKind::cache, "OpenSSL EVP (SHA-256)", "computing a digest failed");
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
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
