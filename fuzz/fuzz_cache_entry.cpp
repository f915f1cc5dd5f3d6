// Arbitrary bytes as a cache entry on disk and as a payload record: what another process
// (or a bad disk) may have left in the cache directory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cache/disk_cache.hpp"
#include "support/record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string key(64, 'a');
  const cujit::detail::DecodedEntry entry = cujit::detail::decode_entry(key, bytes);
  if (entry.payload) (void)cujit::detail::decode_record(*entry.payload);
  (void)cujit::detail::decode_record(bytes);
  return 0;
}
