// The mutation campaign (docs/reliability.md): damaged copies of every binary fixture format
// (single bytes changed at random offsets with a fixed seed, truncations, and fields set to
// edge values: ELF, section and program headers, symbol and relocation entries, .nv.info
// attribute records, fatbin and fatbin-entry headers and the cubins fatbins wrap, archive
// member headers, the LTO-IR container header), each linked through the Linker in a forked
// child. The parent counts how each child ended: refused by cujit's format checks
// (Error(format)), refused by the backend (LinkError), another cujit error, linked, or DEAD (a
// signal, or no answer in time). No child may die: nvJitLink 13.0 dies on damaged cubins,
// fatbins, host objects and archives, so every mutant that would kill it must be refused before
// it gets there.
//
// CUJIT_MUTATION_SCALE=n multiplies the random mutants (default 1) for longer runs by hand.
// CUJIT_MUTATION_BUDGET=n links n mutants per campaign, spread evenly over its whole list so
// that every kind of damage keeps its share ("all" or unset: every mutant): the GPU lane's
// CPU tests (ci/gpu.sh, 16 cores) run the full campaign; CI's tests (ci/test.sh: 400), the
// main job (ci/run.sh: 200) and the ASan lane (ci/reliability.sh: 120) a budget.
// Each campaign prints a progress line per tenth of its mutants, with counts and an estimate.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CUJIT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CUJIT_TEST_SANITIZED 1
#endif
#endif
#ifndef CUJIT_TEST_SANITIZED
#define CUJIT_TEST_SANITIZED 0
#endif

