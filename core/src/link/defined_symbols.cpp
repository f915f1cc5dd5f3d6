#include "link/defined_symbols.hpp"

#include <cstdint>
#include <cstring>
#include <list>
#include <mutex>

#include "support/ptx_scan.hpp"

namespace cujit::detail {
namespace {

template <class T>
std::optional<T> read_at(std::string_view bytes, std::uint64_t offset) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

constexpr std::uint32_t sht_symtab = 2;
constexpr unsigned char stb_global = 1;

}  // namespace

std::optional<std::vector<std::string>> elf_global_definitions(std::string_view elf) {
  if (elf.size() < 64 || elf.substr(0, 4) != "\x7f" "ELF" || elf[4] != 2) return std::nullopt;
  const auto shoff = read_at<std::uint64_t>(elf, 0x28);
  const auto shentsize = read_at<std::uint16_t>(elf, 0x3A);
  const auto shnum = read_at<std::uint16_t>(elf, 0x3C);
  if (!shoff || !shentsize || !shnum || *shentsize < 64) return std::nullopt;
  auto section = [&](std::uint32_t index, std::uint64_t field) -> std::uint64_t {
    const auto value = read_at<std::uint64_t>(elf, *shoff + std::uint64_t{index} * *shentsize + field);
    return value.value_or(~std::uint64_t{0});
  };
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < *shnum; ++i) {
    const auto type = read_at<std::uint32_t>(elf, *shoff + std::uint64_t{i} * *shentsize + 4);
    if (!type) return std::nullopt;
    if (*type != sht_symtab) continue;
    const std::uint64_t offset = section(i, 0x18), size = section(i, 0x20);
    const auto link = read_at<std::uint32_t>(elf, *shoff + std::uint64_t{i} * *shentsize + 0x28);
    if (!link || *link >= *shnum || offset > elf.size() || size > elf.size() - offset) return std::nullopt;
    const std::uint64_t strtab = section(*link, 0x18), strtab_size = section(*link, 0x20);
    if (strtab > elf.size() || strtab_size > elf.size() - strtab) return std::nullopt;
    for (std::uint64_t at = offset; at + 24 <= offset + size; at += 24) {
      const auto name = read_at<std::uint32_t>(elf, at);
      const auto info = read_at<unsigned char>(elf, at + 4);
      const auto shndx = read_at<std::uint16_t>(elf, at + 6);
      if (!name || !info || !shndx) return std::nullopt;
      if ((*info >> 4) != stb_global || *shndx == 0 || *name >= strtab_size) continue;
      const std::string_view table = elf.substr(strtab, strtab_size);
      const std::size_t end = table.find('\0', *name);
      if (end == std::string_view::npos) return std::nullopt;
      names.emplace_back(table.substr(*name, end - *name));
    }
  }
  return names;
}

std::optional<std::vector<std::string>> defined_symbols(const LinkableCode& code) {
  switch (code.format()) {
    case Format::ptx: return visible_functions(code.bytes());
    case Format::cubin: return elf_global_definitions(code.bytes());
    default: return std::nullopt;
  }
}

}  // namespace cujit::detail

namespace cujit::detail {
namespace {

class DefinitionsMemo {
 public:
  std::shared_ptr<const std::vector<std::string>> get(const LinkableCode& code) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->format != code.format() || it->bytes != code.bytes()) continue;
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().names;
      }
    }
    auto found = defined_symbols(code);
    if (!found) return nullptr;
    auto names = std::make_shared<const std::vector<std::string>>(std::move(*found));
    if (code.bytes().size() > max_bytes / 4) return names;  // too large to keep
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_front(Entry{code.format(), code.bytes(), names});
    bytes_ += code.bytes().size();
    while (entries_.size() > max_entries || bytes_ > max_bytes) {
      bytes_ -= entries_.back().bytes.size();
      entries_.pop_back();
    }
    return names;
  }

 private:
  struct Entry {
    Format format;
    Bytes bytes;
    std::shared_ptr<const std::vector<std::string>> names;
  };
  static constexpr std::size_t max_entries = 64;
  static constexpr std::size_t max_bytes = std::size_t{32} << 20;
  std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::size_t bytes_ = 0;
};

}  // namespace

bool definitions_readable(Format format) noexcept {
  return format == Format::ptx || format == Format::cubin;
}

std::shared_ptr<const std::vector<std::string>> remembered_definitions(const LinkableCode& code) {
  if (!definitions_readable(code.format())) return nullptr;
  static DefinitionsMemo* memo = new DefinitionsMemo();  // never destroyed: links may run at exit
  return memo->get(code);
}

}  // namespace cujit::detail
