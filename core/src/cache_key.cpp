#include "cujit/cache_key.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <memory>

#include "cujit/error.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"

namespace cujit {
namespace {

// Long spelling -> short spelling; both "--x=v" and "--x v" forms are handled by the caller.
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> spellings{{
    {"--gpu-architecture", "-arch"},
    {"--relocatable-device-code", "-rdc"},
    {"--device-debug", "-G"},
    {"--generate-line-info", "-lineinfo"},
    {"--define-macro", "-D"},
    {"--undefine-macro", "-U"},
    {"--include-path", "-I"},
    {"--pre-include", "-include"},
    {"--dlink-time-opt", "-dlto"},
    {"--use_fast_math", "-use_fast_math"},
    {"--std", "-std"},
    {"--extra-device-vectorization", "-extra-device-vectorization"},
}};

// Options that change how the compiler works, never what it produces.
bool runtime_only(std::string_view option) {
  for (std::string_view prefix : {"-pch", "--pch", "-time", "--time", "-split-compile",
                                  "--split-compile", "--fdevice-time-trace", "-fdevice-time-trace",
                                  "-jump-table-density", "-Werror", "-w", "--disable-warnings"}) {
    if (option.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// Options written as two tokens ("-D X", "-I dir", "-arch sm_90"), joined into one.
bool takes_separate_value(std::string_view option) {
  return option == "-D" || option == "-U" || option == "-I" || option == "-arch" ||
         option == "-include" || option == "-std";
}

std::string respell(std::string option) {
  for (const auto& [long_form, short_form] : spellings) {
    if (option == long_form) return std::string(short_form);
    if (option.size() > long_form.size() && option.compare(0, long_form.size(), long_form) == 0 &&
        option[long_form.size()] == '=') {
      const std::string value = option.substr(long_form.size() + 1);
      // -D, -U, -I take their value without '=' ; the others with.
      return std::string(short_form) + (short_form.size() == 2 ? "" : "=") + value;
    }
  }
  return option;
}

}  // namespace

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

std::vector<std::string> canonical_options(const std::vector<std::string>& options) {
  std::vector<std::string> includes, others;
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string option = respell(options[i]);
    if (takes_separate_value(option) && i + 1 < options.size()) {
      option += (option == "-arch" || option == "-std" ? "=" : "") + options[++i];
    }
    if (option == "-rdc") option = "-rdc=true";
    if (runtime_only(option)) continue;
    if (option.rfind("-I", 0) == 0) {
      includes.push_back(option);
    } else {
      others.push_back(option);
    }
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  others.insert(others.end(), includes.begin(), includes.end());
  return others;
}

CacheKey::CacheKey(std::string_view kind) : kind_(kind) {
  add("key-schema", schema_version);
  add("kind", kind);
  add("cujit", CUJIT_VERSION);
  add("nvrtc", nvrtc_version());
  add("nvjitlink", nvjitlink_version());
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

CacheKey& CacheKey::add_options(std::string_view label, const std::vector<std::string>& options) {
  std::string joined;
  for (const std::string& option : canonical_options(options)) joined += option + '\n';
  return add(label, joined);
}

std::string CacheKey::digest() const { return sha256_hex(stream_); }

}  // namespace cujit