namespace cujit {
namespace {

struct Mutant {
  std::string what;  // how to make it again, e.g. "byte 40 = 0x5f"
  std::string bytes;
};

// ---- making mutants --------------------------------------------------------------------------

std::string hex_byte(unsigned value) {
  std::ostringstream out;
  out << "0x" << std::hex << std::setw(2) << std::setfill('0') << value;
  return out.str();
}

std::uint64_t read_field(const std::string& bytes, std::size_t at, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t k = 0; k < width && at + k < bytes.size(); ++k) {
    value |= std::uint64_t{static_cast<unsigned char>(bytes[at + k])} << (8 * k);
  }
  return value;
}

// A little-endian field set to each of a few edge values.
void add_field_edits(std::vector<Mutant>& out, const std::string& original, const std::string& name,
                     std::size_t at, std::size_t width) {
  if (at + width > original.size()) return;
  const std::uint64_t old = read_field(original, at, width);
  const std::uint64_t all_ones = width >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
  for (std::uint64_t value : {std::uint64_t{0}, std::uint64_t{1}, old + 1, old - 1, old * 2 + 8,
                              all_ones, all_ones >> 1}) {
    value &= all_ones;
    if (value == old) continue;
    std::string bytes = original;
    for (std::size_t k = 0; k < width; ++k) bytes[at + k] = static_cast<char>((value >> (8 * k)) & 0xFF);
    std::ostringstream what;
    what << name << " (" << width << " bytes at " << at << ") = 0x" << std::hex << value;
    out.push_back({what.str(), std::move(bytes)});
  }
}

using TableFields = std::vector<std::pair<const char*, std::array<std::size_t, 2>>>;
const TableFields symbol_fields = {{"st_name", {0, 4}},  {"st_info", {4, 1}},  {"st_other", {5, 1}},
                                   {"st_shndx", {6, 2}}, {"st_value", {8, 8}}, {"st_size", {16, 8}}};
// r_info split into its two halves: the relocation type (low) and the symbol index (high).
const TableFields rel_fields = {{"r_offset", {0, 8}}, {"r_info type", {8, 4}}, {"r_info symbol", {12, 4}}};
const TableFields rela_fields = {{"r_offset", {0, 8}}, {"r_info type", {8, 4}}, {"r_info symbol", {12, 4}},
                                 {"r_addend", {16, 8}}};
const TableFields program_header_fields = {{"p_type", {0, 4}},   {"p_flags", {4, 4}},  {"p_offset", {8, 8}},
                                           {"p_vaddr", {16, 8}}, {"p_paddr", {24, 8}}, {"p_filesz", {32, 8}},
                                           {"p_memsz", {40, 8}}, {"p_align", {48, 8}}};
const TableFields elf_header_fields = {
    {"EI_CLASS", {4, 1}},   {"EI_DATA", {5, 1}},     {"EI_VERSION", {6, 1}},   {"EI_OSABI", {7, 1}},
    {"EI_ABIVERSION", {8, 1}}, {"e_type", {16, 2}},  {"e_machine", {18, 2}},   {"e_version", {20, 4}},
    {"e_entry", {24, 8}},   {"e_phoff", {32, 8}},    {"e_shoff", {40, 8}},     {"e_flags", {48, 4}},
    {"e_ehsize", {52, 2}},  {"e_phentsize", {54, 2}}, {"e_phnum", {56, 2}},    {"e_shentsize", {58, 2}},
    {"e_shnum", {60, 2}},   {"e_shstrndx", {62, 2}}};
const TableFields section_header_fields = {
    {"sh_name", {0, 4}},  {"sh_type", {4, 4}},  {"sh_flags", {8, 8}},     {"sh_addr", {16, 8}},
    {"sh_offset", {24, 8}}, {"sh_size", {32, 8}}, {"sh_link", {40, 4}},   {"sh_info", {44, 4}},
    {"sh_addralign", {48, 8}}, {"sh_entsize", {56, 8}}};

// [base + offset, base + offset + size) when it lies within [base, end), else nullopt.
std::optional<std::pair<std::uint64_t, std::uint64_t>> region(std::uint64_t base, std::uint64_t end,
                                                              std::uint64_t offset, std::uint64_t size) {
  if (base > end || offset > end - base || size > end - base - offset) return std::nullopt;
  return std::make_pair(base + offset, base + offset + size);
}

// Field edits of the entries of one table in [start, end): all of them up to `most`, else
// `most` spread evenly from the first to the last, so a long table does not crowd out other
// damage.
void add_table_edits(std::vector<Mutant>& out, const std::string& bytes, const std::string& where,
                     std::uint64_t start, std::uint64_t end, std::uint64_t entry_size, const TableFields& fields,
                     std::uint64_t most = 16) {
  if (start >= end || entry_size == 0) return;
  const std::uint64_t entries = (end - start) / entry_size;
  const std::uint64_t taken = std::min(entries, most);
  for (std::uint64_t k = 0; k < taken; ++k) {
    const std::uint64_t index = taken < 2 ? 0 : k * (entries - 1) / (taken - 1);
    for (const auto& [name, field] : fields) {
      add_field_edits(out, bytes, where + std::to_string(index) + " " + name,
                      static_cast<std::size_t>(start + index * entry_size + field[0]), field[1]);
    }
  }
}

// Field edits of the EIATTR records in [start, end) (a .nv.info section): format, attribute,
// the 16-bit value or size, and the first word of a sized record (most often a symbol index).
void add_attribute_edits(std::vector<Mutant>& out, const std::string& bytes, const std::string& where,
                         std::uint64_t start, std::uint64_t end) {
  std::vector<std::uint64_t> records;
  for (std::uint64_t record = start; record + 4 <= end;) {  // each step moves 4 bytes at least
    records.push_back(record);
    record += 4 + (static_cast<unsigned char>(bytes[record]) == 4 ? read_field(bytes, record + 2, 2) : 0);
  }
  const std::size_t taken = std::min<std::size_t>(records.size(), 16);
  for (std::size_t k = 0; k < taken; ++k) {
    const std::uint64_t record = records[taken < 2 ? 0 : k * (records.size() - 1) / (taken - 1)];
    const std::string name = where + "record at " + std::to_string(record - start) + " ";
    add_field_edits(out, bytes, name + "format", record, 1);
    add_field_edits(out, bytes, name + "attribute", record + 1, 1);
    add_field_edits(out, bytes, name + "value or size", record + 2, 2);
    if (static_cast<unsigned char>(bytes[record]) == 4 && read_field(bytes, record + 2, 2) >= 4 && record + 8 <= end) {
      add_field_edits(out, bytes, name + "first word", record + 4, 4);
    }
  }
}

// Every header and table of the ELF file at [base, end): the ELF header, section headers,
// program headers, and the entries of the symbol, relocation and attribute tables.
void add_elf_edits(std::vector<Mutant>& out, const std::string& bytes, std::uint64_t base, std::uint64_t end,
                   const std::string& where) {
  end = std::min<std::uint64_t>(end, bytes.size());
  if (!region(base, end, 0, 64) || bytes.compare(base, 4, "\x7f" "ELF") != 0) return;
  for (const auto& [name, field] : elf_header_fields) {
    add_field_edits(out, bytes, where + name, base + field[0], field[1]);
  }
  const std::uint64_t count = read_field(bytes, base + 60, 2);
  const auto sections = region(base, end, read_field(bytes, base + 40, 8), count * 64);
  if (sections) {
    add_table_edits(out, bytes, where + "section ", sections->first, sections->second, 64, section_header_fields,
                    count);  // every section header
  }
  for (std::uint64_t i = 0; sections && i < count; ++i) {
    // The tables the sections hold: symbols, relocations and attribute records, whose shapes
    // crash nvJitLink where cujit's checks let them through (issue 31).
    const std::uint64_t at = sections->first + i * 64;
    const std::uint64_t type = read_field(bytes, at + 4, 4);
    const auto held = region(base, end, read_field(bytes, at + 24, 8), read_field(bytes, at + 32, 8));
    if (!held) continue;
    const std::string name = where + "section " + std::to_string(i) + " ";
    if (type == 2 || type == 11) {
      add_table_edits(out, bytes, name + "symbol ", held->first, held->second, 24, symbol_fields);
    } else if (type == 9 || type == 4) {
      add_table_edits(out, bytes, name + "relocation ", held->first, held->second, type == 9 ? 16 : 24,
                      type == 9 ? rel_fields : rela_fields);
    } else if (type == 0x70000000) {  // SHT_CUDA_INFO: .nv.info*
      add_attribute_edits(out, bytes, name, held->first, held->second);
    }
  }
  const std::uint64_t segment_size = read_field(bytes, base + 54, 2);
  if (segment_size < 56) return;  // not a 64-bit program header table
  const auto segments = region(base, end, read_field(bytes, base + 32, 8), read_field(bytes, base + 56, 2) * segment_size);
  if (segments) {
    add_table_edits(out, bytes, where + "program header ", segments->first, segments->second, segment_size,
                    program_header_fields);
  }
}

void add_fatbin_edits(std::vector<Mutant>& out, const std::string& bytes) {
  const std::string magic("\x50\xed\x55\xba", 4);
  for (std::size_t at = bytes.find(magic); at != std::string::npos; at = bytes.find(magic, at + 1)) {
    const std::string where = "fatbin at " + std::to_string(at) + ": ";
    add_field_edits(out, bytes, where + "version", at + 4, 2);
    add_field_edits(out, bytes, where + "header size", at + 6, 2);
    add_field_edits(out, bytes, where + "body size", at + 8, 8);
    const std::uint64_t end = at + 16 + read_field(bytes, at + 8, 8);
    std::uint64_t entry = at + 16;
    for (int k = 0; k < 8 && entry + 64 <= std::min<std::uint64_t>(end, bytes.size()); ++k) {
      const std::string e = where + "entry " + std::to_string(k) + " ";
      const std::pair<const char*, std::array<std::size_t, 2>> fields[] = {
          {"kind", {0, 2}},   {"header size", {4, 4}}, {"padded size", {8, 8}},
          {"payload size", {16, 4}}, {"arch", {28, 4}}, {"flags", {40, 8}},
          {"options at", {20, 4}}, {"name offset", {32, 4}}, {"name size", {36, 4}},
          {"uncompressed size", {56, 8}}};
      const std::uint64_t header_size = read_field(bytes, entry + 4, 4);
      for (const auto& [name, field] : fields) {
        if (field[0] + field[1] > header_size) continue;
        add_field_edits(out, bytes, e + name, entry + field[0], field[1]);
      }
      // A cubin the entry wraps (stored uncompressed): its own headers and tables, within the
      // entry's payload.
      add_elf_edits(out, bytes, entry + header_size, entry + header_size + read_field(bytes, entry + 8, 8),
                    e + "cubin: ");
      entry += header_size + read_field(bytes, entry + 8, 8);
    }
  }
}

// ar member headers: the size field rewritten as text, the terminator and the name broken.
void add_archive_edits(std::vector<Mutant>& out, const std::string& bytes) {
  std::size_t at = 8;
  while (at + 60 <= bytes.size()) {
    const std::string where = "member at " + std::to_string(at) + ": ";
    const std::uint64_t size = std::strtoull(bytes.substr(at + 48, 10).c_str(), nullptr, 10);
    for (const std::string& field : {std::string("0"), std::to_string(size + 1), std::to_string(size - 1),
                                     std::string("9999999999"), std::string("12x4"), std::string("-1")}) {
      std::string mutated = bytes;
      std::string padded = field;
      padded.resize(10, ' ');
      mutated.replace(at + 48, 10, padded);
      out.push_back({where + "size field '" + field + "'", std::move(mutated)});
    }
    std::string no_terminator = bytes;
    no_terminator[at + 58] = ' ';
    out.push_back({where + "no terminator", std::move(no_terminator)});
    std::string bad_name = bytes;
    bad_name[at] = '\0';
    out.push_back({where + "NUL in the name", std::move(bad_name)});
    add_elf_edits(out, bytes, at + 60, at + 60 + size, where);
    at += 60 + size + (size % 2);
  }
}

void add_ltoir_edits(std::vector<Mutant>& out, const std::string& bytes) {
  const std::pair<const char*, std::array<std::size_t, 2>> fields[] = {
      {"container version", {4, 2}}, {"NVVM IR version", {6, 2}}, {"debug version", {8, 2}},
      {"LLVM version", {10, 2}},     {"options offset", {12, 2}}, {"IR level", {14, 2}},
      {"option data offset", {16, 4}}, {"IR offset", {20, 4}}};
  for (const auto& [name, field] : fields) add_field_edits(out, bytes, name, field[0], field[1]);
}

struct Campaign {
  std::string label;
  std::string fixture;
  Format format;
  bool lto = false;
  std::size_t random_bytes = 0;  // single-byte mutants
  // Intact inputs linked with each mutant (what a kernel calls), so that the link gets as far
  // as resolving and relocating.
  std::vector<std::string> companions = {};
};

void PrintTo(const Campaign& campaign, std::ostream* out) { *out << campaign.label; }

// Where single bytes are changed. LTO-IR past its container header is opaque to every tool
// but NVVM (docs/linking.md): only the header is mutated there; truncations still cut the IR.
std::size_t mutable_span(const Campaign& campaign, const std::string& original) {
  if (campaign.format != Format::ltoir) return original.size();
  return std::clamp<std::size_t>(read_field(original, 20, 4), 24, original.size());
}

// The random mutants to make: `count` times CUJIT_MUTATION_SCALE, a quarter of that in
// sanitizer builds (there the campaign checks cujit's own reads; the vendor crashes are the
// plain build's business, and a sanitized child is several times slower).
std::size_t random_mutants(std::size_t count) {
  const char* value = std::getenv("CUJIT_MUTATION_SCALE");
  const long parsed = value != nullptr ? std::strtol(value, nullptr, 10) : 1;
  const std::size_t scale = parsed >= 1 && parsed <= 1000 ? static_cast<std::size_t>(parsed) : 1;
  return count * scale / (CUJIT_TEST_SANITIZED ? 4 : 1);
}

// The budget CUJIT_MUTATION_BUDGET sets: nullopt for every mutant; throws for a value that is
// neither "all" nor a positive count (a typo must not pass for a campaign of some size).
std::optional<std::size_t> mutation_budget() {
  const char* value = std::getenv("CUJIT_MUTATION_BUDGET");
  if (value == nullptr || *value == '\0' || std::string(value) == "all") return std::nullopt;
  char* end = nullptr;
  const long long parsed = std::strtoll(value, &end, 10);
  if (*end != '\0' || parsed < 1) {
    throw std::invalid_argument(std::string("CUJIT_MUTATION_BUDGET='") + value + "': give a positive count or all");
  }
  return static_cast<std::size_t>(parsed);
}

// `budget` mutants taken at even steps through the list (the first included), so random bytes,
// truncations and field edits each keep their share; the same ones on every run.
std::vector<Mutant> within_budget(std::vector<Mutant> mutants, std::optional<std::size_t> budget) {
  if (!budget || *budget >= mutants.size()) return mutants;
  std::vector<Mutant> kept;
  for (std::size_t k = 0; k < *budget; ++k) kept.push_back(std::move(mutants[k * mutants.size() / *budget]));
  return kept;
}

std::vector<Mutant> make_mutants(const Campaign& campaign, const std::string& original) {
  std::vector<Mutant> out;
  // A fixed seed per campaign: the same mutants every run, on every machine.
  std::uint64_t seed = 0xcbf29ce484222325u;  // FNV-1a of the label
  for (char c : campaign.label) seed = (seed ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
  std::mt19937_64 random(seed);
  // mt19937_64's output is fixed by the standard; the distributions are not, so draw by hand.
  const auto below = [&](std::uint64_t bound) { return static_cast<std::size_t>(random() % bound); };
  const std::size_t span = mutable_span(campaign, original);
  for (std::size_t k = 0; k < random_mutants(campaign.random_bytes); ++k) {
    const std::size_t at = below(span);
    const auto old = static_cast<unsigned char>(original[at]);
    auto value = static_cast<unsigned>(below(255));
    if (value >= old) ++value;  // never the byte it was
    std::string bytes = original;
    bytes[at] = static_cast<char>(value);
    out.push_back({"byte " + std::to_string(at) + " = " + hex_byte(value), std::move(bytes)});
  }
  std::vector<std::size_t> lengths = {0, 1, 3, 4, 8, 15, 16, 24, 44, 63, 64, 65, 127, 128};
  for (std::size_t k = 1; k < 8; ++k) lengths.push_back(original.size() * k / 8);
  lengths.push_back(original.size() - 1);
  for (int k = 0; k < 8; ++k) {
    lengths.push_back(below(original.size()));
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  for (std::size_t length : lengths) {
    if (length >= original.size()) continue;
    out.push_back({"truncated to " + std::to_string(length) + " bytes", original.substr(0, length)});
  }
  switch (campaign.format) {
    case Format::cubin:
    case Format::object:
      add_elf_edits(out, original, 0, original.size(), "");
      add_fatbin_edits(out, original);
      break;
    case Format::fatbin: add_fatbin_edits(out, original); break;
    case Format::archive:
      add_archive_edits(out, original);
      add_fatbin_edits(out, original);
      break;
    case Format::ltoir: add_ltoir_edits(out, original); break;
    default: break;
  }
  return out;
}

// ---- linking them, one child each ------------------------------------------------------------

enum class Outcome { linked, format_error, link_error, other_error, dead };

constexpr int exit_linked = 0;
constexpr int exit_format_error = 10;
constexpr int exit_link_error = 11;
constexpr int exit_other_error = 12;
constexpr unsigned child_seconds = 30;

[[noreturn]] void run_child(const Campaign& campaign, const Mutant& mutant) {
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
#if !CUJIT_TEST_SANITIZED
  // A damaged size can make nvJitLink allocate without bound; without sanitizers (which
  // reserve vast address space) the child's memory is capped so that this fails instead.
  const rlimit memory{std::uint64_t{8} << 30, std::uint64_t{8} << 30};
  ::setrlimit(RLIMIT_AS, &memory);
#endif
  ::alarm(child_seconds);
  int code = exit_other_error;
  try {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, campaign.lto));
    linker.add_data(campaign.format, mutant.bytes, "mutant");
    for (const std::string& companion : campaign.companions) linker.add_file(test::fixture_path(companion));
    (void)linker.link();
    code = exit_linked;
  } catch (const Error& error) {
    code = error.kind() == ErrorKind::format ? exit_format_error
           : error.kind() == ErrorKind::link ? exit_link_error
                                              : exit_other_error;
  } catch (...) {
    code = exit_other_error;
  }
  ::_exit(code);
}

Outcome outcome_of(int status) {
  if (!WIFEXITED(status)) return Outcome::dead;
  switch (WEXITSTATUS(status)) {
    case exit_linked: return Outcome::linked;
    case exit_format_error: return Outcome::format_error;
    case exit_link_error: return Outcome::link_error;
    default: return Outcome::other_error;
  }
}

struct Tally {
  std::size_t mutants = 0;
  std::map<Outcome, std::size_t> by_outcome;
  std::vector<std::string> deaths;  // what, and how it died
  double seconds = 0;
};

// Forks a child per mutant, `jobs` at a time (the parent never calls a vendor library, so it
// holds no lock a child could inherit).
Tally run_campaign(const Campaign& campaign) {
  // LTO-IR from nvcc differs from build to build (bytes 40-47 of its container header), and
  // which mutants kill nvJitLink depends on them: the campaign reads a committed copy, so
  // every run and machine damages the same bytes (docs/reliability.md).
  const std::string original = test::read_bytes(campaign.format == Format::ltoir
                                                    ? test::scenario_path("fixtures/campaign/" + campaign.fixture)
                                                    : test::fixture_path(campaign.fixture));
  std::vector<Mutant> made = make_mutants(campaign, original);
  const std::size_t all_mutants = made.size();
  const std::vector<Mutant> mutants = within_budget(std::move(made), mutation_budget());
  if (mutants.size() < all_mutants) {
    std::cout << "[ campaign ] " << campaign.label << ": " << mutants.size() << " of " << all_mutants
              << " mutants (CUJIT_MUTATION_BUDGET; the GPU lane's CPU tests run them all)" << std::endl;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::size_t jobs = std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
  const std::size_t batch = std::max<std::size_t>(1, (mutants.size() + 9) / 10);
  std::size_t finished = 0;
  Tally tally;
  tally.mutants = mutants.size();
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0;
  while (next < mutants.size() || !running.empty()) {
    while (next < mutants.size() && running.size() < jobs) {
      const pid_t pid = ::fork();
      if (pid == 0) run_child(campaign, mutants[next]);
      if (pid < 0) {
        ADD_FAILURE() << "fork failed: " << std::strerror(errno);
        return tally;
      }
      running[pid] = next++;
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) continue;
      ADD_FAILURE() << "waitpid failed: " << std::strerror(errno);
      return tally;
    }
    const auto found = running.find(done);
    if (found == running.end()) continue;
    const Outcome outcome = outcome_of(status);
    ++tally.by_outcome[outcome];
    if (outcome == Outcome::dead) {
      const int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      tally.deaths.push_back(mutants[found->second].what + ": " +
                             (signal == SIGALRM ? std::string("no answer in ") + std::to_string(child_seconds) + " s"
                                                : std::string(strsignal(signal))));
    }
    running.erase(found);
    if (++finished % batch == 0 && finished < mutants.size()) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << std::fixed << std::setprecision(1) << "[ campaign ] " << campaign.label << ": " << finished
                << " of " << mutants.size() << " mutants, " << tally.deaths.size() << " dead, " << seconds
                << " s, about " << seconds * static_cast<double>(mutants.size() - finished) / static_cast<double>(finished)
                << " s left" << std::endl;
    }
  }
  tally.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return tally;
}

