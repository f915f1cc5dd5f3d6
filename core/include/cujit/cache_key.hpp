#pragma once
// Build cache keys: SHA-256 over labelled, length-prefixed fields, so that no two
// different field lists can produce the same byte stream. A key names everything that
// changes the generated code and nothing else (never pointers, sizes of data or values).

#include <string>
#include <string_view>
#include <vector>

namespace cujit {

// SHA-256 of bytes, as 64 lowercase hex digits (OpenSSL EVP).
std::string sha256_hex(std::string_view bytes);

class CacheKey {
 public:
  // `kind` says what is built ("reduce", "nrt-library", "abi-function", "kernel-link"): keys
  // of different kinds never collide. The key schema version, the cujit version, and the
  // NVRTC and nvJitLink versions are always included.
  explicit CacheKey(std::string_view kind);

  CacheKey& add(std::string_view label, std::string_view value);
  CacheKey& add(std::string_view label, long long value);
  // Options in canonical form (see canonical_options): order and spelling do not matter.
  CacheKey& add_options(std::string_view label, const std::vector<std::string>& options);

  // The digest: 64 hex digits.
  std::string digest() const;
  const std::string& kind() const noexcept { return kind_; }
  // The labelled fields as text, for diagnostics ("label=value" lines).
  const std::string& description() const noexcept { return description_; }

  static constexpr int schema_version = 1;

 private:
  std::string kind_;
  std::string stream_;
  std::string description_;
};

// NVRTC / nvJitLink options in canonical form: long spellings mapped to short ones
// ("--gpu-architecture=sm_90" -> "-arch=sm_90", "-D X" -> "-DX"), options that only affect
// how the compiler runs (-pch, --pch-dir, -time, -split-compile, --fdevice-time-trace) dropped,
// include paths kept in order (their order changes the code), everything else sorted.
std::vector<std::string> canonical_options(const std::vector<std::string>& options);

}  // namespace cujit
