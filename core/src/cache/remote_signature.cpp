#include "cache/remote_signature.hpp"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstring>

#include "cujit/error.hpp"
#include "support/file_io.hpp"
#include "support/spawner.hpp"

namespace cujit::detail {
namespace {

constexpr std::string_view message_label = "cujit remote entry, signature format 1";
constexpr std::size_t envelope_header = sizeof signed_value_magic + sizeof(std::uint32_t) + ed25519_signature_size;
constexpr std::size_t ed25519_public_key_size = 32;

struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* context) const noexcept { EVP_MD_CTX_free(context); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Bio = std::unique_ptr<BIO, BioFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// OPENSSL_free is a macro: a function to hand to unique_ptr.
void openssl_free(void* memory) noexcept { OPENSSL_free(memory); }

// Never asks for a passphrase (OpenSSL's default would prompt on the terminal): an
// encrypted key is refused instead.
int no_passphrase(char*, int, int, void*) { return 0; }

// OpenSSL's first queued error as text, and the queue emptied (the next call must not
// report this one).
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no detail from OpenSSL";
  char text[256] = {};
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// The file's bytes (cujit's bounded reader of regular files), or why not.
std::optional<std::string> read_key_file(const std::filesystem::path& path, std::string& problem) {
  // A key is a trust anchor: a verify-key file someone else can change lets them add a key
  // and have forged values served (and copied to disk). So it is held to the rule for what
  // cujit runs: owned by root or this user, writable by no one else, in directories of the
  // same kind.
  // The path as written too: a link of another user's on the way could be pointed at
  // another key that passes the rule (red-team finding, 2026-11-28).
  std::optional<ExecutableRefusal> refused = check_path_as_written(path.string());
  if (!refused) refused = check_trusted_file(path.string());
  if (refused) {
    problem = "'" + path.string() + "' " + refused->why + " (a key file must be owned by root or this user " +
              "and writable by no one else, as must the directories above it and every link on the way)";
    return std::nullopt;
  }
  try {
    return read_file(path, "remote cache key", key_file_limit);
  } catch (const Error& error) {
    problem = error.what();
    return std::nullopt;
  }
}

bool is_ed25519(const EVP_PKEY* key) { return EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519; }

std::string raw_public_key(EVP_PKEY* key) {
  std::string raw(ed25519_public_key_size, '\0');
  std::size_t size = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &size) != 1) return {};
  raw.resize(size);
  return raw;
}

template <class T>
void append_le(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

}  // namespace

struct VerifyKeys::Key {
  explicit Key(Pkey owned) : pkey(std::move(owned)) {}
  Pkey pkey;
};

VerifyKeys::VerifyKeys() = default;
VerifyKeys::~VerifyKeys() = default;
VerifyKeys::VerifyKeys(VerifyKeys&&) noexcept = default;
VerifyKeys& VerifyKeys::operator=(VerifyKeys&&) noexcept = default;
SigningKey::SigningKey() = default;
SigningKey::~SigningKey() = default;
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;

std::string signed_message(std::string_view redis_key, std::string_view entry) {
  std::string message;
  message.reserve(message_label.size() + 1 + 8 + redis_key.size() + entry.size());
  message += message_label;
  message += '\0';
  append_le<std::uint64_t>(message, redis_key.size());
  message += redis_key;
  message += entry;
  return message;
}

std::optional<VerifyKeys> VerifyKeys::load(const std::filesystem::path& path, std::string& problem) {
  const std::optional<std::string> text = read_key_file(path, problem);
  if (!text) return std::nullopt;
  const Bio bio(BIO_new_mem_buf(text->data(), static_cast<int>(text->size())));
  if (!bio) {
    problem = "'" + path.string() + "': " + openssl_error();
    return std::nullopt;
  }
  VerifyKeys keys;
  const auto refuse = [&](const std::string& why) {
    problem = "'" + path.string() + "' is not a PEM file of Ed25519 public keys: " + why;
    return std::nullopt;
  };
  // Block by block (PEM_read_bio ends with "no start line" at the end of the text, and
  // only there): every block must be a public key, and an Ed25519 one.
  while (true) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long size = 0;
    if (PEM_read_bio(bio.get(), &name, &header, &data, &size) != 1) {
      const unsigned long last = ERR_peek_last_error();
      const bool end = ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
      const std::string why = openssl_error();
      if (!end) return refuse("after key " + std::to_string(keys.size()) + ": " + why);
      break;
    }
    const std::unique_ptr<char, decltype(&openssl_free)> owned_name(name, &openssl_free);
    const std::unique_ptr<char, decltype(&openssl_free)> owned_header(header, &openssl_free);
    const std::unique_ptr<unsigned char, decltype(&openssl_free)> owned_data(data, &openssl_free);
    const std::string block = name;
    if (block != "PUBLIC KEY") return refuse("block " + std::to_string(keys.size() + 1) + " is a " + block);
    const unsigned char* at = data;
    Pkey key(d2i_PUBKEY(nullptr, &at, size));
    if (!key || at != data + size) return refuse("block " + std::to_string(keys.size() + 1) + " does not decode: " + openssl_error());
    if (!is_ed25519(key.get())) return refuse("key " + std::to_string(keys.size() + 1) + " is not Ed25519");
    keys.keys_.push_back(std::make_shared<Key>(std::move(key)));
  }
  if (keys.keys_.empty()) return refuse("no key");
  return keys;
}

