#include "cujit/format.hpp"

#include <cuda.h>
#include <nvJitLink.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "support/byte_reader.hpp"
#include "support/decompress.hpp"

// Every binary input is untrusted: nvJitLink 13.0 and the driver linker trust the structure
// of cubins, fatbins, host objects, archives and LTO-IR, and die (SIGSEGV, SIGFPE) or hang on
// a single damaged byte. The checks below refuse, with the reason, everything those
// libraries were seen to die on and everything the formats forbid, before any tool sees the
// bytes. Every read goes through the bounds-checked readers of support/byte_reader.hpp.
// docs/linking.md ("Damaged binaries") lists the checks and where they came from.

namespace cujit {
namespace {

using detail::fits;
using detail::slice;

constexpr std::string_view ptx_ext[] = {".ptx"};
constexpr std::string_view cu_ext[] = {".cu"};
constexpr std::string_view ltoir_ext[] = {".ltoir"};
constexpr std::string_view cubin_ext[] = {".cubin"};
constexpr std::string_view fatbin_ext[] = {".fatbin"};
constexpr std::string_view object_ext[] = {".o", ".obj"};
constexpr std::string_view archive_ext[] = {".a", ".lib"};

// The one table: format -> name, nvJitLink input, driver input, extensions.
const std::array<FormatTraits, 7> format_table{{
    {Format::ptx, "ptx", NVJITLINK_INPUT_PTX, CU_JIT_INPUT_PTX, ptx_ext},
    {Format::cu, "cu", -1, -1, cu_ext},
    {Format::ltoir, "ltoir", NVJITLINK_INPUT_LTOIR, -1, ltoir_ext},
    {Format::cubin, "cubin", NVJITLINK_INPUT_CUBIN, CU_JIT_INPUT_CUBIN, cubin_ext},
    {Format::fatbin, "fatbin", NVJITLINK_INPUT_FATBIN, CU_JIT_INPUT_FATBINARY, fatbin_ext},
    {Format::object, "object", NVJITLINK_INPUT_OBJECT, CU_JIT_INPUT_OBJECT, object_ext},
    {Format::archive, "archive", NVJITLINK_INPUT_LIBRARY, CU_JIT_INPUT_LIBRARY, archive_ext},
}};

constexpr std::uint32_t fatbin_magic = 0xBA55ED50u;
constexpr std::string_view fatbin_magic_bytes("\x50\xed\x55\xba", 4);
constexpr std::uint32_t ltoir_magic = 0x7F4E43EDu;
constexpr std::uint16_t em_cuda = 190;
constexpr std::uint16_t coff_machine_amd64 = 0x8664;
constexpr std::string_view archive_magic = "!<arch>\n";

// Larger declared sizes are refused rather than allocated (LinkableCode::max_file_bytes).
constexpr std::uint64_t max_payload_bytes = std::uint64_t{1} << 30;

// Bounds-checked little-endian read; 0 past the end. Callers check the range they read
// first, so the 0 only ever stands in for bytes that a check has already refused.
template <class T>
T le(std::string_view bytes, std::uint64_t offset) noexcept {
  return detail::read_le<T>(bytes, offset).value_or(T{});
}

unsigned byte_at(std::string_view bytes, std::uint64_t offset) noexcept {
  return le<std::uint8_t>(bytes, offset);
}

std::string str(std::uint64_t value) { return std::to_string(value); }

std::string hex(std::uint64_t value) {
  constexpr char digits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), digits[value & 0xF]);
    value >>= 4;
  } while (value != 0);
  return "0x" + out;
}

// offset + count * entry, saturated: only for messages about tables that do not fit.
std::uint64_t saturated_end(std::uint64_t offset, std::uint64_t count, std::uint64_t entry) {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  if (entry != 0 && count > (max - offset) / entry) return max;
  return offset + count * entry;
}

bool is_elf(std::string_view bytes) { return bytes.substr(0, 4) == "\x7f" "ELF"; }

bool looks_like_text(std::string_view bytes) {
  return bytes.find('\0') == std::string_view::npos;
}

bool all_zero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == '\0'; });
}

bool contains_directive(std::string_view text, std::string_view directive) {
  for (std::size_t at = text.find(directive); at != std::string_view::npos;
       at = text.find(directive, at + 1)) {
    const bool starts_token = at == 0 || std::isspace(static_cast<unsigned char>(text[at - 1]));
    const std::size_t end = at + directive.size();
    const bool ends_token = end < text.size() && std::isspace(static_cast<unsigned char>(text[end]));
    if (starts_token && ends_token) return true;
  }
  return false;
}

// A name too long for nvJitLink (max_linker_name_length says why), shown by its start only.
std::string name_too_long(std::string_view what, std::string_view name) {
  return std::string(what) + " of " + std::to_string(name.size()) + " characters ('" +
         std::string(name.substr(0, 32)) + "...'): nvJitLink 13.0 crashes on names this long; the limit is " +
         std::to_string(max_linker_name_length);
}

// A character of a PTX name (identifier or number): [A-Za-z0-9_$%]. ASCII only, whatever
// the locale, as PTX is.
constexpr bool is_ptx_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '%';
}

// The first PTX name (a run of name characters) longer than max_linker_name_length, outside
// comments; one linear pass. Every PTX field that holds a name (.entry, .func, .global,
// .extern, parameters, labels, registers) is such a run.
std::string ptx_names_problem_exact(std::string_view ptx) {
  std::size_t line = 1;
  for (std::size_t at = 0; at < ptx.size();) {
    const char c = ptx[at];
    if (c == '\n') {
      ++line;
      ++at;
    } else if (c == '/' && at + 1 < ptx.size() && ptx[at + 1] == '/') {
      const std::size_t end = ptx.find('\n', at);
      at = end == std::string_view::npos ? ptx.size() : end;
    } else if (c == '/' && at + 1 < ptx.size() && ptx[at + 1] == '*') {
      const std::size_t end = ptx.find("*/", at + 2);
      const std::size_t stop = end == std::string_view::npos ? ptx.size() : end + 2;
      line += static_cast<std::size_t>(std::count(ptx.begin() + static_cast<std::ptrdiff_t>(at),
                                                  ptx.begin() + static_cast<std::ptrdiff_t>(stop), '\n'));
      at = stop;
    } else if (is_ptx_name_char(c)) {
      const std::size_t start = at;
      while (at < ptx.size() && is_ptx_name_char(ptx[at])) ++at;
      if (at - start > max_linker_name_length) {
        return name_too_long("line " + std::to_string(line) + " has a name", ptx.substr(start, at - start));
      }
    } else {
      ++at;
    }
  }
  return {};
}

// Whether `text` may hold a name over the limit: false only when it certainly holds none.
bool may_hold_long_ptx_name(std::string_view text) noexcept {
  // A run of more than L = max_linker_name_length name characters covers L + 1 consecutive
  // offsets, so it covers a multiple of L: looking at those offsets alone finds every such
  // run in the raw text, and a name outside comments is a run of the raw text (the comment
  // markers '/' and '*' are not name characters). Each look extends over one run only.
  constexpr std::size_t stride = max_linker_name_length;
  for (std::size_t at = stride; at < text.size(); at += stride) {
    if (!is_ptx_name_char(text[at])) continue;
    std::size_t start = at;
    while (start > 0 && is_ptx_name_char(text[start - 1])) --start;
    std::size_t end = at + 1;
    while (end < text.size() && is_ptx_name_char(text[end])) ++end;
    if (end - start > max_linker_name_length) return true;
  }
  return false;
}

std::string ptx_names_problem(std::string_view ptx) {
  // Every PTX input is checked, and a memory hit of a compile decodes one: the stride look
  // costs a few probes where the exact pass reads every byte (a sixth of a new builder's
  // memory hit). PtxNameCheck.TheStrideShortcutAgreesWithAnExactScan checks the
  // shortcut against an exact scan on texts whose runs sit across the stride.
  return may_hold_long_ptx_name(ptx) ? ptx_names_problem_exact(ptx) : std::string();
}

bool contains_fatbin(std::string_view bytes) {
  return bytes.find(fatbin_magic_bytes) != std::string_view::npos;
}

std::string with_context(const std::string& context, std::string problem) {
  if (problem.empty()) return problem;
  return context + ": " + problem;
}

// ---- ELF -----------------------------------------------------------------------------------
// Cubins (EM_CUDA) and host objects. Generic ELF64 structure first, then what the CUDA
// toolchain writes into cubins and nvJitLink relies on.

constexpr std::uint64_t elf_header_size = 64;
constexpr std::uint64_t section_header_size = 64;
constexpr std::uint64_t program_header_size = 56;
constexpr std::uint64_t symbol_size = 24;
constexpr std::uint64_t rela_size = 24;
constexpr std::uint64_t rel_size = 16;

constexpr std::uint16_t et_rel = 1;
constexpr std::uint16_t et_exec = 2;
#if defined(__aarch64__)
constexpr std::uint16_t host_machine = 183;  // EM_AARCH64
constexpr std::string_view host_machine_name = "aarch64";
#else
constexpr std::uint16_t host_machine = 62;  // EM_X86_64
constexpr std::string_view host_machine_name = "x86-64";
#endif