class HostileMutation : public ::testing::TestWithParam<Campaign> {};

TEST_P(HostileMutation, NoDamagedInputKillsTheLinker) {
  const Campaign& campaign = GetParam();
  const Tally tally = run_campaign(campaign);
  const auto count = [&](Outcome outcome) {
    const auto found = tally.by_outcome.find(outcome);
    return found == tally.by_outcome.end() ? std::size_t{0} : found->second;
  };
  std::cout << std::fixed << std::setprecision(1) << "[ campaign ] " << campaign.label << ": "
            << tally.mutants << " mutants, refused by cujit " << count(Outcome::format_error)
            << ", refused by nvJitLink " << count(Outcome::link_error) << ", other errors "
            << count(Outcome::other_error) << ", linked " << count(Outcome::linked) << ", DEAD "
            << count(Outcome::dead) << " (" << tally.seconds << " s)" << std::endl;
  EXPECT_EQ(count(Outcome::format_error) + count(Outcome::link_error) + count(Outcome::other_error) +
                count(Outcome::linked) + count(Outcome::dead),
            tally.mutants);
  // Mutants that change nothing nvJitLink reads still link: the campaign is not all refusals.
  EXPECT_GT(count(Outcome::format_error), 0u);
  for (const std::string& death : tally.deaths) ADD_FAILURE() << "a child died on " << death;
}

