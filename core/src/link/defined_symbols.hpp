#pragma once
// The global symbols an input defines, where they can be read without a backend: PTX
// (.visible functions and kernels) and cubins (the ELF symbol table). Containers whose
// payloads are compressed (fatbin, object, archive) and LTO-IR are opaque: nullopt.

#include <optional>
#include <string>
#include <vector>

#include "cujit/linkable_code.hpp"

namespace cujit::detail {

std::optional<std::vector<std::string>> defined_symbols(const LinkableCode& code);

// Reads an ELF64 symbol table; nullopt when the bytes do not hold a sound one (they are
// untrusted: every offset is checked).
std::optional<std::vector<std::string>> elf_global_definitions(std::string_view elf);

}  // namespace cujit::detail
