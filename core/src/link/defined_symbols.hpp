#pragma once
// The global symbols an input defines, where they can be read without a backend: PTX
// (.visible functions and kernels) and cubins (the ELF symbol table). Containers whose
// payloads are compressed (fatbin, object, archive) and LTO-IR are opaque: nullopt.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cujit/linkable_code.hpp"

namespace cujit::detail {

std::optional<std::vector<std::string>> defined_symbols(const LinkableCode& code);

// Whether defined_symbols can read inputs of this format (PTX, cubin).
bool definitions_readable(Format format) noexcept;

// defined_symbols of a readable input, remembered by exact content (format and every byte)
// for the process: the same library (NRT, an operator, a provider's code) is linked again
// and again, and comparing its bytes costs a small part of scanning them. Null for an
// unreadable input or one whose symbol table is unsound. Bounded (entries and bytes,
// least recently used first out); safe to call from any thread.
std::shared_ptr<const std::vector<std::string>> remembered_definitions(const LinkableCode& code);

// Reads an ELF64 symbol table; nullopt when the bytes do not hold a sound one (they are
// untrusted: every offset is checked).
std::optional<std::vector<std::string>> elf_global_definitions(std::string_view elf);

}  // namespace cujit::detail