// The table edits reach what they are written for: a campaign over a wrapped cubin that made
// no "cubin: " edit (nvcc compressed the payload after all, or the payload moved) would pass
// on random bytes alone. Counted before any budget.
TEST(MutationTables, EveryTableKindIsEditedWhereTheFixtureHasIt) {
  struct Expected {
    const char* fixture;
    Format format;
    std::vector<std::string> labels;  // each in some mutant's description
  };
  const std::vector<Expected> cases = {
      {"scale_kernel.cubin", Format::cubin, {"section 1 sh_type", " symbol ", "record at"}},
      {"mixed_kernel.cubin", Format::cubin, {" symbol ", " relocation ", "record at"}},
      {"device_data_whole.cubin", Format::cubin, {"program header ", " symbol "}},
      {"scale_kernel_sass_plain.fatbin", Format::fatbin, {"cubin: e_shoff", "cubin: section ", " symbol ", "record at"}},
      {"mixed_kernel_sass_plain.fatbin", Format::fatbin, {"cubin: ", " relocation ", "record at"}},
      {"scale_kernel_plain.o", Format::object, {"cubin: ", "record at"}},
  };
  for (const Expected& expected : cases) {
    SCOPED_TRACE(expected.fixture);
    const std::string original = test::read_bytes(test::fixture_path(expected.fixture));
    const std::vector<Mutant> mutants = make_mutants(Campaign{"tables", expected.fixture, expected.format}, original);
    for (const std::string& label : expected.labels) {
      const bool found = std::any_of(mutants.begin(), mutants.end(),
                                     [&](const Mutant& m) { return m.what.find(label) != std::string::npos; });
      EXPECT_TRUE(found) << "no mutant named '" << label << "' among " << mutants.size();
    }
    for (const Mutant& mutant : mutants) {
      if (mutant.what.rfind("truncated", 0) != 0) {
        EXPECT_EQ(mutant.bytes.size(), original.size()) << mutant.what;
      }
    }
  }
}