constexpr std::uint32_t sht_null = 0;
constexpr std::uint32_t sht_progbits = 1;
constexpr std::uint32_t sht_symtab = 2;
constexpr std::uint32_t sht_strtab = 3;
constexpr std::uint32_t sht_rela = 4;
constexpr std::uint32_t sht_note = 7;
constexpr std::uint32_t sht_nobits = 8;
constexpr std::uint32_t sht_rel = 9;
constexpr std::uint32_t sht_dynsym = 11;
constexpr std::uint32_t sht_symtab_shndx = 18;
// CUDA section types (SHT_LOPROC + n).
constexpr std::uint32_t sht_cuda_info = 0x70000000;
constexpr std::uint32_t sht_cuda_callgraph = 0x70000001;
constexpr std::uint32_t sht_cuda_prototype = 0x70000002;
constexpr std::uint32_t sht_cuda_constant0 = 0x70000064;
constexpr std::uint32_t sht_cuda_compat = 0x70000086;
// Shared-memory sections: like SHT_NOBITS, their offset points anywhere.
constexpr std::uint32_t sht_cuda_shared = 0x7000000a;
constexpr std::uint32_t sht_cuda_shared_reserved = 0x70000015;
// `.nv.global` in relocatable code (nvcc -rdc, NVRTC -rdc): uninitialised __device__ data,
// a NOBITS section of CUDA's own type. Its offset and size describe memory, not file bytes
// (a few KB array lies past the end of the file), exactly as for SHT_NOBITS.
constexpr std::uint32_t sht_cuda_nobits = 0x70000007;

// Whether a section of this type has bytes in the file (SHT_NOBITS and CUDA's NOBITS
// `.nv.global` have none).
constexpr bool in_file(std::uint32_t type) { return type != sht_nobits && type != sht_cuda_nobits; }
constexpr std::uint32_t cuda_constant_banks = 18;

constexpr std::uint64_t shf_execinstr = 0x4;
constexpr std::uint64_t shf_info_link = 0x40;
constexpr std::uint16_t shn_abs = 0xfff1;
constexpr std::uint16_t shn_common = 0xfff2;
constexpr std::uint16_t shn_xindex = 0xffff;
constexpr unsigned stt_func = 2;
constexpr unsigned stt_section = 3;

// e_ident[EI_OSABI] / [EI_ABIVERSION] of the two CUDA ELF ABIs (LLVM: ELFABIVERSION_CUDA_V1
// and V2); CUDA 13 writes the second for every architecture.
constexpr unsigned cuda_osabi_v1 = 0x33;
constexpr unsigned cuda_abi_v1 = 7;
constexpr unsigned cuda_osabi_v2 = 0x41;
constexpr unsigned cuda_abi_v2 = 8;
constexpr std::uint32_t ef_cuda_64bit_address_v1 = 0x400;

enum class ElfRole { cubin, host_object };

struct ElfSection {
  std::uint32_t name = 0;
  std::uint32_t type = 0;
  std::uint64_t flags = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint32_t info = 0;
  std::uint64_t align = 0;
  std::uint64_t entsize = 0;
};

struct Elf {
  std::string_view bytes;
  ElfRole role = ElfRole::cubin;
  unsigned abi_version = 0;
  std::uint16_t type = 0;
  std::uint32_t flags = 0;
  std::uint64_t section_table = 0;
  std::uint64_t program_table = 0;
  std::uint64_t program_count = 0;
  std::uint32_t names_index = 0;
  std::vector<ElfSection> sections;
  std::string_view names;   // the section name table, once checked
  std::uint32_t symtab = 0;  // the SHT_SYMTAB section, 0 when there is none
  std::uint64_t symbol_count = 0;

  bool cubin() const { return role == ElfRole::cubin; }
  std::uint32_t count() const { return static_cast<std::uint32_t>(sections.size()); }
  // Only for sections whose range has been checked.
  std::string_view contents(const ElfSection& section) const {
    if (!in_file(section.type)) return {};
    return slice(bytes, section.offset, section.size).value_or(std::string_view{});
  }
  std::string_view name(std::uint32_t index) const {
    if (index >= sections.size() || sections[index].name >= names.size()) return {};
    const std::string_view rest = names.substr(sections[index].name);
    return rest.substr(0, rest.find('\0'));
  }
  std::string label(std::uint32_t index) const {
    const std::string_view n = name(index);
    return "section " + str(index) + (n.empty() ? "" : " ('" + std::string(n) + "')");
  }
};

// A NUL-terminated string inside a checked string table.
std::string_view string_at(std::string_view table, std::uint64_t offset) {
  if (offset >= table.size()) return {};
  const std::string_view rest = table.substr(offset);
  return rest.substr(0, rest.find('\0'));
}

std::string cubin_flags_problem(const Elf& elf) {
  const std::uint32_t flags = elf.flags;
  if (elf.abi_version == cuda_abi_v1) {
    if ((flags & ef_cuda_64bit_address_v1) == 0) {
      return "e_flags " + hex(flags) + " describe a 32-bit CUDA ELF, which nothing links any more";
    }
    return {};
  }
  // CUDA ELF ABI v2 (e_ident[EI_ABIVERSION] 8): bits 8..15 hold the SM number. Bit 0 is never
  // written by the CUDA 13 toolchain, nor is the top nibble; nvJitLink 13.0 crashes on both.
  // The top byte is checked against the sections in cubin_sections_problem.
  if ((flags & 0x1u) != 0) {
    return "e_flags " + hex(flags) + " set bit 0, which the CUDA toolchain never writes";
  }
  // Except bit 28 of an executable cubin: nvJitLink 13.0 and the driver's linker set it in
  // what they link from code compiled with -G (0x10005a04 for sm_90), which must load.
  const std::uint32_t linker_debug = elf.type == et_exec ? 0x10000000u : 0u;
  if ((flags & 0xF0000000u & ~linker_debug) != 0) {
    return "e_flags " + hex(flags) + " set bits 28..31, which the CUDA toolchain never writes";
  }
  return {};
}

std::string elf_header_problem(Elf& elf) {
  const std::string_view b = elf.bytes;
  if (b.size() < elf_header_size) {
    return "truncated: " + str(b.size()) + " bytes, an ELF64 header needs " + str(elf_header_size);
  }
  if (!is_elf(b)) return "no ELF magic";
  if (byte_at(b, 4) != 2) return "not a 64-bit ELF file (EI_CLASS " + str(byte_at(b, 4)) + ")";
  if (byte_at(b, 5) != 1) {
    return "not a little-endian ELF file (EI_DATA " + str(byte_at(b, 5)) + ")";
  }
  if (byte_at(b, 6) != 1) return "unknown ELF identification version " + str(byte_at(b, 6));
  const auto type = le<std::uint16_t>(b, 16);
  elf.type = type;
  const auto machine = le<std::uint16_t>(b, 18);
  if (le<std::uint32_t>(b, 20) != 1) return "unknown ELF version " + str(le<std::uint32_t>(b, 20));
  elf.flags = le<std::uint32_t>(b, 48);
  if (elf.cubin()) {
    if (machine != em_cuda) return "ELF machine " + str(machine) + ", a cubin has 190 (EM_CUDA)";
    const unsigned osabi = byte_at(b, 7);
    elf.abi_version = byte_at(b, 8);
    const bool v1 = osabi == cuda_osabi_v1 && elf.abi_version == cuda_abi_v1;
    const bool v2 = osabi == cuda_osabi_v2 && elf.abi_version == cuda_abi_v2;
    if (!v1 && !v2) {
      return "unknown CUDA ELF ABI (OS ABI " + hex(osabi) + ", ABI version " +
             str(elf.abi_version) + "); cujit knows 0x33/7 and 0x41/8";
    }
    if (type != et_rel && type != et_exec) {
      return "ELF type " + str(type) + ", a cubin is relocatable (1) or executable (2)";
    }
    if (std::string problem = cubin_flags_problem(elf); !problem.empty()) return problem;
  } else {
    if (machine != host_machine) {
      return "a host object for ELF machine " + str(machine) + "; this build links host objects for " +
             std::string(host_machine_name) + " (machine " + str(host_machine) + ")";
    }
    if (type != et_rel) return "ELF type " + str(type) + ", a host object is relocatable (1)";
  }
  if (le<std::uint16_t>(b, 52) != elf_header_size) {
    return "ELF header size " + str(le<std::uint16_t>(b, 52)) + ", expected 64";
  }
  elf.program_table = le<std::uint64_t>(b, 32);
  elf.program_count = le<std::uint16_t>(b, 56);
  if (elf.program_count != 0) {
    if (le<std::uint16_t>(b, 54) != program_header_size) {
      return "program header entry size " + str(le<std::uint16_t>(b, 54)) + ", expected 56";
    }
    if (elf.program_table < elf_header_size || elf.program_table % 8 != 0) {
      return "the program header table at byte " + str(elf.program_table) + " is misplaced";
    }
    if (!fits(elf.program_table, elf.program_count * program_header_size, b.size())) {
      return "truncated: the program header table ends at byte " +
             str(saturated_end(elf.program_table, elf.program_count, program_header_size)) +
             " but the file has " + str(b.size());
    }
  }
  elf.section_table = le<std::uint64_t>(b, 40);
  if (elf.section_table == 0) return "no section header table";
  if (le<std::uint16_t>(b, 58) != section_header_size) {
    return "section header entry size " + str(le<std::uint16_t>(b, 58)) + ", expected 64";
  }
  if (!fits(elf.section_table, section_header_size, b.size())) {
    return "truncated: the section table starts at byte " + str(elf.section_table) +
           " but the file has " + str(b.size());
  }
  if (elf.section_table < elf_header_size || elf.section_table % 8 != 0) {
    return "the section header table at byte " + str(elf.section_table) +
           " is misplaced (it follows the ELF header, 8-byte aligned)";
  }
  // Extended numbering: with e_shnum 0 the count is section 0's sh_size, and with
  // e_shstrndx SHN_XINDEX the name table index is section 0's sh_link.
  std::uint64_t count = le<std::uint16_t>(b, 60);
  if (count == 0) count = le<std::uint64_t>(b, elf.section_table + 32);
  if (count == 0) return "an empty section header table";
  if (count > (b.size() - elf.section_table) / section_header_size) {
    return "truncated: the section table ends at byte " +
           str(saturated_end(elf.section_table, count, section_header_size)) +
           " but the file has " + str(b.size());
  }
  elf.names_index = le<std::uint16_t>(b, 62);
  if (elf.names_index == shn_xindex) elf.names_index = le<std::uint32_t>(b, elf.section_table + 40);
  elf.sections.resize(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = elf.section_table + i * section_header_size;
    ElfSection& s = elf.sections[i];
    s.name = le<std::uint32_t>(b, at);
    s.type = le<std::uint32_t>(b, at + 4);
    s.flags = le<std::uint64_t>(b, at + 8);
    s.offset = le<std::uint64_t>(b, at + 24);
    s.size = le<std::uint64_t>(b, at + 32);
    s.link = le<std::uint32_t>(b, at + 40);
    s.info = le<std::uint32_t>(b, at + 44);
    s.align = le<std::uint64_t>(b, at + 48);
    s.entsize = le<std::uint64_t>(b, at + 56);
  }
  return {};
}

