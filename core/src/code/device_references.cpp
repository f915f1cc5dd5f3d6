#include "code/device_references.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "support/byte_reader.hpp"
#include "support/decompress.hpp"
#include "support/ptx_scan.hpp"

namespace cujit::detail {
namespace {

template <class T>
T le(std::string_view bytes, std::uint64_t offset) noexcept {
  return read_le<T>(bytes, offset).value_or(T{});
}

void add_once(std::vector<std::string>& list, std::string item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

void merge(DeviceReferences& into, DeviceReferences from) {
  for (std::string& symbol : from.symbols) add_once(into.symbols, std::move(symbol));
  for (std::string& what : from.unread) add_once(into.unread, std::move(what));
}

// ---- ELF ---------------------------------------------------------------------------------

constexpr std::uint64_t elf_header_size = 64;
constexpr std::uint64_t section_header_size = 64;
constexpr std::uint64_t symbol_size = 24;
constexpr std::uint32_t sht_symtab = 2;
constexpr std::uint32_t sht_nobits = 8;
// CUDA's NOBITS type (`.nv.global` in relocatable code): no file bytes either.
constexpr std::uint32_t sht_cuda_nobits = 0x70000007;
constexpr unsigned stb_global = 1;
constexpr unsigned stb_weak = 2;

bool is_elf64_le(std::string_view bytes) {
  return bytes.size() >= elf_header_size && bytes.substr(0, 4) == "\x7f" "ELF" && bytes[4] == 2 &&
         bytes[5] == 1;
}

struct Section {
  std::uint32_t name = 0;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
};

// The section headers, or none when the table does not lie inside the bytes.
std::vector<Section> elf_sections(std::string_view elf) {
  if (!is_elf64_le(elf)) return {};
  const auto table = le<std::uint64_t>(elf, 0x28);
  if (le<std::uint16_t>(elf, 0x3A) != section_header_size) return {};
  std::uint64_t count = le<std::uint16_t>(elf, 0x3C);
  if (count == 0 && fits(table, section_header_size, elf.size())) count = le<std::uint64_t>(elf, table + 32);
  if (table == 0 || !fits(table, 0, elf.size()) || count > (elf.size() - table) / section_header_size) {
    return {};
  }
  std::vector<Section> sections(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = table + i * section_header_size;
    sections[i] = Section{le<std::uint32_t>(elf, at), le<std::uint32_t>(elf, at + 4),
                          le<std::uint64_t>(elf, at + 24), le<std::uint64_t>(elf, at + 32),
                          le<std::uint32_t>(elf, at + 40)};
  }
  return sections;
}

std::optional<std::string_view> contents(std::string_view elf, const Section& section) {
  if (section.type == sht_nobits || section.type == sht_cuda_nobits) return std::nullopt;
  return slice(elf, section.offset, section.size);
}

// The NUL-terminated string at `offset` of a string table; empty when it runs off the end.
std::string_view string_at(std::string_view table, std::uint64_t offset) {
  if (offset >= table.size()) return {};
  const std::string_view rest = table.substr(offset);
  const std::size_t end = rest.find('\0');
  return end == std::string_view::npos ? std::string_view{} : rest.substr(0, end);
}

// ---- fatbin ------------------------------------------------------------------------------

constexpr std::uint32_t fatbin_magic = 0xBA55ED50u;
constexpr std::string_view fatbin_magic_bytes("\x50\xed\x55\xba", 4);
constexpr std::uint64_t fatbin_header_size = 16;
constexpr std::uint64_t entry_header_min = 64;
constexpr std::uint16_t entry_ptx = 1;
constexpr std::uint16_t entry_elf = 2;
constexpr std::uint16_t entry_ltoir = 8;
constexpr std::uint64_t compressed_lz4 = 0x2000;
constexpr std::uint64_t compressed_zstd = 0x8000;
constexpr std::uint64_t arch_specific = 0x100000;
// Larger declared sizes are not decompressed (LinkableCode refuses such files anyway).
constexpr std::uint64_t max_payload_bytes = std::uint64_t{1} << 30;

struct Entry {
  std::uint16_t kind = 0;
  Arch arch;
  std::uint64_t flags = 0;
  std::uint64_t uncompressed_size = 0;
  std::string_view payload;  // as stored: compressed when flags say so
};

std::string describe(const Entry& entry) {
  const std::string_view kind = entry.kind == entry_ptx ? "PTX" : entry.kind == entry_elf ? "SASS" : "LTO-IR";
  return std::string(kind) + " entry (" + entry.arch.sm() + ")";
}

// The entries of the container at the start of `bytes`; `size` gets the container's size
// (0 when it is not a sound one).
std::vector<Entry> container_entries(std::string_view bytes, std::uint64_t& size) {
  size = 0;
  if (le<std::uint32_t>(bytes, 0) != fatbin_magic || le<std::uint16_t>(bytes, 6) != fatbin_header_size) {
    return {};
  }
  const auto body_size = le<std::uint64_t>(bytes, 8);
  if (!fits(fatbin_header_size, body_size, bytes.size())) return {};
  size = fatbin_header_size + body_size;
  const std::string_view body = bytes.substr(fatbin_header_size, body_size);
  std::vector<Entry> entries;
  std::uint64_t at = 0;
  while (body.size() - at >= entry_header_min) {
    const auto header_size = le<std::uint32_t>(body, at + 4);
    const auto padded_size = le<std::uint64_t>(body, at + 8);
    const auto payload_size = le<std::uint32_t>(body, at + 16);
    const auto number = le<std::uint32_t>(body, at + 28);
    Entry entry;
    entry.kind = le<std::uint16_t>(body, at);
    entry.flags = le<std::uint64_t>(body, at + 40);
    entry.uncompressed_size = le<std::uint64_t>(body, at + 56);
    if (header_size < entry_header_min || !fits(at + header_size, padded_size, body.size()) ||
        payload_size > padded_size || number == 0 || number >= 1000) {
      break;
    }
    const bool compressed = (entry.flags & (compressed_lz4 | compressed_zstd)) != 0;
    entry.payload = body.substr(at + header_size, compressed ? payload_size : padded_size);
    entry.arch = Arch(static_cast<int>(number / 10), static_cast<int>(number % 10),
                      (entry.flags & arch_specific) != 0 ? 'a' : '\0');
    entries.push_back(entry);
    at += header_size + padded_size;
  }
  return entries;
}

// The entries a link for `target` takes from one container (the rule in the header).
std::vector<const Entry*> selected(const std::vector<Entry>& entries, const Arch& target) {
  std::vector<const Entry*> out;
  for (const Entry& e : entries) {
    if (e.kind == entry_elf && e.arch.number() == target.number()) out.push_back(&e);
  }
  if (!out.empty()) return out;
  const Entry* newest_ptx = nullptr;
  for (const Entry& e : entries) {
    if (!ptx_compiles_for(e.arch, target)) continue;
    if (e.kind == entry_ltoir) out.push_back(&e);
    if (e.kind == entry_ptx && (newest_ptx == nullptr || newest_ptx->arch.number() < e.arch.number())) {
      newest_ptx = &e;
    }
  }
  if (newest_ptx != nullptr) out.push_back(newest_ptx);
  if (!out.empty()) return out;
  const Entry* newest_sass = nullptr;
  for (const Entry& e : entries) {
    if (e.kind != entry_elf || !sass_runs_on(e.arch, target)) continue;
    if (newest_sass == nullptr || newest_sass->arch.number() < e.arch.number()) newest_sass = &e;
  }
  if (newest_sass != nullptr) out.push_back(newest_sass);
  return out;
}

DeviceReferences entry_references(const Entry& entry) {
  DeviceReferences refs;
  if (entry.kind == entry_ltoir) {
    refs.unread.push_back(describe(entry));
    return refs;
  }
  std::string expanded;
  std::string_view content = entry.payload;
  const bool lz4 = (entry.flags & compressed_lz4) != 0;
  const bool zstd = (entry.flags & compressed_zstd) != 0;
  if (lz4 || zstd) {
    if (entry.uncompressed_size == 0 || entry.uncompressed_size > max_payload_bytes) return refs;
    Decompressed out = decompress(zstd ? Compression::zstd : Compression::lz4, entry.payload,
                                  entry.uncompressed_size);
    if (out.status == Decompressed::Status::unavailable) {
      refs.unread.push_back(describe(entry) + ", compressed: " + (zstd ? "libzstd.so.1" : "liblz4.so.1") +
                            " is not installed");
      return refs;
    }
    if (out.status != Decompressed::Status::ok) return refs;  // damaged: integrity_problem says so
    expanded = std::move(out.bytes);
    content = expanded;
  }
  if (entry.kind == entry_ptx) {
    refs.symbols = extern_functions(content.substr(0, content.find('\0')));
  } else {
    refs.symbols = elf_undefined_symbols(content);
  }
  return refs;
}

// Every container in `bytes`, back to back (zero padding between them allowed).
DeviceReferences fatbin_references(std::string_view bytes, const Arch& target) {
  DeviceReferences refs;
  std::uint64_t offset = 0;
  while (offset < bytes.size()) {
    const std::size_t next = bytes.find(fatbin_magic_bytes, offset);
    if (next == std::string_view::npos) break;
    std::uint64_t size = 0;
    const std::vector<Entry> entries = container_entries(bytes.substr(next), size);
    for (const Entry* entry : selected(entries, target)) merge(refs, entry_references(*entry));
    offset = next + std::max<std::uint64_t>(size, 1);
  }
  return refs;
}

// ---- host objects and archives -----------------------------------------------------------

DeviceReferences host_object_references(std::string_view bytes, const Arch& target) {
  if (!is_elf64_le(bytes)) return fatbin_references(bytes, target);  // COFF: by magic number
  const std::vector<Section> sections = elf_sections(bytes);
  const auto names_index = le<std::uint16_t>(bytes, 0x3E);
  if (names_index >= sections.size()) return {};
  const std::string_view names = contents(bytes, sections[names_index]).value_or(std::string_view{});
  DeviceReferences refs;
  for (const Section& section : sections) {
    const std::string_view name = string_at(names, section.name);
    if (name != ".nv_fatbin" && name != "__nv_relfatbin") continue;
    if (const auto fatbin = contents(bytes, section)) merge(refs, fatbin_references(*fatbin, target));
  }
  return refs;
}

constexpr std::string_view archive_magic = "!<arch>\n";
constexpr std::uint64_t member_header_size = 60;

std::optional<std::uint64_t> decimal(std::string_view field) {
  std::uint64_t value = 0;
  std::size_t digits = 0;
  for (; digits < field.size() && field[digits] >= '0' && field[digits] <= '9'; ++digits) {
    if (value > max_payload_bytes * 16) return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(field[digits] - '0');
  }
  if (digits == 0) return std::nullopt;
  return value;
}

DeviceReferences archive_references(std::string_view bytes, const Arch& target) {
  DeviceReferences refs;
  std::uint64_t offset = archive_magic.size();
  while (offset < bytes.size() && bytes.size() - offset >= member_header_size) {
    const std::string_view header = bytes.substr(offset, member_header_size);
    const auto size = decimal(header.substr(48, 10));
    const std::uint64_t data_at = offset + member_header_size;
    if (header.substr(58, 2) != "`\n" || !size || !fits(data_at, *size, bytes.size())) break;
    const std::string_view name = header.substr(0, 16);
    // The symbol table ("/", "/SYM64/") and the long names ("//") hold no code.
    if (name[0] != '/' || (name[1] >= '0' && name[1] <= '9')) {
      const std::string_view member = bytes.substr(data_at, *size);
      const auto format = detect_format(member);
      if (format == Format::object || format == Format::cubin || format == Format::fatbin ||
          format == Format::ltoir) {
        merge(refs, device_references(*format, member, target));
      }
    }
    offset = data_at + *size + (*size % 2);
  }
  return refs;
}

}  // namespace

std::vector<std::string> elf_undefined_symbols(std::string_view elf) {
  std::vector<std::string> names;
  const std::vector<Section> sections = elf_sections(elf);
  for (const Section& section : sections) {
    if (section.type != sht_symtab || section.link >= sections.size()) continue;
    const auto table = contents(elf, section);
    const auto strings = contents(elf, sections[section.link]);
    if (!table || !strings) continue;
    for (std::uint64_t at = 0; table->size() - at >= symbol_size; at += symbol_size) {
      const auto info = le<std::uint8_t>(*table, at + 4);
      const auto binding = static_cast<unsigned>(info >> 4);
      if (le<std::uint16_t>(*table, at + 6) != 0 || (binding != stb_global && binding != stb_weak)) continue;
      const std::string_view name = string_at(*strings, le<std::uint32_t>(*table, at));
      if (!name.empty()) add_once(names, std::string(name));
    }
  }
  return names;
}

DeviceReferences device_references(Format format, std::string_view bytes, const Arch& target) {
  switch (format) {
    case Format::ptx: return {extern_functions(bytes), {}};
    case Format::cu: return {{}, {"CUDA C++"}};
    case Format::ltoir: return {{}, {"LTO-IR"}};
    case Format::cubin: return {elf_undefined_symbols(bytes), {}};
    case Format::fatbin: return fatbin_references(bytes, target);
    case Format::object: return host_object_references(bytes, target);
    case Format::archive:
      if (bytes.substr(0, archive_magic.size()) != archive_magic) return {};
      return archive_references(bytes, target);
  }
  return {};
}

}  // namespace cujit::detail
