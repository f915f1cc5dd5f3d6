#include "support/signing_keys.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <memory>

#include "support/fixtures.hpp"

namespace cujit::test {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct FileClose {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

bool write_pem(const std::filesystem::path& path, EVP_PKEY* key, bool private_part) {
  const std::unique_ptr<std::FILE, FileClose> file(std::fopen(path.c_str(), "w"));
  if (!file) return false;
  return private_part ? PEM_write_PrivateKey(file.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1
                      : PEM_write_PUBKEY(file.get(), key) == 1;
}

}  // namespace

SigningKeyFiles make_signing_key(const std::filesystem::path& directory, const std::string& name) {
  const std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  SigningKeyFiles files{directory / (name + ".key"), directory / (name + ".pub")};
  if (!key || !write_pem(files.private_key, key.get(), true) || !write_pem(files.public_key, key.get(), false)) {
    ADD_FAILURE() << "OpenSSL could not make the Ed25519 key pair " << name << " in " << directory;
    return {};
  }
  std::filesystem::permissions(files.private_key, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace);
  return files;
}

const SigningKeyFiles& fleet_signing_key() {
  static const TempDir directory;
  static const SigningKeyFiles files = make_signing_key(directory.path(), "fleet");
  return files;
}

}  // namespace cujit::test
