#pragma once
// Sizes for people: "0 B", "512 B", "1.5 KiB", "12.3 MiB", "1.0 GiB" (powers of 1024, the
// units CUJIT_CACHE_MAX_BYTES takes), as `cujit cache stats` shows them.

#include <cstdint>
#include <string>

namespace cujit::cli {

std::string human_bytes(std::uint64_t bytes);

}  // namespace cujit::cli
