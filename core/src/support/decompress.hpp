#pragma once
// Decompressing the payload of a compressed fatbin entry (a zstd frame or a raw LZ4 block)
// through the system's libzstd / liblz4, loaded on first use, so that the payload can be
// checked before a vendor library reads it. cujit does not link either: where a library is
// missing, callers are told so and fall back to the checks that need no decompression.
// Header-only: a few dlsym'd functions and one call each.

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cujit::detail {

enum class Compression { zstd, lz4 };

struct Decompressed {
  enum class Status {
    ok,           // `bytes` holds exactly the expected size
    unavailable,  // the library is not on this machine
    corrupt,      // not a frame / block of that kind, damaged, or of another size
  };
  Status status = Status::unavailable;
  std::string bytes;
  std::string detail;  // why, for corrupt
};

namespace decompress_api {
struct Zstd {
  std::size_t (*decompress)(void*, std::size_t, const void*, std::size_t) = nullptr;
  unsigned (*is_error)(std::size_t) = nullptr;
  const char* (*error_name)(std::size_t) = nullptr;
  unsigned long long (*content_size)(const void*, std::size_t) = nullptr;
};
struct Lz4 {
  int (*decompress_safe)(const char*, char*, int, int) = nullptr;
};
constexpr unsigned long long zstd_content_size_unknown = ~0ULL;
constexpr unsigned long long zstd_content_size_error = ~0ULL - 1;

template <class F>
void bind(void* handle, F& function, const char* name) {
  function = reinterpret_cast<F>(::dlsym(handle, name));
}

// Loaded once; the handles are never closed (the functions stay callable for the process).
inline const Zstd& zstd() {
  static const Zstd loaded = [] {
    Zstd api;
    void* handle = ::dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return api;
    bind(handle, api.decompress, "ZSTD_decompress");
    bind(handle, api.is_error, "ZSTD_isError");
    bind(handle, api.error_name, "ZSTD_getErrorName");
    bind(handle, api.content_size, "ZSTD_getFrameContentSize");
    if (!api.decompress || !api.is_error || !api.error_name || !api.content_size) return Zstd{};
    return api;
  }();
  return loaded;
}

inline const Lz4& lz4() {
  static const Lz4 loaded = [] {
    Lz4 api;
    void* handle = ::dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) bind(handle, api.decompress_safe, "LZ4_decompress_safe");
    return api;
  }();
  return loaded;
}
}  // namespace decompress_api

// Decompresses `compressed` into exactly `expected_size` bytes (the size the container
// declares, which the caller has already bounded); anything else is corrupt. The output
// buffer is left uninitialised, so input that claims much and holds little touches little
// memory.
inline Decompressed decompress(Compression method, std::string_view compressed,
                               std::uint64_t expected_size) {
  Decompressed out;
  // One byte of room beyond the expected size tells "longer than declared" from "exact".
  const std::size_t capacity = static_cast<std::size_t>(expected_size) + 1;
  std::size_t got = 0;
  std::unique_ptr<char[]> buffer;
  if (method == Compression::zstd) {
    const decompress_api::Zstd& api = decompress_api::zstd();
    if (api.decompress == nullptr) return out;
    out.status = Decompressed::Status::corrupt;
    const unsigned long long declared = api.content_size(compressed.data(), compressed.size());
    if (declared == decompress_api::zstd_content_size_error) {
      out.detail = "not a zstd frame";
      return out;
    }
    if (declared != decompress_api::zstd_content_size_unknown && declared != expected_size) {
      out.detail = "the zstd frame holds " + std::to_string(declared) + " bytes";
      return out;
    }
    buffer = std::make_unique_for_overwrite<char[]>(capacity);
    got = api.decompress(buffer.get(), capacity, compressed.data(), compressed.size());
    if (api.is_error(got) != 0) {
      out.detail = std::string("zstd: ") + api.error_name(got);
      return out;
    }
  } else {
    const decompress_api::Lz4& api = decompress_api::lz4();
    if (api.decompress_safe == nullptr) return out;
    out.status = Decompressed::Status::corrupt;
    constexpr std::uint64_t lz4_max = 0x7E000000;  // LZ4_MAX_INPUT_SIZE
    if (compressed.size() > lz4_max || capacity > lz4_max) {
      out.detail = "larger than an LZ4 block can be";
      return out;
    }
    buffer = std::make_unique_for_overwrite<char[]>(capacity);
    const int result = api.decompress_safe(compressed.data(), buffer.get(),
                                           static_cast<int>(compressed.size()),
                                           static_cast<int>(capacity));
    if (result < 0) {
      out.detail = "not a valid LZ4 block";
      return out;
    }
    got = static_cast<std::size_t>(result);
  }
  if (got != expected_size) {
    out.detail = "it decompresses to another size than the " + std::to_string(expected_size) +
                 " bytes declared";
    return out;
  }
  out.bytes.assign(buffer.get(), got);
  out.status = Decompressed::Status::ok;
  return out;
}

}  // namespace cujit::detail