// The budget narrows the campaign; its assumption is that a budget keeps every kind of damage
// (random bytes, truncations, header and table fields) in its share, the same mutants each run.
TEST(MutationBudget, EveryKindOfDamageKeepsItsShare) {
  const Campaign campaign{"cubin", "scale_kernel.cubin", Format::cubin, false, 1500};
  const std::vector<Mutant> all = make_mutants(campaign, test::read_bytes(test::fixture_path(campaign.fixture)));
  const auto kind = [](const Mutant& mutant) {
    return mutant.what.rfind("byte ", 0) == 0 ? 0 : mutant.what.rfind("truncated", 0) == 0 ? 1 : 2;
  };
  std::array<std::size_t, 3> whole{};
  for (const Mutant& mutant : all) ++whole[kind(mutant)];
  for (std::size_t budget : {std::size_t{10}, std::size_t{37}, std::size_t{250}, all.size() / 2}) {
    const std::vector<Mutant> kept = within_budget(all, budget);
    ASSERT_EQ(kept.size(), budget);
    std::array<std::size_t, 3> share{};
    for (const Mutant& mutant : kept) ++share[kind(mutant)];
    for (int k = 0; k < 3; ++k) {
      const double expected = static_cast<double>(whole[k]) * static_cast<double>(budget) / static_cast<double>(all.size());
      EXPECT_GE(static_cast<double>(share[k]) + 1.0, expected) << "kind " << k << ", budget " << budget;
      EXPECT_LE(static_cast<double>(share[k]) - 1.0, expected) << "kind " << k << ", budget " << budget;
    }
    const std::vector<Mutant> again = within_budget(all, budget);
    for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i].what, again[i].what);
  }
  EXPECT_EQ(within_budget(all, all.size() + 1).size(), all.size());
  EXPECT_EQ(within_budget(all, std::nullopt).size(), all.size());
}

