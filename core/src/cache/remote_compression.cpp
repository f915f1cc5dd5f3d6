#include "cache/remote_compression.hpp"

#include <dlfcn.h>

#include <cstring>

#if __has_include(<zlib.h>)
#include <zlib.h>
#define CUJIT_HAVE_ZLIB_HEADER 1
#else
#define CUJIT_HAVE_ZLIB_HEADER 0
#endif

namespace cujit::detail {
namespace {

constexpr std::size_t header_size = sizeof compressed_value_magic + 8;

#if CUJIT_HAVE_ZLIB_HEADER
struct Zlib {
  decltype(&::compressBound) bound = nullptr;
  decltype(&::compress2) compress = nullptr;
  decltype(&::uncompress) uncompress = nullptr;
  std::string problem;  // empty when loaded
};

// Loaded once per process, never unloaded.
const Zlib& zlib() {
  static const Zlib loaded = [] {
    Zlib api;
    void* library = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      api.problem = std::string("zlib (dlopen of libz.so.1): ") + (why != nullptr ? why : "not found");
      return api;
    }
    api.bound = reinterpret_cast<decltype(&::compressBound)>(::dlsym(library, "compressBound"));
    api.compress = reinterpret_cast<decltype(&::compress2)>(::dlsym(library, "compress2"));
    api.uncompress = reinterpret_cast<decltype(&::uncompress)>(::dlsym(library, "uncompress"));
    if (api.bound == nullptr || api.compress == nullptr || api.uncompress == nullptr) {
      api.problem = "zlib (dlsym): libz.so.1 lacks compressBound, compress2 or uncompress";
    }
    return api;
  }();
  return loaded;
}
#endif

void put_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::uint64_t get_u64(std::string_view bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= std::uint64_t{static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)])} << (8 * i);
  return value;
}

}  // namespace

std::string compression_unavailable() {
#if CUJIT_HAVE_ZLIB_HEADER
  return zlib().problem;
#else
  return "this cujit was built without zlib.h (zlib1g-dev)";
#endif
}

bool is_compressed_value(std::string_view value) noexcept {
  return value.size() >= sizeof compressed_value_magic &&
         std::memcmp(value.data(), compressed_value_magic, sizeof compressed_value_magic) == 0;
}

std::string compress_value(std::string_view entry) {
#if CUJIT_HAVE_ZLIB_HEADER
  const Zlib& api = zlib();
  if (!api.problem.empty() || entry.size() > max_inflated_bytes) return std::string(entry);
  uLongf size = api.bound(static_cast<uLong>(entry.size()));
  std::string out(compressed_value_magic, sizeof compressed_value_magic);
  put_u64(out, entry.size());
  out.resize(header_size + size);
  // Level 6, zlib's default: most of level 9's ratio at a fraction of its time.
  if (api.compress(reinterpret_cast<Bytef*>(out.data() + header_size), &size,
                   reinterpret_cast<const Bytef*>(entry.data()), static_cast<uLong>(entry.size()), 6) != Z_OK) {
    return std::string(entry);
  }
  out.resize(header_size + size);
  if (out.size() >= entry.size()) return std::string(entry);
  return out;
#else
  return std::string(entry);
#endif
}

std::optional<std::string> inflate_value(std::string_view value, std::string& problem) {
  if (value.size() < header_size || !is_compressed_value(value)) {
    problem = "a compressed value shorter than its header";
    return std::nullopt;
  }
  const std::uint64_t declared = get_u64(value.substr(sizeof compressed_value_magic));
  const std::uint64_t stream = value.size() - header_size;
  if (declared > max_inflated_bytes || declared > stream * max_inflate_ratio + 64) {
    problem = "a compressed value declaring " + std::to_string(declared) + " bytes from " + std::to_string(stream) +
              " (more than zlib can expand to)";
    return std::nullopt;
  }
#if CUJIT_HAVE_ZLIB_HEADER
  const Zlib& api = zlib();
  if (!api.problem.empty()) {
    problem = "a compressed value, and " + api.problem;
    return std::nullopt;
  }
  std::string out(static_cast<std::size_t>(declared), '\0');
  uLongf size = static_cast<uLongf>(declared);
  const int status = api.uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                                    reinterpret_cast<const Bytef*>(value.data() + header_size), static_cast<uLong>(stream));
  if (status != Z_OK || size != declared) {
    problem = "a compressed value that does not inflate to its declared " + std::to_string(declared) +
              " bytes (zlib status " + std::to_string(status) + ")";
    return std::nullopt;
  }
  return out;
#else
  problem = "a compressed value, and " + compression_unavailable();
  return std::nullopt;
#endif
}

}  // namespace cujit::detail