bool VerifyKeys::verify(std::string_view message, std::string_view signature) const {
  if (signature.size() != ed25519_signature_size) return false;
  for (const std::shared_ptr<Key>& key : keys_) {
    const MdCtx context(EVP_MD_CTX_new());
    if (!context) return false;
    // Ed25519 hashes the message itself (one shot, no digest named).
    const bool good =
        EVP_DigestVerifyInit(context.get(), nullptr, nullptr, nullptr, key->pkey.get()) == 1 &&
        EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                         reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
    ERR_clear_error();
    if (good) return true;
  }
  return false;
}

std::optional<SigningKey> SigningKey::load(const std::filesystem::path& path, std::string& problem) {
  std::optional<std::string> text = read_key_file(path, problem);
  if (!text) return std::nullopt;
  Pkey key;
  {
    const Bio bio(BIO_new_mem_buf(text->data(), static_cast<int>(text->size())));
    if (bio) key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  }
  OPENSSL_cleanse(text->data(), text->size());  // the private key's bytes leave no copy behind
  if (!key) {
    problem = "'" + path.string() + "' is not an unencrypted PEM private key: " + openssl_error();
    return std::nullopt;
  }
  if (!is_ed25519(key.get())) {
    problem = "'" + path.string() + "' holds a private key that is not Ed25519";
    return std::nullopt;
  }
  SigningKey signing;
  signing.key_ = std::make_shared<VerifyKeys::Key>(std::move(key));
  return signing;
}

std::string SigningKey::sign(std::string_view message) const {
  if (!key_) return {};
  const MdCtx context(EVP_MD_CTX_new());
  std::string signature(ed25519_signature_size, '\0');
  std::size_t size = signature.size();
  const bool good =
      context && EVP_DigestSignInit(context.get(), nullptr, nullptr, nullptr, key_->pkey.get()) == 1 &&
      EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1 &&
      size == ed25519_signature_size;
  ERR_clear_error();
  return good ? signature : std::string();
}

VerifyKeys SigningKey::public_key() const {
  VerifyKeys keys;
  if (!key_) return keys;
  const std::string raw = raw_public_key(key_->pkey.get());
  Pkey public_key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                              reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
  ERR_clear_error();
  if (public_key) keys.keys_.push_back(std::make_shared<VerifyKeys::Key>(std::move(public_key)));
  return keys;
}

bool SigningKey::trusted_by(const VerifyKeys& keys) const {
  if (!key_) return false;
  const std::string mine = raw_public_key(key_->pkey.get());
  for (const std::shared_ptr<VerifyKeys::Key>& key : keys.keys_) {
    if (!mine.empty() && raw_public_key(key->pkey.get()) == mine) return true;
  }
  ERR_clear_error();
  return false;
}

std::string sign_value(const SigningKey& key, std::string_view redis_key, std::string_view entry) {
  const std::string signature = key.sign(signed_message(redis_key, entry));
  if (signature.empty()) return {};
  std::string value(signed_value_magic, sizeof signed_value_magic);
  append_le<std::uint32_t>(value, signature_format_version);
  value += signature;
  value += entry;
  return value;
}

bool is_signed_value(std::string_view value) {
  return value.size() >= sizeof signed_value_magic &&
         std::memcmp(value.data(), signed_value_magic, sizeof signed_value_magic) == 0;
}

std::optional<std::string_view> verified_entry(const VerifyKeys& keys, std::string_view redis_key,
                                               std::string_view value, std::string& problem) {
  if (!is_signed_value(value)) {
    problem = "not signed (no signature envelope): written by a client without a signing key, or forged";
    return std::nullopt;
  }
  if (value.size() < envelope_header) {
    problem = "a signature envelope cut short (" + std::to_string(value.size()) + " bytes)";
    return std::nullopt;
  }
  std::uint32_t version = 0;
  for (std::size_t i = 0; i < sizeof version; ++i) {
    version |= static_cast<std::uint32_t>(static_cast<unsigned char>(value[sizeof signed_value_magic + i])) << (8 * i);
  }
  if (version != signature_format_version) {
    problem = "signature format " + std::to_string(version) + ", expected " + std::to_string(signature_format_version);
    return std::nullopt;
  }
  const std::string_view signature = value.substr(sizeof signed_value_magic + sizeof version, ed25519_signature_size);
  const std::string_view entry = value.substr(envelope_header);
  if (!keys.verify(signed_message(redis_key, entry), signature)) {
    problem = "its signature is not one of a trusted writer's for this key (forged, signed by an untrusted key, "
              "or copied from another key)";
    return std::nullopt;
  }
  return entry;
}

std::string_view unchecked_entry(std::string_view value) {
  if (!is_signed_value(value) || value.size() < envelope_header) return value;
  return value.substr(envelope_header);
}

}  // namespace cujit::detail