TEST(MutationBudget, ValueIsACountOrAllElseRefused) {
  const char* saved = std::getenv("CUJIT_MUTATION_BUDGET");
  const std::string restore = saved != nullptr ? saved : "";
  const std::pair<const char*, std::optional<std::size_t>> good[] = {{"all", std::nullopt}, {"", std::nullopt},
                                                                     {"1", 1}, {"250", 250}};
  for (const auto& [value, expected] : good) {
    ::setenv("CUJIT_MUTATION_BUDGET", value, 1);
    EXPECT_EQ(mutation_budget(), expected) << value;
  }
  for (const char* bad : {"0", "-5", "ten", "10s", "1e3", "ALL "}) {
    ::setenv("CUJIT_MUTATION_BUDGET", bad, 1);
    EXPECT_THROW(mutation_budget(), std::invalid_argument) << bad;
  }
  if (saved != nullptr) ::setenv("CUJIT_MUTATION_BUDGET", restore.c_str(), 1);
  else ::unsetenv("CUJIT_MUTATION_BUDGET");
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, HostileMutation,
    ::testing::Values(Campaign{"cubin", "scale_kernel.cubin", Format::cubin, false, 1500},
                      Campaign{"fatbin_sass", "scale_kernel_sass.fatbin", Format::fatbin, false, 1500},
                      Campaign{"fatbin_ptx", "scale_kernel_ptx.fatbin", Format::fatbin, false, 800},
                      Campaign{"object", "scale_kernel.o", Format::object, false, 1500},
                      Campaign{"archive", "scale_kernel.a", Format::archive, false, 1500},
                      Campaign{"ltoir", "scale_kernel.ltoir", Format::ltoir, true, 400},
                      Campaign{"cubin_with_calls", "mixed_kernel.cubin", Format::cubin, false, 1000,
                               {"dev_add.cubin", "dev_mul.cubin"}},
                      Campaign{"fatbin_with_calls", "mixed_kernel_sass.fatbin", Format::fatbin, false,
                               1000, {"dev_add.cubin", "dev_mul.cubin"}},
                      // Fatbins and a host object holding uncompressed cubins: the wrapped
                      // cubin's headers, symbols and relocations (issue 31).
                      Campaign{"fatbin_wrapped_cubin", "scale_kernel_sass_plain.fatbin", Format::fatbin, false, 800},
                      Campaign{"fatbin_wrapped_cubin_with_calls", "mixed_kernel_sass_plain.fatbin", Format::fatbin,
                               false, 400, {"dev_add.cubin", "dev_mul.cubin"}},
                      Campaign{"object_wrapped_cubin", "scale_kernel_plain.o", Format::object, false, 400},
                      // Relocatable code with CUDA's NOBITS .nv.global (no file bytes, exempt
                      // from the range checks, issue 26) and initialised, constant and
                      // managed data: the exemption must not let damage through.
                      Campaign{"cubin_device_data", "device_data.cubin", Format::cubin, false, 800},
                      Campaign{"object_device_data", "device_data.o", Format::object, false, 400}),
    [](const auto& cell) { return cell.param.label; });

}  // namespace
}  // namespace cujit
