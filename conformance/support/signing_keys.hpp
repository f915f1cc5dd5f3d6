#pragma once
// Ed25519 key pairs for the remote tier's tests, made with OpenSSL and written as the PEM
// files an operator would make with `openssl genpkey -algorithm ed25519` and
// `openssl pkey -pubout`.

#include <filesystem>
#include <string>

namespace cujit::test {

struct SigningKeyFiles {
  std::filesystem::path private_key;  // PEM PKCS#8, unencrypted
  std::filesystem::path public_key;   // PEM SubjectPublicKeyInfo
};

// A fresh key pair written to `<directory>/<name>.key` and `<directory>/<name>.pub`.
// Fails the calling test (and returns empty paths) when OpenSSL cannot make one.
SigningKeyFiles make_signing_key(const std::filesystem::path& directory, const std::string& name);

// The process-wide key pair of a suite's trusted writers (made once, in a temporary
// directory that lives as long as the process).
const SigningKeyFiles& fleet_signing_key();

}  // namespace cujit::test
