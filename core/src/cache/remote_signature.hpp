#pragma once
// Who wrote a remote value: Ed25519 signatures (OpenSSL EVP) over a value's Redis key and
// its entry bytes. Trusted writers hold a private key and sign what they store; readers
// hold the public keys of the writers they trust and use a value only when one of them
// signed exactly that entry under exactly that key. A checksum says a value is undamaged;
// only a signature says who wrote it: anyone who can write to Redis can recompute a
// checksum, nobody without the private key can sign.
//
// A signed value: "CUJITSIG" | signature format (u32, 1) | signature (64 bytes) | entry (the
// disk tier's encoding: magic, version, key, payload size and SHA-256, payload). The signed
// message is a label, the Redis key (length-prefixed) and the entry: a value copied under
// another key (another recipe, another toolkit prefix) fails, and so does any entry bytes
// but the ones signed.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

inline constexpr char signed_value_magic[8] = {'C', 'U', 'J', 'I', 'T', 'S', 'I', 'G'};
inline constexpr std::uint32_t signature_format_version = 1;
inline constexpr std::size_t ed25519_signature_size = 64;
// A key file larger than this is not a PEM key (one Ed25519 key is about 120 bytes; a
// verify file may hold several, for a rotation).
inline constexpr std::uint64_t key_file_limit = 64 * 1024;

// The bytes an Ed25519 signature of a remote value covers.
std::string signed_message(std::string_view redis_key, std::string_view entry);

// One or more Ed25519 public keys: the writers a reader trusts.
class VerifyKeys {
 public:
  // Every public key ("-----BEGIN PUBLIC KEY-----") in the PEM file `path` (a regular file
  // read bounded, cujit's reader); nullopt with why in `problem` when the file cannot be
  // read, holds no key, or holds a key that is not Ed25519.
  static std::optional<VerifyKeys> load(const std::filesystem::path& path, std::string& problem);
  // Whether one of the keys signed `message` with `signature`.
  bool verify(std::string_view message, std::string_view signature) const;
  std::size_t size() const noexcept { return keys_.size(); }

  VerifyKeys();
  ~VerifyKeys();
  VerifyKeys(VerifyKeys&&) noexcept;
  VerifyKeys& operator=(VerifyKeys&&) noexcept;

 private:
  friend class SigningKey;
  struct Key;
  std::vector<std::shared_ptr<Key>> keys_;
};

// A trusted writer's Ed25519 private key.
class SigningKey {
 public:
  // The private key ("-----BEGIN PRIVATE KEY-----", e.g. `openssl genpkey -algorithm
  // ed25519`) in the PEM file `path`; nullopt with why when it cannot be read or is not an
  // unencrypted Ed25519 private key.
  static std::optional<SigningKey> load(const std::filesystem::path& path, std::string& problem);
  // The 64-byte signature of `message`; empty when OpenSSL fails (the value is then not
  // stored).
  std::string sign(std::string_view message) const;
  // Its public key, which verifies what it signs.
  VerifyKeys public_key() const;
  // Whether `keys` holds its public key.
  bool trusted_by(const VerifyKeys& keys) const;

  SigningKey();
  ~SigningKey();
  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;

 private:
  std::shared_ptr<VerifyKeys::Key> key_;
};

// `entry` under `redis_key`, signed by `key`: the value a trusted writer stores. Empty when
// signing failed.
std::string sign_value(const SigningKey& key, std::string_view redis_key, std::string_view entry);
// Whether `value` is a signed value; if so its entry bytes.
bool is_signed_value(std::string_view value);
// The entry of the signed `value` under `redis_key` when one of `keys` signed it, else
// nullopt with why not in `problem` (not signed, a malformed envelope, no trusted signer).
std::optional<std::string_view> verified_entry(const VerifyKeys& keys, std::string_view redis_key,
                                               std::string_view value, std::string& problem);
// The entry of a signed `value`, its signature not checked (a reader that opted into an
// unauthenticated tier), or `value` itself when it is not signed.
std::string_view unchecked_entry(std::string_view value);

}  // namespace cujit::detail