std::string string_table_problem(const Elf& elf, std::uint32_t index) {
  const std::string_view table = elf.contents(elf.sections[index]);
  if (table.empty()) return elf.label(index) + " is an empty string table";
  if (table.front() != '\0') return elf.label(index) + " is a string table that does not start with NUL";
  if (table.back() != '\0') return elf.label(index) + " is a string table that is not NUL-terminated";
  return {};
}

std::string section_problem(const Elf& elf, std::uint32_t i) {
  const ElfSection& s = elf.sections[i];
  const std::uint32_t count = elf.count();
  if (s.type == sht_null) {
    return elf.cubin() ? elf.label(i) + " is a null section; only section 0 may be" : "";
  }
  if (s.name >= elf.names.size()) {
    return "section " + str(i) + " names byte " + str(s.name) + " of the section name table, which has " +
           str(elf.names.size());
  }
  if (in_file(s.type) && !fits(s.offset, s.size, elf.bytes.size())) {
    return "truncated: " + elf.label(i) + " ends at byte " + str(saturated_end(s.offset, s.size, 1)) +
           " but the file has " + str(elf.bytes.size());
  }
  if (!std::has_single_bit(s.align) && s.align != 0) {
    return elf.label(i) + " has alignment " + str(s.align) + ", not a power of two";
  }
  // nvJitLink divides by a cubin section's alignment.
  if (elf.cubin() && s.align == 0) return elf.label(i) + " has alignment 0";
  if (in_file(s.type) && s.size != 0 && s.align > 1 && s.offset % s.align != 0) {
    return elf.label(i) + " at byte " + str(s.offset) + " is not aligned to " + str(s.align);
  }
  if (s.link >= count) {
    return elf.label(i) + " links to section " + str(s.link) + ", but there are " + str(count);
  }
  // In a cubin every sh_info is a section index except a symbol table's (its first global)
  // and a code section's (its function symbol and register count).
  const bool code = s.type == sht_progbits && (s.flags & shf_execinstr) != 0;
  const bool cubin_info_is_section = elf.cubin() && !code && s.type != sht_symtab && s.type != sht_dynsym;
  const bool info_is_section = (s.flags & shf_info_link) != 0 || s.type == sht_rel ||
                               s.type == sht_rela || cubin_info_is_section;
  if (info_is_section && s.info >= count) {
    return elf.label(i) + " refers to section " + str(s.info) + ", but there are " + str(count);
  }
  const auto entries_problem = [&](std::uint64_t entry) -> std::string {
    if (s.entsize != entry) {
      return elf.label(i) + " has entries of " + str(s.entsize) + " bytes, expected " + str(entry);
    }
    if (s.size % entry != 0) {
      return elf.label(i) + " has " + str(s.size) + " bytes, not a whole number of " + str(entry) +
             "-byte entries";
    }
    return {};
  };
  switch (s.type) {
    case sht_symtab:
    case sht_dynsym: return entries_problem(symbol_size);
    case sht_rela: return entries_problem(rela_size);
    case sht_rel: return entries_problem(rel_size);
    case sht_strtab: return string_table_problem(elf, i);
    default: return {};
  }
}

// Sections holding the structure every reader walks. Two sections may share bytes (cubins
// alias constant banks and globals with their .nv.merc copies), but nothing may share bytes
// with a structure: it would be read as two things at once.
bool is_structure(const Elf& elf, std::uint32_t type) {
  switch (type) {
    case sht_symtab:
    case sht_dynsym:
    case sht_strtab:
    case sht_rel:
    case sht_rela:
    case sht_note:
    case sht_symtab_shndx: return true;
    case sht_cuda_info:
    case sht_cuda_callgraph:
    case sht_cuda_prototype:
    case sht_cuda_compat: return elf.cubin();
    default: return false;
  }
}

std::string overlap_problem(const Elf& elf) {
  struct Range {
    std::uint64_t begin;
    std::uint64_t end;
    bool structure;
    std::string what;
  };
  std::vector<Range> ranges;
  ranges.push_back({0, elf_header_size, true, "the ELF header"});
  ranges.push_back({elf.section_table, elf.section_table + elf.count() * section_header_size, true,
                    "the section header table"});
  if (elf.program_count != 0) {
    ranges.push_back({elf.program_table, elf.program_table + elf.program_count * program_header_size,
                      true, "the program header table"});
  }
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    const ElfSection& s = elf.sections[i];
    if (!in_file(s.type) || s.type == sht_null || s.size == 0) continue;
    if (elf.cubin() && (s.type == sht_cuda_shared || s.type == sht_cuda_shared_reserved)) continue;
    ranges.push_back({s.offset, s.offset + s.size, is_structure(elf, s.type), elf.label(i)});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  // Every pair that overlaps has one range starting inside the other; sweeping by start, a
  // structure is caught either as the earlier range (reaching past a later start) or as the
  // later one (starting before an earlier range ends).
  const Range* furthest = nullptr;            // of all ranges so far, the one ending last
  const Range* furthest_structure = nullptr;  // of the structures so far
  for (const Range& range : ranges) {
    if (furthest_structure != nullptr && range.begin < furthest_structure->end) {
      return range.what + " overlaps " + furthest_structure->what;
    }
    if (range.structure && furthest != nullptr && range.begin < furthest->end) {
      return range.what + " overlaps " + furthest->what;
    }
    if (furthest == nullptr || range.end > furthest->end) furthest = &range;
    if (range.structure && (furthest_structure == nullptr || range.end > furthest_structure->end)) {
      furthest_structure = &range;
    }
  }
  return {};
}

std::string sections_problem(Elf& elf) {
  const ElfSection& null = elf.sections[0];
  if (null.type != sht_null || null.name != 0 || null.flags != 0 || null.offset != 0 ||
      null.info != 0 || null.align != 0 || null.entsize != 0) {
    return "section 0 is not the null section";
  }
  if (elf.names_index == 0 || elf.names_index >= elf.count()) {
    return "the section name table index " + str(elf.names_index) + " is not a section (there are " +
           str(elf.count()) + ")";
  }
  const ElfSection& names = elf.sections[elf.names_index];
  if (names.type != sht_strtab) {
    return "the section name table (section " + str(elf.names_index) + ") is not a string table";
  }
  if (!fits(names.offset, names.size, elf.bytes.size())) {
    return "truncated: the section name table ends at byte " +
           str(saturated_end(names.offset, names.size, 1)) + " but the file has " +
           str(elf.bytes.size());
  }
  if (std::string problem = string_table_problem(elf, elf.names_index); !problem.empty()) {
    return problem;
  }
  elf.names = elf.contents(names);
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    if (std::string problem = section_problem(elf, i); !problem.empty()) return problem;
  }
  return overlap_problem(elf);
}

std::string symbol_table_problem(Elf& elf, std::uint32_t index) {
  const ElfSection& s = elf.sections[index];
  const std::uint32_t count = elf.count();
  if (s.link == 0 || elf.sections[s.link].type != sht_strtab) {
    return elf.label(index) + " names its strings in section " + str(s.link) +
           ", which is not a string table";
  }
  const std::string_view strings = elf.contents(elf.sections[s.link]);
  const std::string_view table = elf.contents(s);
  const std::uint64_t symbols = table.size() / symbol_size;
  if (s.info > symbols) {
    return elf.label(index) + " has " + str(symbols) + " symbols but says its globals start at " +
           str(s.info);
  }
  const bool has_shndx_table = std::any_of(elf.sections.begin(), elf.sections.end(),
                                           [](const ElfSection& x) { return x.type == sht_symtab_shndx; });
  for (std::uint64_t k = 0; k < symbols; ++k) {
    const std::uint64_t at = k * symbol_size;
    const auto name = le<std::uint32_t>(table, at);
    const auto shndx = le<std::uint16_t>(table, at + 6);
    if (name >= strings.size()) {
      return "symbol " + str(k) + " of " + elf.label(index) + " names byte " + str(name) +
             " of its string table, which has " + str(strings.size());
    }
    // Cubin symbols reach nvJitLink's name handling as PTX names do (host objects' symbols
    // are the host compiler's, which nvJitLink does not resolve).
    if (const std::string_view symbol_name = string_at(strings, name);
        elf.cubin() && symbol_name.size() > max_linker_name_length) {
      return name_too_long("symbol " + str(k) + " of " + elf.label(index) + " has a name", symbol_name);
    }
    const bool special = shndx == shn_abs || shndx == shn_common ||
                         (shndx == shn_xindex && has_shndx_table && !elf.cubin());
    if (shndx >= count && !special) {
      return "symbol " + str(k) + " ('" + std::string(string_at(strings, name)) + "') is in section " +
             str(shndx) + ", but there are " + str(count);
    }
  }
  if (s.type == sht_symtab) {
    if (elf.symtab != 0) return "two symbol tables (sections " + str(elf.symtab) + " and " + str(index) + ")";
    elf.symtab = index;
    elf.symbol_count = symbols;
  }
  return {};
}

