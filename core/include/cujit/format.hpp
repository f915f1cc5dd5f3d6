#pragma once
// The linkable formats and the one table that maps each to the linker input types and
// file extensions.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cujit {

/// A linkable format: PTX, CUDA C++, LTO-IR, cubin, fatbin, host object, static archive.
enum class Format { ptx, cu, ltoir, cubin, fatbin, object, archive };

/// Every Format, in declaration order.
inline constexpr Format all_formats[] = {Format::ptx,   Format::cu,     Format::ltoir,
                                         Format::cubin, Format::fatbin, Format::object,
                                         Format::archive};

/// One row of the format table.
struct FormatTraits {
  Format format;          ///< the format of this row
  std::string_view name;  ///< "ptx", "cu", "ltoir", "cubin", "fatbin", "object", "archive"
  /// nvJitLinkInputType, or -1 where nvJitLink takes no such input (cu is compiled first).
  int nvjitlink_input;
  /// CUjitInputType, or -1 where the Driver API linker takes no such input.
  int driver_input;
  /// Extensions with the dot; the first is the canonical one.
  std::span<const std::string_view> extensions;
};

/// The table row of `format`.
const FormatTraits& traits(Format format) noexcept;
/// The format's name (traits(format).name).
std::string_view to_string(Format format) noexcept;
/// "ptx" -> Format::ptx; nullopt for an unknown name.
std::optional<Format> parse_format(std::string_view name) noexcept;
/// ".cubin" -> Format::cubin (case-sensitive, with the dot); nullopt for an unknown one.
std::optional<Format> format_from_extension(std::string_view extension) noexcept;
/// "'.ptx', '.cu', ..." for error messages.
std::string known_extensions();

/// What the bytes look like, from magic numbers and text markers; nullopt when nothing fits.
/// Text that is not PTX is reported as Format::cu.
std::optional<Format> detect_format(std::string_view bytes) noexcept;

/// Empty when the bytes are a structurally sound instance of format; otherwise why not
/// (truncated header, section table past the end, a symbol naming a section that does not
/// exist, a fatbin entry whose payload is damaged, host object without device code...).
/// Binary formats are checked deeply enough that nothing nvJitLink 13.0 was seen to crash on
/// gets through: ELF tables and CUDA sections, fatbin entries and their (decompressed)
/// payloads, archive members and their content, the LTO-IR container header
/// (docs/linking.md, "Damaged binaries"). Never reads outside `bytes`.
std::string integrity_problem(Format format, std::string_view bytes);

/// The longest name (PTX identifier, cubin symbol name, archive member name, input name)
/// cujit hands nvJitLink, in characters. nvJitLink 13.0 parses a PTX .entry or .func name
/// recursively, about 2 bytes of the caller's stack per character (a name of 5,000,000
/// characters killed a thread with 8 MiB of stack, one of 150,000 a thread with 256 KiB),
/// and writes its undefined-symbol message (symbol and input name) past a heap buffer once it
/// is about 100,000 characters long (abort in malloc). 32,768 is longer than any name the
/// toolchains write (mangled template names run to a few thousand), needs about 64 KiB of
/// stack, and a symbol and an input name at the limit together stay under the message
/// buffer (docs/linking.md, "Damaged binaries").
inline constexpr std::size_t max_linker_name_length = 32768;

/// What kinds of device code the fatbins in `bytes` hold: a fatbin itself, or a host object
/// or archive with fatbins embedded. Found by walking each fatbin's entry headers, which stay
/// uncompressed even when the payloads are compressed.
struct DeviceCodeKinds {
  bool ptx = false;    ///< some entry is PTX
  bool sass = false;   ///< some entry is SASS (a cubin)
  bool ltoir = false;  ///< some entry is LTO-IR
};
/// The kinds of device code in the fatbins `bytes` holds; all false when none. Never reads
/// outside `bytes`.
DeviceCodeKinds embedded_code_kinds(std::string_view bytes) noexcept;

/// True when linking this input needs LTO: LTO-IR itself, or a container whose only code
/// is LTO-IR.
bool needs_lto(Format format, std::string_view bytes) noexcept;
/// The SM number a cubin's SASS was built for (90 for sm_90 and sm_90a), read from the ELF
/// header; nullopt when the bytes are no cubin or use an ELF ABI cujit does not know.
std::optional<int> cubin_sm_number(std::string_view bytes) noexcept;

/// The operand of PTX's .target directive ("sm_90a" for ".target sm_90a, debug"); nullopt
/// when there is none.
std::optional<std::string> ptx_target(std::string_view ptx);

/// True when this input holds any LTO-IR.
bool carries_ltoir(Format format, std::string_view bytes) noexcept;

}  // namespace cujit
