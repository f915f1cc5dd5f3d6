#include "cujit/format.hpp"

#include <cuda.h>
#include <nvJitLink.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>

namespace cujit {
namespace {

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
constexpr std::size_t elf64_header_size = 64;
constexpr std::size_t fatbin_header_size = 16;
constexpr std::size_t archive_member_header_size = 60;

template <class T>
T read_le(std::string_view bytes, std::size_t offset) {
  T value{};
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;  // every supported host is little-endian, as are these formats
}

bool is_elf(std::string_view bytes) { return bytes.substr(0, 4) == "\x7f" "ELF"; }

bool looks_like_text(std::string_view bytes) {
  return bytes.find('\0') == std::string_view::npos;
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

bool contains_fatbin(std::string_view bytes) {
  return bytes.find(fatbin_magic_bytes) != std::string_view::npos;
}

std::string elf_problem(std::string_view bytes) {
  if (bytes.size() < elf64_header_size) {
    return "truncated: " + std::to_string(bytes.size()) + " bytes, an ELF64 header needs " +
           std::to_string(elf64_header_size);
  }
  if (bytes[4] != 2) return "not a 64-bit ELF file";
  const auto section_offset = read_le<std::uint64_t>(bytes, 0x28);
  const auto section_entry = read_le<std::uint16_t>(bytes, 0x3A);
  const auto section_count = read_le<std::uint16_t>(bytes, 0x3C);
  const std::uint64_t section_end =
      section_offset + std::uint64_t{section_entry} * std::uint64_t{section_count};
  if (section_offset > bytes.size() || section_end > bytes.size()) {
    return "truncated: the section table ends at byte " + std::to_string(section_end) +
           " but the file has " + std::to_string(bytes.size());
  }
  return {};
}

std::string fatbin_problem(std::string_view bytes) {
  if (bytes.size() < fatbin_header_size) {
    return "truncated: " + std::to_string(bytes.size()) +
           " bytes, a fatbin header needs " + std::to_string(fatbin_header_size);
  }
  const auto header_size = read_le<std::uint16_t>(bytes, 6);
  const auto body_size = read_le<std::uint64_t>(bytes, 8);
  if (body_size > bytes.size() || header_size + body_size > bytes.size()) {
    return "truncated: the fatbin header announces " +
           std::to_string(header_size + body_size) + " bytes but there are " +
           std::to_string(bytes.size());
  }
  return {};
}

std::string archive_problem(std::string_view bytes) {
  std::size_t offset = archive_magic.size();
  if (offset == bytes.size()) return "an archive with no members";
  while (offset < bytes.size()) {
    if (bytes.size() - offset < archive_member_header_size) {
      return "truncated: a member header at byte " + std::to_string(offset) + " is cut short";
    }
    const std::string_view header = bytes.substr(offset, archive_member_header_size);
    if (header.substr(58, 2) != "`\n") {
      return "corrupt: no member header terminator at byte " + std::to_string(offset + 58);
    }
    std::uint64_t member_size = 0;
    for (char c : header.substr(48, 10)) {
      if (c == ' ') break;
      if (c < '0' || c > '9') return "corrupt: a member size that is not a number";
      member_size = member_size * 10 + static_cast<std::uint64_t>(c - '0');
    }
    offset += archive_member_header_size;
    if (member_size > bytes.size() - offset) {
      return "truncated: a member of " + std::to_string(member_size) + " bytes at byte " +
             std::to_string(offset) + " runs past the end (" + std::to_string(bytes.size()) +
             " bytes)";
    }
    offset += member_size + (member_size % 2);  // members are 2-byte aligned
  }
  return {};
}

// Entry kinds in a fatbin's entry headers.
constexpr std::uint16_t fatbin_entry_ptx = 1;
constexpr std::uint16_t fatbin_entry_elf = 2;
constexpr std::uint16_t fatbin_entry_ltoir = 8;
constexpr std::size_t fatbin_entry_header_min = 16;

void add_fatbin_kinds(std::string_view bytes, std::size_t start, DeviceCodeKinds& kinds) {
  if (bytes.size() - start < fatbin_header_size) return;
  const auto header_size = read_le<std::uint16_t>(bytes, start + 6);
  const auto body_size = read_le<std::uint64_t>(bytes, start + 8);
  const std::size_t body_start = start + header_size;
  if (body_start > bytes.size() || body_size > bytes.size() - body_start) return;
  const std::size_t body_end = body_start + body_size;
  std::size_t offset = body_start;
  while (body_end - offset >= fatbin_entry_header_min) {
    const auto kind = read_le<std::uint16_t>(bytes, offset);
    const auto entry_header = read_le<std::uint32_t>(bytes, offset + 4);
    const auto payload = read_le<std::uint64_t>(bytes, offset + 8);
    if (kind == fatbin_entry_ptx) kinds.ptx = true;
    if (kind == fatbin_entry_elf) kinds.sass = true;
    if (kind == fatbin_entry_ltoir) kinds.ltoir = true;
    if (entry_header < fatbin_entry_header_min || payload > body_end - offset ||
        entry_header + payload > body_end - offset) {
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
  constexpr unsigned char cuda_elf_abi_version = 8;  // e_ident[EI_ABIVERSION] of CUDA 12+
  if (detect_format(bytes) != Format::cubin || bytes.size() < elf64_header_size ||
      static_cast<unsigned char>(bytes[8]) != cuda_elf_abi_version) {
    return std::nullopt;
  }
  // e_flags bits 8..15 hold the SM number in this ABI version.
  return static_cast<int>((read_le<std::uint32_t>(bytes, 0x30) >> 8) & 0xFFu);
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
    const auto magic = read_le<std::uint32_t>(bytes, 0);
    if (magic == fatbin_magic) return Format::fatbin;
    if (magic == ltoir_magic) return Format::ltoir;
  }
  if (bytes.substr(0, archive_magic.size()) == archive_magic) return Format::archive;
  if (is_elf(bytes)) {
    if (bytes.size() >= 20 && read_le<std::uint16_t>(bytes, 18) == em_cuda) return Format::cubin;
    return Format::object;
  }
  if (bytes.size() >= 2 && read_le<std::uint16_t>(bytes, 0) == coff_machine_amd64) {
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
      return {};
    case Format::cu:
      return looks_like_text(bytes) ? std::string{} : "CUDA C++ must be text, but it contains NUL bytes";
    case Format::ltoir:
      // nvJitLink is the only reader of LTO-IR: past the magic it checks the rest itself.
      return bytes.size() < 8 ? "truncated: " + std::to_string(bytes.size()) + " bytes" : "";
    case Format::cubin:
      return elf_problem(bytes);
    case Format::fatbin:
      return fatbin_problem(bytes);
    case Format::object: {
      if (is_elf(bytes)) {
        if (std::string problem = elf_problem(bytes); !problem.empty()) return problem;
      }
      if (!contains_fatbin(bytes)) {
        return "a host object without embedded device code (compile it with nvcc -dc)";
      }
      return {};
    }
    case Format::archive:
      return archive_problem(bytes);
  }
  return "unknown format";
}

}  // namespace cujit