// CUDA relocation types the toolchain writes only against functions (calls, function
// descriptors, kernel launches); nvJitLink 13.0 crashes when they name anything else. The
// red-team pass of issue 31 found 31-34, 47-49 and 61 too, in every relocation section
// (360 of 360 links of them against a section or object symbol died in nvJitLinkAddData,
// none against a function).
bool names_a_function(std::uint64_t type) {
  constexpr std::uint64_t types[] = {0x1f, 0x20, 0x21, 0x22, 0x23, 0x2f, 0x30, 0x31,
                                     0x3a, 0x3d, 0x3e, 0x3f, 0x49, 0x4b, 0x66};
  return std::find(std::begin(types), std::end(types), type) != std::end(types);
}

std::string relocation_problem(const Elf& elf, std::uint32_t index) {
  const ElfSection& s = elf.sections[index];
  const ElfSection& symbols = elf.sections[s.link];
  if (s.link == 0 || (symbols.type != sht_symtab && symbols.type != sht_dynsym)) {
    return elf.label(index) + " takes its symbols from section " + str(s.link) +
           ", which is not a symbol table";
  }
  if (s.info == 0 || elf.sections[s.info].type == sht_null) {
    return elf.label(index) + " relocates section " + str(s.info) + ", which is no section";
  }
  const ElfSection& target = elf.sections[s.info];
  const std::uint64_t symbol_count = symbols.size / symbol_size;
  const std::uint64_t entry = s.type == sht_rela ? rela_size : rel_size;
  const std::string_view table = elf.contents(s);
  for (std::uint64_t at = 0; at + entry <= table.size(); at += entry) {
    const auto offset = le<std::uint64_t>(table, at);
    const auto info = le<std::uint64_t>(table, at + 8);
    const std::uint64_t symbol = info >> 32;
    const std::uint64_t type = info & 0xFFFFFFFFu;
    const std::string which = "relocation " + str(at / entry) + " of " + elf.label(index);
    if (symbol >= symbol_count) {
      return which + " uses symbol " + str(symbol) + ", but its symbol table has " + str(symbol_count);
    }
    if (elf.cubin() && symbol == 0) return which + " uses the null symbol";
    if (elf.cubin() && names_a_function(type)) {
      const std::string_view symbol_table = elf.contents(symbols);
      if ((byte_at(symbol_table, symbol * symbol_size + 4) & 0xFu) != stt_func) {
        return which + " has type " + hex(type) + ", which names a function, but symbol " + str(symbol) +
               " is none";
      }
    }
    if (offset >= target.size) {
      return which + " patches byte " + str(offset) + " of " + elf.label(s.info) + ", which has " +
             str(target.size);
    }
    // CUDA relocation types are small numbers; nvJitLink 13.0 crashes on types past 16 bits.
    if (elf.cubin() && type > 0xFFFF) return which + " has type " + hex(type) + ", which is no CUDA relocation";
  }
  return {};
}

std::string program_headers_problem(const Elf& elf) {
  for (std::uint64_t k = 0; k < elf.program_count; ++k) {
    const std::uint64_t at = elf.program_table + k * program_header_size;
    const auto type = le<std::uint32_t>(elf.bytes, at);
    const auto offset = le<std::uint64_t>(elf.bytes, at + 8);
    const auto file_size = le<std::uint64_t>(elf.bytes, at + 32);
    if (type != 0 && !fits(offset, file_size, elf.bytes.size())) {
      return "truncated: program header " + str(k) + " maps bytes up to " +
             str(saturated_end(offset, file_size, 1)) + " but the file has " + str(elf.bytes.size());
    }
  }
  return {};
}

// ---- cubin: what the CUDA toolchain writes ----

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The section type a cubin section's name promises; nullopt for names without a promise.
// nvJitLink finds these sections by name and by type, and crashes when the two disagree.
std::optional<std::vector<std::uint32_t>> promised_types(std::string_view name) {
  if (name == ".nv.info" || starts_with(name, ".nv.info.")) return {{sht_cuda_info}};
  if (name == ".nv.callgraph") return {{sht_cuda_callgraph}};
  if (name == ".nv.prototype") return {{sht_cuda_prototype}};
  if (name == ".nv.compat") return {{sht_cuda_compat}};
  if (starts_with(name, ".note.")) return {{sht_note}};
  if (starts_with(name, ".text.")) return {{sht_progbits}};
  if (name == ".symtab") return {{sht_symtab}};
  if (name == ".strtab" || name == ".shstrtab") return {{sht_strtab}};
  if (starts_with(name, ".rela.")) return {{sht_rela}};
  if (starts_with(name, ".rel.")) return {{sht_rel}};
  if (starts_with(name, ".nv.constant")) {
    std::uint32_t bank = 0;
    std::size_t at = 12;
    if (at >= name.size() || !std::isdigit(static_cast<unsigned char>(name[at]))) return std::nullopt;
    while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at])) && bank < 100) {
      bank = bank * 10 + static_cast<std::uint32_t>(name[at++] - '0');
    }
    if (bank >= cuda_constant_banks) return std::nullopt;
    return {{sht_progbits, sht_cuda_constant0 + bank}};
  }
  return std::nullopt;
}

// Types whose sections nvJitLink looks up by name: such a section must carry its name.
bool type_needs_name(std::uint32_t type) {
  return type == sht_cuda_info || type == sht_cuda_callgraph || type == sht_cuda_prototype ||
         type == sht_cuda_compat || type == sht_note || type == sht_symtab || type == sht_strtab ||
         type == sht_rela || type == sht_rel ||
         (type >= sht_cuda_constant0 && type < sht_cuda_constant0 + cuda_constant_banks);
}

// The section a per-function section (.nv.info.k, .nv.constant0.k) or a relocation section
// (.rela.text.k) belongs to is named in its sh_info, and its name says which one it must be.
std::string name_link_problem(const Elf& elf, std::uint32_t i) {
  const ElfSection& s = elf.sections[i];
  const std::string_view name = elf.name(i);
  std::string expected;
  if (name == ".nv.info") {
    if (s.info != 0) return elf.label(i) + " belongs to section " + str(s.info) + ", but it is global";
    return {};
  }
  if (starts_with(name, ".nv.info.")) expected = ".text." + std::string(name.substr(9));
  if (starts_with(name, ".nv.constant0.")) expected = ".text." + std::string(name.substr(14));
  if (s.type == sht_rela && starts_with(name, ".rela")) expected = std::string(name.substr(5));
  if (s.type == sht_rel && starts_with(name, ".rel")) expected = std::string(name.substr(4));
  if (expected.empty()) return {};
  if (s.info == 0 || elf.name(s.info) != expected) {
    return elf.label(i) + " belongs to " + elf.label(s.info) + ", not to " + expected;
  }
  return {};
}

std::string cubin_names_problem(const Elf& elf) {
  std::vector<std::string_view> names;
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    const ElfSection& s = elf.sections[i];
    const std::string_view name = elf.name(i);
    names.push_back(name);
    const auto promised = promised_types(name);
    if (promised && std::find(promised->begin(), promised->end(), s.type) == promised->end()) {
      return elf.label(i) + " has type " + hex(s.type) + ", which its name does not allow";
    }
    if (!promised && type_needs_name(s.type)) {
      return elf.label(i) + " has type " + hex(s.type) + " under a name that does not say so";
    }
    if (starts_with(name, ".text.") && (s.flags & shf_execinstr) == 0) {
      return elf.label(i) + " holds code but is not executable";
    }
    if (std::string problem = name_link_problem(elf, i); !problem.empty()) return problem;
  }
  // nvJitLink finds sections by name: two of one name are read as one.
  std::sort(names.begin(), names.end());
  const auto twice = std::adjacent_find(names.begin(), names.end());
  if (twice != names.end()) return "two sections are named '" + std::string(*twice) + "'";
  return {};
}

// Symbol `index` of the symbol table, or nullopt past its end.
struct Symbol {
  std::uint32_t name = 0;
  unsigned type = 0;
  std::uint16_t shndx = 0;
};
std::optional<Symbol> symbol(const Elf& elf, std::uint64_t index) {
  if (elf.symtab == 0 || index >= elf.symbol_count) return std::nullopt;
  const std::string_view table = elf.contents(elf.sections[elf.symtab]);
  const std::uint64_t at = index * symbol_size;
  return Symbol{le<std::uint32_t>(table, at), byte_at(table, at + 4) & 0xFu,
                le<std::uint16_t>(table, at + 6)};
}

// A code section's sh_info holds its function's symbol (bits 0..23) and register count
// (bits 24..31); the symbol must be a function defined in that section.
std::string code_section_problem(const Elf& elf, std::uint32_t i) {
  const std::uint32_t index = elf.sections[i].info & 0xFFFFFFu;
  const auto function = symbol(elf, index);
  if (!function) {
    return elf.label(i) + " belongs to symbol " + str(index) + ", but there are " + str(elf.symbol_count);
  }
  if (function->type != stt_func || function->shndx != i) {
    return elf.label(i) + " belongs to symbol " + str(index) + ", which is not a function defined in it";
  }
  return {};
}

