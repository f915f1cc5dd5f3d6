#pragma once
// How numba-cuda turns a function's compilation flags into an ABI tag: their summary,
// deflated as zlib does at level 9 with no header and a preset dictionary of the flag names
// and defaults (zlib.compressobj(level=9, wbits=-15, zdict=...)), in base64. numba names
// functions by that text, so cujit can only spell numba's symbols by compressing exactly
// as zlib does: this is a DEFLATE encoder of our own that makes zlib's choices, for short
// texts.

#include <optional>
#include <string>
#include <string_view>

namespace cujit::abi::detail {

/// The raw DEFLATE stream zlib's level 9 (lazy matching, chains of 4096, fixed or stored
/// blocks chosen by size) writes for `data` after `dictionary`, as one final block. Returns
/// nullopt where zlib could choose a dynamic-Huffman block (which this encoder does not
/// write) or the texts are longer than `max_deflate_window` together: the caller must not
/// guess a symbol then. Never throws except std::bad_alloc.
std::optional<std::string> deflate_like_zlib_level9(std::string_view dictionary,
                                                    std::string_view data);

/// Dictionary plus data this encoder handles (its hash chains never reach zlib's limits).
inline constexpr std::size_t max_deflate_window = 4096;

/// numba-cuda 0.30.4's dictionary for CUDAFlags: "numba", the metaclass name, "TrueFalse",
/// then every option's name and default text in declaration order. Never throws.
const std::string& numba_flags_dictionary();

/// Standard base64 with '=' padding (RFC 4648 section 4).
std::string base64(std::string_view bytes);

}  // namespace cujit::abi::detail