// EIATTR records (.nv.info*, .nv.compat): format byte, attribute byte, then a 16-bit value
// (formats 1-3) or a 16-bit size and that many bytes (format 4, EIFMT_SVAL).
constexpr unsigned eifmt_sval = 4;
constexpr unsigned eiattr_image_slot = 0x02;
constexpr unsigned eiattr_param_cbank = 0x0a;
constexpr unsigned eiattr_externs = 0x0f;
constexpr unsigned eiattr_frame_size = 0x11;
constexpr unsigned eiattr_min_stack_size = 0x12;
constexpr unsigned eiattr_kparam_info = 0x17;
constexpr unsigned eiattr_max_stack_size = 0x23;
constexpr unsigned eiattr_regcount = 0x2f;

std::string attribute_problem(const Elf& elf, std::uint32_t i, unsigned attribute,
                              std::string_view value, std::uint64_t at) {
  const std::string where = elf.label(i) + ": attribute " + hex(attribute) + " at byte " + str(at);
  // The symbol a record names; `kind` the symbol type it must have, if any.
  const auto check_symbol = [&](std::uint64_t offset, std::optional<unsigned> kind) -> std::string {
    const auto index = le<std::uint32_t>(value, offset);
    const auto named = symbol(elf, index);
    if (!named) return where + " names symbol " + str(index) + ", but there are " + str(elf.symbol_count);
    if (kind && named->type != *kind) {
      return where + " names symbol " + str(index) + ", which is not a " +
             (*kind == stt_func ? "function" : "section");
    }
    return {};
  };
  if ((attribute == eiattr_image_slot || attribute == eiattr_param_cbank || attribute == eiattr_frame_size ||
       attribute == eiattr_min_stack_size || attribute == eiattr_max_stack_size ||
       attribute == eiattr_regcount) &&
      value.size() < 4) {
    return where + " is too short for the symbol it names";
  }
  switch (attribute) {
    case eiattr_image_slot: return check_symbol(0, std::nullopt);
    case eiattr_param_cbank: return check_symbol(0, stt_section);  // the constant bank
    case eiattr_frame_size:
    case eiattr_min_stack_size:
    case eiattr_max_stack_size:
    case eiattr_regcount: return check_symbol(0, stt_func);  // the function, then a value
    case eiattr_externs:  // a list of symbols
      if (value.size() % 4 != 0) return where + " is not a list of symbols";
      for (std::uint64_t k = 0; k < value.size(); k += 4) {
        if (std::string problem = check_symbol(k, std::nullopt); !problem.empty()) return problem;
      }
      return {};
    case eiattr_kparam_info:  // index, ordinal, offset, flags; the index is always 0
      if (value.size() != 12) return where + " has " + str(value.size()) + " bytes, expected 12";
      if (le<std::uint32_t>(value, 0) != 0) {
        return where + " has parameter index " + str(le<std::uint32_t>(value, 0)) + ", expected 0";
      }
      return {};
    default: return {};
  }
}

// The format of each attribute (EIATTR id -> EIFMT) as the CUDA toolchain writes it (cubins of
// every architecture CUDA 13 targets, CuAssembler's attribute table) and as nvJitLink 13.0
// reads it: nvJitLink reads these attributes in this format whatever the record says, and
// crashes when they differ (probed id by id). Attributes not listed pass in any format.
struct AttributeFormat {
  unsigned attribute;
  unsigned format;
};
constexpr AttributeFormat info_attribute_formats[] = {
    {0x02, 4}, {0x04, 1}, {0x05, 4}, {0x06, 4}, {0x07, 4}, {0x08, 4}, {0x09, 4}, {0x0a, 4},
    {0x0d, 4}, {0x0f, 4}, {0x10, 4}, {0x11, 4}, {0x12, 4}, {0x13, 4}, {0x14, 4}, {0x15, 2},
    {0x16, 2}, {0x17, 4}, {0x19, 3}, {0x1b, 3}, {0x1c, 4}, {0x1d, 4}, {0x1e, 4}, {0x1f, 1},
    {0x20, 1}, {0x21, 1}, {0x23, 4}, {0x25, 4}, {0x26, 4}, {0x27, 4}, {0x28, 4}, {0x29, 4},
    {0x2a, 1}, {0x2b, 1}, {0x2e, 4}, {0x2f, 4}, {0x30, 1}, {0x31, 4}, {0x34, 4}, {0x35, 1},
    {0x36, 4}, {0x37, 4}, {0x3b, 4}, {0x3d, 4}, {0x3e, 1}, {0x41, 1}, {0x44, 4}, {0x45, 4},
    {0x4a, 2}, {0x4c, 2}, {0x4f, 4}, {0x50, 3}, {0x53, 1}, {0x55, 4}, {0x5f, 3},
};
constexpr AttributeFormat compat_attribute_formats[] = {
    {0x02, 2}, {0x03, 2}, {0x05, 2}, {0x06, 2}, {0x07, 3}, {0x09, 2}, {0x0b, 4},
};

std::optional<unsigned> known_format(std::uint32_t section_type, unsigned attribute) {
  const auto find = [&](const auto& table) -> std::optional<unsigned> {
    for (const AttributeFormat& entry : table) {
      if (entry.attribute == attribute) return entry.format;
    }
    return std::nullopt;
  };
  return section_type == sht_cuda_info ? find(info_attribute_formats)
                                       : find(compat_attribute_formats);
}

std::string attributes_problem(const Elf& elf, std::uint32_t i) {
  const std::string_view records = elf.contents(elf.sections[i]);
  std::uint64_t at = 0;
  while (at < records.size()) {
    if (records.size() - at < 4) {
      return elf.label(i) + ": the attribute record at byte " + str(at) + " is cut short";
    }
    const unsigned format = byte_at(records, at);
    const unsigned attribute = byte_at(records, at + 1);
    if (format < 1 || format > eifmt_sval) {
      return elf.label(i) + ": the attribute record at byte " + str(at) + " has format " + str(format) +
             ", not 1-4";
    }
    const auto expected = known_format(elf.sections[i].type, attribute);
    if (expected && *expected != format) {
      return elf.label(i) + ": attribute " + hex(attribute) + " at byte " + str(at) + " has format " +
             str(format) + ", but the toolchain writes it in format " + str(*expected);
    }
    if (format != eifmt_sval) {
      at += 4;
      continue;
    }
    const std::uint64_t size = le<std::uint16_t>(records, at + 2);
    const auto value = slice(records, at + 4, size);
    if (!value) {
      return elf.label(i) + ": attribute " + hex(attribute) + " at byte " + str(at) + " runs past the end";
    }
    if (elf.sections[i].type == sht_cuda_info) {
      // Values are lists of 32-bit words; nvJitLink reads at least one.
      if (size % 4 != 0 || (expected && size == 0)) {
        return elf.label(i) + ": attribute " + hex(attribute) + " at byte " + str(at) + " has " +
               str(size) + " bytes, not a whole number of 32-bit words";
      }
      if (std::string problem = attribute_problem(elf, i, attribute, *value, at); !problem.empty()) {
        return problem;
      }
    }
    at += 4 + size;
  }
  return {};
}

// .nv.callgraph: blocks of 8-byte pairs, each block opened by a marker pair (0, -k). Blocks -1
// (calls) and -4 (launches) pair two functions; blocks -2 and -3 pair a function with a small
// number (0 or 1 in every cubin seen; nvJitLink crashes on large ones, bounded here by the
// symbol count). .nv.prototype pairs a function with the offset of its prototype string
// ("#iii") in the symbol string table.
constexpr std::uint32_t callgraph_calls = 0xFFFFFFFFu;
constexpr std::uint32_t callgraph_launches = 0xFFFFFFFCu;
constexpr std::uint32_t callgraph_last_marker = 0xFFFFFFFCu;

std::string function_pairs_problem(const Elf& elf, std::uint32_t i, bool callgraph) {
  const ElfSection& s = elf.sections[i];
  if (s.entsize != 8 || s.size % 8 != 0) {
    return elf.label(i) + " is not a table of 8-byte entries";
  }
  const std::string_view table = elf.contents(s);
  const auto is_function = [&](std::uint32_t index) {
    const auto found = symbol(elf, index);
    return found && found->type == stt_func;
  };
  const auto bad = [&](std::uint64_t at, std::uint32_t index) {
    return elf.label(i) + ": byte " + str(at) + " names symbol " + str(index) + ", which is no function";
  };
  std::uint32_t block = 0;
  for (std::uint64_t at = 0; at < table.size(); at += 8) {
    const auto first = le<std::uint32_t>(table, at);
    const auto second = le<std::uint32_t>(table, at + 4);
    if (callgraph && second >= callgraph_last_marker) {
      if (first != 0) return elf.label(i) + ": the block marker at byte " + str(at) + " does not start with 0";
      block = second;
      continue;
    }
    if (callgraph && block == 0) return elf.label(i) + " does not start with a block marker";
    if (!is_function(first)) return bad(at, first);
    if (callgraph && (block == callgraph_calls || block == callgraph_launches) && !is_function(second)) {
      return bad(at + 4, second);
    }
    if (callgraph && block != callgraph_calls && block != callgraph_launches && second >= elf.symbol_count) {
      return elf.label(i) + ": byte " + str(at + 4) + " holds " + str(second) + ", more than the file can mean";
    }
    if (!callgraph) {
      const std::string_view strings = elf.contents(elf.sections[elf.sections[elf.symtab].link]);
      if (second == 0 || second >= strings.size() || strings[second - 1] != '\0') {
        return elf.label(i) + ": byte " + str(at + 4) + " is no string of the symbol string table";
      }
    }
  }
  return {};
}

bool has_line_information(const Elf& elf) {
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    if (elf.name(i) == ".debug_line") return true;
  }
  return false;
}

// e_flags bits 24..27 of an ABI v2 cubin, which nvJitLink 13.0 checks against the content and
// crashes on when they disagree (a relocatable cubin links with the value written and the one
// below it only). What they are compared with is not known; what is: bit 27 is set exactly
// when there is line information (.debug_line), and without it the CUDA 13 toolchain writes 5
// or 6 into relocatable cubins (nvcc, ptxas, NVRTC, nvJitLink). With line information it
// writes 8 to 0xf depending on the options, which are all let through. Executable cubins
// take any value.
std::string cubin_top_flags_problem(const Elf& elf) {
  const unsigned top = (elf.flags >> 24) & 0xFu;
  const bool lines = has_line_information(elf);
  // What nvJitLink links from -G code is marked with bit 28 (see cubin_flags_problem), not
  // bit 27, and has line information.
  const bool linked_for_debug = elf.type == et_exec && (elf.flags & 0x10000000u) != 0;
  if (((top & 0x8u) != 0) != lines && !linked_for_debug) {
    return "e_flags " + hex(elf.flags) + (lines ? " deny" : " announce") +
           " line information, but " + (lines ? "there is a" : "there is no") + " .debug_line section";
  }
  if (elf.type == et_rel && !lines && top != 0x5 && top != 0x6) {
    return "e_flags " + hex(elf.flags) + " hold " + hex(top) +
           " in bits 24..27, which the CUDA toolchain does not write into a cubin without line information";
  }
  return {};
}

std::string cubin_sections_problem(const Elf& elf) {
  if (elf.symtab == 0) return "a cubin without a symbol table";
  if (std::string problem = cubin_names_problem(elf); !problem.empty()) return problem;
  if (elf.abi_version == cuda_abi_v2) {
    if (std::string problem = cubin_top_flags_problem(elf); !problem.empty()) return problem;
  }
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    const ElfSection& s = elf.sections[i];
    std::string problem;
    if (s.type == sht_progbits && (s.flags & shf_execinstr) != 0) {
      problem = code_section_problem(elf, i);
    } else if (s.type == sht_cuda_info || s.type == sht_cuda_compat) {
      if (s.type == sht_cuda_info && s.link != elf.symtab) {
        problem = elf.label(i) + " links to section " + str(s.link) + ", not the symbol table";
      } else {
        problem = attributes_problem(elf, i);
      }
    } else if (s.type == sht_cuda_callgraph) {
      problem = function_pairs_problem(elf, i, true);
    } else if (s.type == sht_cuda_prototype) {
      problem = function_pairs_problem(elf, i, false);
    }
    if (!problem.empty()) return problem;
  }
  return {};
}

// `parsed`, when given, receives the checked file (meaningful only when the answer is empty).
std::string elf_problem(std::string_view bytes, ElfRole role, Elf* parsed = nullptr) {
  Elf local;
  Elf& elf = parsed != nullptr ? *parsed : local;
  elf.bytes = bytes;
  elf.role = role;
  if (std::string problem = elf_header_problem(elf); !problem.empty()) return problem;
  if (std::string problem = sections_problem(elf); !problem.empty()) return problem;
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    const std::uint32_t type = elf.sections[i].type;
    if (type != sht_symtab && type != sht_dynsym) continue;
    if (std::string problem = symbol_table_problem(elf, i); !problem.empty()) return problem;
  }
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    const std::uint32_t type = elf.sections[i].type;
    if (type != sht_rel && type != sht_rela) continue;
    if (std::string problem = relocation_problem(elf, i); !problem.empty()) return problem;
  }
  if (std::string problem = program_headers_problem(elf); !problem.empty()) return problem;
  if (role == ElfRole::cubin) return cubin_sections_problem(elf);
  return {};
}

// ---- LTO-IR --------------------------------------------------------------------------------
// The NVVM IR container: magic, four version pairs (container, NVVM IR, debug, LLVM), the
// 16-bit offset of the option tuples, the IR level, then the 32-bit offsets of the option
// data and of the IR. The option tuples are (16-bit option, 16-bit value): 1 the
// architecture, 2, 0x20 for arch-specific targets, 99 closing the list, then zero padding.
// The IR itself is opaque to everyone but NVVM.

constexpr std::uint64_t ltoir_header_size = 24;
constexpr unsigned ltoir_last_option = 99;

std::string ltoir_problem(std::string_view bytes) {
  if (bytes.size() < ltoir_header_size) {
    return "truncated: " + str(bytes.size()) + " bytes, an LTO-IR header needs " + str(ltoir_header_size);
  }
  if (le<std::uint32_t>(bytes, 0) != ltoir_magic) return "no LTO-IR magic";
  const std::uint64_t options = le<std::uint16_t>(bytes, 12);
  const std::uint64_t option_data = le<std::uint32_t>(bytes, 16);
  const std::uint64_t ir = le<std::uint32_t>(bytes, 20);
  if (options < ltoir_header_size || options > option_data || option_data > ir) {
    return "the LTO-IR header's offsets (options " + str(options) + ", option data " + str(option_data) +
           ", IR " + str(ir) + ") are out of order";
  }
  if (ir >= bytes.size()) {
    return "truncated: the LTO-IR header puts the IR at byte " + str(ir) + " but the file has " +
           str(bytes.size());
  }
  if ((option_data - options) % 4 != 0) return "the LTO-IR option list is not made of 4-byte options";
  // nvJitLink 13.0 crashes on some option numbers past the end of the list's range.
  for (std::uint64_t at = options; at < option_data; at += 4) {
    const unsigned option = le<std::uint16_t>(bytes, at);
    if (option > ltoir_last_option) {
      return "the LTO-IR option at byte " + str(at) + " has number " + str(option) + ", past " +
             str(ltoir_last_option);
    }
  }
  return {};
}

// ---- fatbin --------------------------------------------------------------------------------
// A fatbin: containers of a 16-byte header (magic, version 1, header size 16, body size)
// followed by entries, each an entry header (64 bytes or more) and its payload padded to 8
// bytes; the entries tile the body exactly.

constexpr std::uint64_t fatbin_header_size = 16;
constexpr std::uint64_t fatbin_entry_header_min = 64;
constexpr std::uint16_t fatbin_entry_ptx = 1;
constexpr std::uint16_t fatbin_entry_elf = 2;
constexpr std::uint16_t fatbin_entry_ltoir = 8;
constexpr std::uint64_t fatbin_compressed_lz4 = 0x2000;
constexpr std::uint64_t fatbin_compressed_zstd = 0x8000;
// The low 16 flag bits the toolchain writes: 64-bit, debug, Linux host, LZ4, zstd. nvJitLink
// 13.0 crashes on some of the others (0x4000). The high bits vary (0x10000 on LTO-IR entries,
// 0x100000 on arch-specific ones, 0x1000000) and are passed on.
constexpr std::uint64_t fatbin_known_low_flags = 0x1 | 0x2 | 0x10 | 0x2000 | 0x8000;
constexpr std::string_view zstd_frame_magic("\x28\xb5\x2f\xfd", 4);

std::string_view entry_kind_name(std::uint16_t kind) {
  switch (kind) {
    case fatbin_entry_ptx: return "PTX";
    case fatbin_entry_elf: return "ELF";
    case fatbin_entry_ltoir: return "LTO-IR";
    default: return "unknown";
  }
}

// The payload as the tool will see it, checked as its kind.
std::string entry_content_problem(std::uint16_t kind, std::string_view content) {
  switch (kind) {
    case fatbin_entry_elf: return elf_problem(content, ElfRole::cubin);
    case fatbin_entry_ltoir: return ltoir_problem(content);
    case fatbin_entry_ptx: {
      const std::size_t end = content.find_last_not_of('\0');
      const std::string_view text = content.substr(0, end == std::string_view::npos ? 0 : end + 1);
      if (text.empty()) return "empty PTX";
      if (!looks_like_text(text)) return "PTX with NUL bytes inside";
      return ptx_names_problem(text);
    }
    default: return {};
  }
}

std::string fatbin_entry_problem(std::string_view body, std::uint64_t at, std::uint64_t& next) {
  const std::uint64_t left = body.size() - at;
  if (left < fatbin_entry_header_min) {
    return "truncated: an entry header at byte " + str(at) + " has " + str(left) + " of its " +
           str(fatbin_entry_header_min) + " bytes";
  }
  const auto kind = le<std::uint16_t>(body, at);
  const auto header_size = le<std::uint32_t>(body, at + 4);
  const auto padded_size = le<std::uint64_t>(body, at + 8);
  const auto payload_size = le<std::uint32_t>(body, at + 16);
  const auto extension = le<std::uint32_t>(body, at + 20);
  const auto arch = le<std::uint32_t>(body, at + 28);
  const auto flags = le<std::uint64_t>(body, at + 40);
  const auto uncompressed_size = le<std::uint64_t>(body, at + 56);
  if (kind != fatbin_entry_ptx && kind != fatbin_entry_elf && kind != fatbin_entry_ltoir) {
    return "the entry at byte " + str(at) + " has kind " + str(kind) +
           "; cujit knows 1 (PTX), 2 (ELF) and 8 (LTO-IR)";
  }
  const std::string entry = std::string(entry_kind_name(kind)) + " entry at byte " + str(at);
  if (header_size < fatbin_entry_header_min || header_size % 8 != 0 || header_size > left) {
    return entry + " has a header of " + str(header_size) + " bytes";
  }
  if (!fits(at + header_size, padded_size, body.size())) {
    return "truncated: the " + entry + " announces " + str(padded_size) +
           " payload bytes, past the end of its fatbin";
  }
  if (payload_size > padded_size) {
    return entry + " has a payload of " + str(payload_size) + " bytes in " + str(padded_size) +
           " padded bytes";
  }
  // Inside the header: the object name (offset and size at 32) and, where the header is
  // longer than the base, the compile options (offset and size at the header offset held at 20).
  const auto inside_header = [&](std::uint64_t offset, std::uint64_t size) {
    return size == 0 || (offset >= fatbin_entry_header_min && fits(offset, size, header_size));
  };
  if (!inside_header(le<std::uint32_t>(body, at + 32), le<std::uint32_t>(body, at + 36))) {
    return entry + " names its object outside its " + str(header_size) + "-byte header";
  }
  // PTX and LTO-IR are compiled with their options, which nvJitLink always looks for.
  if (extension == 0 && kind != fatbin_entry_elf) return entry + " has no compile options";
  if (extension != 0) {
    // nvJitLink reads at the options' offset even when they are empty.
    const auto options_offset = le<std::uint32_t>(body, at + extension);
    const auto options_size = le<std::uint32_t>(body, at + extension + 4);
    if (!inside_header(extension, 8) || options_offset < fatbin_entry_header_min ||
        !fits(options_offset, options_size, header_size)) {
      return entry + " has compile options outside its " + str(header_size) + "-byte header";
    }
  }
  if (arch == 0 || arch >= 1000) return entry + " is for sm_" + str(arch) + ", which is no GPU";
  if ((flags & 0xFFFF & ~fatbin_known_low_flags) != 0) {
    return entry + " has flags " + hex(flags) + " with bits the toolchain does not write";
  }
  const bool lz4 = (flags & fatbin_compressed_lz4) != 0;
  const bool zstd = (flags & fatbin_compressed_zstd) != 0;
  // A compressed payload has its own size; an uncompressed one fills the padded size.
  const std::string_view payload =
      body.substr(at + header_size, (lz4 || zstd) ? payload_size : padded_size);
  next = at + header_size + padded_size;
  const std::string described = entry + " (sm_" + str(arch) + ")";
  if (lz4 && zstd) return described + " is flagged as compressed twice (LZ4 and zstd)";
  if (!lz4 && !zstd) return with_context(described, entry_content_problem(kind, payload));
  if (uncompressed_size == 0) return described + " is compressed but declares no uncompressed size";
  if (uncompressed_size > max_payload_bytes) {
    return described + " declares " + str(uncompressed_size) + " uncompressed bytes, more than " +
           str(max_payload_bytes) + " cujit accepts";
  }
  // LTO-IR entries use an encoding of their own: their sizes are what cujit can check.
  if (kind == fatbin_entry_ltoir) return {};
  if (zstd && payload.substr(0, 4) != zstd_frame_magic) {
    return described + " is flagged as zstd-compressed but holds no zstd frame";
  }
  const detail::Decompressed expanded = detail::decompress(
      zstd ? detail::Compression::zstd : detail::Compression::lz4, payload, uncompressed_size);
  switch (expanded.status) {
    case detail::Decompressed::Status::unavailable: return {};  // no library: sizes only
    case detail::Decompressed::Status::corrupt:
      return described + ": the compressed payload is damaged (" + expanded.detail + ")";
    case detail::Decompressed::Status::ok: break;
  }
  return with_context(described, entry_content_problem(kind, expanded.bytes));
}

std::string fatbin_problem(std::string_view bytes) {
  std::uint64_t offset = 0;
  std::uint64_t containers = 0;
  while (offset < bytes.size()) {
    const std::string_view rest = bytes.substr(offset);
    if (containers > 0 && all_zero(rest)) break;  // padding after the last container
    if (rest.size() < fatbin_header_size) {
      return "truncated: " + str(rest.size()) + " bytes, a fatbin header needs " + str(fatbin_header_size);
    }
    if (le<std::uint32_t>(rest, 0) != fatbin_magic) {
      return "byte " + str(offset) + " holds neither a fatbin header nor padding";
    }
    const auto version = le<std::uint16_t>(rest, 4);
    const auto header_size = le<std::uint16_t>(rest, 6);
    const auto body_size = le<std::uint64_t>(rest, 8);
    if (version != 1) return "fatbin version " + str(version) + "; cujit knows 1";
    if (header_size != fatbin_header_size) {
      return "fatbin header size " + str(header_size) + ", expected " + str(fatbin_header_size);
    }
    if (!fits(header_size, body_size, rest.size())) {
      return "truncated: the fatbin header announces " + str(saturated_end(header_size, body_size, 1)) +
             " bytes but there are " + str(rest.size());
    }
    const std::string_view body = rest.substr(header_size, body_size);
    if (body.empty()) return "a fatbin without entries";
    std::uint64_t at = 0;
    while (at < body.size()) {
      std::uint64_t next = body.size();
      if (std::string problem = fatbin_entry_problem(body, at, next); !problem.empty()) {
        return containers == 0 ? problem : "fatbin at byte " + str(offset) + ": " + problem;
      }
      at = next;
    }
    offset += header_size + body_size;
    ++containers;
  }
  return {};
}

// ---- host objects --------------------------------------------------------------------------

// The sections nvcc puts a host object's device code in.
bool is_fatbin_section(std::string_view name) {
  return name == ".nv_fatbin" || name == "__nv_relfatbin";
}

enum class DeviceCode { required, optional };

std::string host_object_problem(std::string_view bytes, DeviceCode device_code) {
  if (!is_elf(bytes)) {
    // COFF: only its device code can be told apart.
    if (device_code == DeviceCode::required && !contains_fatbin(bytes)) {
      return "a host object without embedded device code (compile it with nvcc -dc)";
    }
    return {};
  }
  Elf elf;
  if (std::string problem = elf_problem(bytes, ElfRole::host_object, &elf); !problem.empty()) {
    return problem;
  }
  bool found = false;
  for (std::uint32_t i = 1; i < elf.count(); ++i) {
    if (!is_fatbin_section(elf.name(i)) || !in_file(elf.sections[i].type)) continue;
    found = true;
    if (std::string problem = fatbin_problem(elf.contents(elf.sections[i])); !problem.empty()) {
      return elf.label(i) + ": " + problem;
    }
  }
  if (!found && device_code == DeviceCode::required) {
    return "a host object without embedded device code (compile it with nvcc -dc)";
  }
  return {};
}

// ---- archives ------------------------------------------------------------------------------
// ar(1): "!<arch>\n", then members: a 60-byte header (name 16, date 12, uid 6, gid 6, mode 8,
// size 10, "`\n"; fields ASCII, numbers left-aligned and space-padded) and the member,
// padded to an even offset with "\n".

constexpr std::uint64_t archive_member_header_size = 60;

// A left-aligned number in `base` padded with spaces; nullopt when the field is anything else.
std::optional<std::uint64_t> archive_number(std::string_view field, unsigned base, bool required) {
  std::uint64_t value = 0;
  std::size_t digits = 0;
  while (digits < field.size() && field[digits] != ' ') {
    const char c = field[digits];
    if (c < '0' || c >= static_cast<char>('0' + base)) return std::nullopt;
    if (value > (std::numeric_limits<std::uint64_t>::max() - 9) / base) return std::nullopt;
    value = value * base + static_cast<std::uint64_t>(c - '0');
    ++digits;
  }
  if (field.find_first_not_of(' ', digits) != std::string_view::npos) return std::nullopt;
  if (digits == 0 && required) return std::nullopt;
  return value;
}

struct ArchiveMember {
  std::uint64_t header_offset = 0;
  std::string_view name;  // the raw name field, trailing spaces removed
  std::string_view data;
};

std::string archive_symbol_table_problem(std::string_view table, const std::vector<ArchiveMember>& members) {
  // GNU "/": a big-endian count, that many big-endian member header offsets, the names.
  if (table.size() < 4) return "the symbol table is cut short";
  const std::string_view count_bytes = table.substr(0, 4);
  std::uint64_t count = 0;
  for (char c : count_bytes) count = (count << 8) | static_cast<unsigned char>(c);
  if (count > (table.size() - 4) / 4) return "the symbol table announces more symbols than it holds";
  const std::uint64_t names_at = 4 + count * 4;
  for (std::uint64_t k = 0; k < count; ++k) {
    std::uint64_t offset = 0;
    for (char c : table.substr(4 + k * 4, 4)) offset = (offset << 8) | static_cast<unsigned char>(c);
    const bool points_at_member =
        std::any_of(members.begin(), members.end(),
                    [&](const ArchiveMember& m) { return m.header_offset == offset; });
    if (!points_at_member) {
      return "symbol " + str(k) + " of the symbol table points at byte " + str(offset) +
             ", where no member starts";
    }
  }
  const std::string_view names = table.substr(names_at);
  std::uint64_t terminated = static_cast<std::uint64_t>(std::count(names.begin(), names.end(), '\0'));
  if (terminated < count) return "the symbol table has fewer names than symbols";
  return {};
}

std::string archive_member_problem(const ArchiveMember& member, std::string_view long_names) {
  std::string name(member.name);
  if (member.name.size() > 1 && member.name.front() == '/' &&
      std::isdigit(static_cast<unsigned char>(member.name[1]))) {
    const auto offset = archive_number(member.name.substr(1), 10, true);
    if (!offset || *offset >= long_names.size()) {
      return "member at byte " + str(member.header_offset) + " refers to long name " +
             std::string(member.name) + ", which the long name table does not hold";
    }
    const std::string_view rest = long_names.substr(*offset);
    name = std::string(rest.substr(0, rest.find('\n')));
  }
  // nvJitLink names a member in its log as it names an input (max_linker_name_length).
  if (name.size() > max_linker_name_length) {
    return name_too_long("member at byte " + str(member.header_offset) + " has a name", name);
  }
  const std::string which = "member '" + name + "' (at byte " + str(member.header_offset) + ")";
  const auto format = detect_format(member.data);
  if (!format) return which + " holds no format cujit knows";
  switch (*format) {
    case Format::object: return with_context(which, host_object_problem(member.data, DeviceCode::optional));
    case Format::cubin: return with_context(which, elf_problem(member.data, ElfRole::cubin));
    case Format::fatbin: return with_context(which, fatbin_problem(member.data));
    case Format::ltoir: return with_context(which, ltoir_problem(member.data));
    default: return which + " holds " + std::string(traits(*format).name) + ", which no archive carries";
  }
}

std::string archive_problem(std::string_view bytes) {
  if (bytes.substr(0, archive_magic.size()) != archive_magic) return "no archive magic";
  std::uint64_t offset = archive_magic.size();
  if (offset == bytes.size()) return "an archive with no members";
  std::vector<ArchiveMember> members;
  while (offset < bytes.size()) {
    if (bytes.size() - offset < archive_member_header_size) {
      return "truncated: a member header at byte " + str(offset) + " is cut short";
    }
    const std::string_view header = bytes.substr(offset, archive_member_header_size);
    if (header.substr(58, 2) != "`\n") {
      return "corrupt: no member header terminator at byte " + str(offset + 58);
    }
    for (std::size_t k = 0; k < 58; ++k) {
      const auto c = static_cast<unsigned char>(header[k]);
      if (c < 0x20 || c > 0x7e) {
        return "corrupt: the member header at byte " + str(offset) + " has a non-ASCII byte at " +
               str(offset + k);
      }
    }
    const std::string_view name_field = header.substr(0, 16);
    if (name_field.front() == ' ') return "corrupt: a member without a name at byte " + str(offset);
    const auto size = archive_number(header.substr(48, 10), 10, true);
    const bool numbers_ok = archive_number(header.substr(16, 12), 10, false) &&
                            archive_number(header.substr(28, 6), 10, false) &&
                            archive_number(header.substr(34, 6), 10, false) &&
                            archive_number(header.substr(40, 8), 8, false);
    if (!size) return "corrupt: a member size that is not a number at byte " + str(offset + 48);
    if (!numbers_ok) return "corrupt: the member header at byte " + str(offset) + " has a field that is not a number";
    const std::uint64_t data_at = offset + archive_member_header_size;
    if (*size > bytes.size() - data_at) {
      return "truncated: a member of " + str(*size) + " bytes at byte " + str(data_at) +
             " runs past the end (" + str(bytes.size()) + " bytes)";
    }
    ArchiveMember member;
    member.header_offset = offset;
    member.name = name_field.substr(0, name_field.find_last_not_of(' ') + 1);
    member.data = bytes.substr(data_at, *size);
    members.push_back(member);
    offset = data_at + *size;
    if (*size % 2 != 0 && offset < bytes.size()) {  // members are 2-byte aligned
      if (bytes[offset] != '\n') return "corrupt: the padding byte at " + str(offset) + " is not a newline";
      ++offset;
    }
  }
  std::string_view long_names;
  std::size_t payload_members = 0;
  for (std::size_t k = 0; k < members.size(); ++k) {
    const ArchiveMember& member = members[k];
    if (member.name == "/" || member.name == "/SYM64/") {
      if (k != 0) return "the symbol table is member " + str(k) + ", not the first";
      if (member.name == "/") {
        if (std::string problem = archive_symbol_table_problem(member.data, members); !problem.empty()) {
          return problem;
        }
      }
      continue;
    }
    if (member.name == "//") {
      long_names = member.data;
      continue;
    }
    ++payload_members;
    if (std::string problem = archive_member_problem(member, long_names); !problem.empty()) return problem;
  }
  if (payload_members == 0) return "an archive with no members";
  return {};
}

// ---- what the fatbins hold -----------------------------------------------------------------

void add_fatbin_kinds(std::string_view bytes, std::size_t start, DeviceCodeKinds& kinds) {
  const std::string_view rest = bytes.substr(start);
  if (rest.size() < fatbin_header_size) return;
  const auto header_size = le<std::uint16_t>(rest, 6);
  const auto body_size = le<std::uint64_t>(rest, 8);
  if (!fits(header_size, body_size, rest.size())) return;
  const std::string_view body = rest.substr(header_size, body_size);
  std::uint64_t offset = 0;
  while (body.size() - offset >= fatbin_entry_header_min) {
    const auto kind = le<std::uint16_t>(body, offset);
    const auto entry_header = le<std::uint32_t>(body, offset + 4);
    const auto payload = le<std::uint64_t>(body, offset + 8);
    if (kind == fatbin_entry_ptx) kinds.ptx = true;
    if (kind == fatbin_entry_elf) kinds.sass = true;
    if (kind == fatbin_entry_ltoir) kinds.ltoir = true;
    if (entry_header < fatbin_entry_header_min || !fits(offset + entry_header, payload, body.size())) {
      return;
    }
    offset += entry_header + payload;
  }
}

}  // namespace

DeviceCodeKinds embedded_code_kinds(std::string_view bytes) noexcept {
  DeviceCodeKinds kinds;
  for (std::size_t at = bytes.find(fatbin_magic_bytes); at != std::string_view::npos;
       at = bytes.find(fatbin_magic_bytes, at + 1)) {
    add_fatbin_kinds(bytes, at, kinds);
  }
  return kinds;
}

std::optional<int> cubin_sm_number(std::string_view bytes) noexcept {
  if (detect_format(bytes) != Format::cubin || bytes.size() < elf_header_size ||
      byte_at(bytes, 8) != cuda_abi_v2) {
    return std::nullopt;
  }
  // e_flags bits 8..15 hold the SM number in this ABI version.
  return static_cast<int>((le<std::uint32_t>(bytes, 0x30) >> 8) & 0xFFu);
}

std::optional<std::string> ptx_target(std::string_view ptx) {
  for (std::size_t at = ptx.find(".target"); at != std::string_view::npos;
       at = ptx.find(".target", at + 1)) {
    const bool starts_token = at == 0 || std::isspace(static_cast<unsigned char>(ptx[at - 1]));
    const std::size_t begin = ptx.find_first_not_of(" \t", at + 7);
    if (!starts_token || begin == at + 7 || begin == std::string_view::npos) continue;
    const std::size_t end = ptx.find_first_of(" \t\r\n,;", begin);
    return std::string(ptx.substr(begin, end - begin));
  }
  return std::nullopt;
}

bool carries_ltoir(Format format, std::string_view bytes) noexcept {
  switch (format) {
    case Format::ltoir: return true;
    case Format::fatbin:
    case Format::object:
    case Format::archive: return embedded_code_kinds(bytes).ltoir;
    default: return false;
  }
}

bool needs_lto(Format format, std::string_view bytes) noexcept {
  if (format == Format::ltoir) return true;
  if (format != Format::fatbin && format != Format::object && format != Format::archive) {
    return false;
  }
  const DeviceCodeKinds kinds = embedded_code_kinds(bytes);
  return kinds.ltoir && !kinds.ptx && !kinds.sass;
}

const FormatTraits& traits(Format format) noexcept {
  return format_table[static_cast<std::size_t>(format)];
}

std::string_view to_string(Format format) noexcept { return traits(format).name; }

std::optional<Format> parse_format(std::string_view name) noexcept {
  for (const auto& entry : format_table) {
    if (entry.name == name) return entry.format;
  }
  return std::nullopt;
}

std::optional<Format> format_from_extension(std::string_view extension) noexcept {
  for (const auto& entry : format_table) {
    for (std::string_view ext : entry.extensions) {
      if (ext == extension) return entry.format;
    }
  }
  return std::nullopt;
}

std::string known_extensions() {
  std::string out;
  for (const auto& entry : format_table) {
    for (std::string_view ext : entry.extensions) {
      if (!out.empty()) out += ", ";
      out += "'" + std::string(ext) + "'";
    }
  }
  return out;
}

std::optional<Format> detect_format(std::string_view bytes) noexcept {
  if (bytes.empty()) return std::nullopt;
  if (bytes.size() >= 4) {
    const auto magic = le<std::uint32_t>(bytes, 0);
    if (magic == fatbin_magic) return Format::fatbin;
    if (magic == ltoir_magic) return Format::ltoir;
  }
  if (bytes.substr(0, archive_magic.size()) == archive_magic) return Format::archive;
  if (is_elf(bytes)) {
    if (bytes.size() >= 20 && le<std::uint16_t>(bytes, 18) == em_cuda) return Format::cubin;
    return Format::object;
  }
  if (bytes.size() >= 2 && le<std::uint16_t>(bytes, 0) == coff_machine_amd64) {
    return Format::object;
  }
  if (looks_like_text(bytes)) {
    if (contains_directive(bytes, ".version") && contains_directive(bytes, ".target")) {
      return Format::ptx;
    }
    return Format::cu;
  }
  return std::nullopt;
}

std::string integrity_problem(Format format, std::string_view bytes) {
  if (bytes.empty()) return "empty";
  switch (format) {
    case Format::ptx:
      if (!looks_like_text(bytes)) return "PTX must be text, but it contains NUL bytes";
      if (!contains_directive(bytes, ".version") || !contains_directive(bytes, ".target")) {
        return "PTX without a .version or .target directive";
      }
      return ptx_names_problem(bytes);
    case Format::cu:
      return looks_like_text(bytes) ? std::string{} : "CUDA C++ must be text, but it contains NUL bytes";
    case Format::ltoir: return ltoir_problem(bytes);
    case Format::cubin: return elf_problem(bytes, ElfRole::cubin);
    case Format::fatbin: return fatbin_problem(bytes);
    case Format::object: return host_object_problem(bytes, DeviceCode::required);
    case Format::archive: return archive_problem(bytes);
  }
  return "unknown format";
}

}  // namespace cujit
