// Format table, detection by content, integrity checks (and the damage they refuse) and
// embedded code kinds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cujit/format.hpp"
#include "support/fixtures.hpp"
#include "support/long_names.hpp"

namespace cujit {
namespace {

using test::fixture_path;
using test::read_bytes;

TEST(FormatTable, EveryFormatHasANameAndCanonicalExtension) {
  for (Format format : all_formats) {
    EXPECT_EQ(parse_format(to_string(format)), format);
    ASSERT_FALSE(traits(format).extensions.empty()) << to_string(format);
    EXPECT_EQ(format_from_extension(traits(format).extensions.front()), format);
  }
}

TEST(FormatTable, ExtensionsMapToFormats) {
  EXPECT_EQ(format_from_extension(".ptx"), Format::ptx);
  EXPECT_EQ(format_from_extension(".cu"), Format::cu);
  EXPECT_EQ(format_from_extension(".ltoir"), Format::ltoir);
  EXPECT_EQ(format_from_extension(".cubin"), Format::cubin);
  EXPECT_EQ(format_from_extension(".fatbin"), Format::fatbin);
  EXPECT_EQ(format_from_extension(".o"), Format::object);
  EXPECT_EQ(format_from_extension(".a"), Format::archive);
  EXPECT_EQ(format_from_extension(".lib"), Format::archive);
  EXPECT_EQ(format_from_extension(".cuh"), std::nullopt);
  EXPECT_EQ(format_from_extension(""), std::nullopt);
}

TEST(FormatTable, LinkerInputTypesFollowTheApis) {
  // cu is compiled first; the driver linker takes no LTO-IR.
  EXPECT_LT(traits(Format::cu).nvjitlink_input, 0);
  EXPECT_LT(traits(Format::cu).driver_input, 0);
  EXPECT_LT(traits(Format::ltoir).driver_input, 0);
  for (Format format : {Format::ptx, Format::cubin, Format::fatbin, Format::object,
                        Format::archive}) {
    EXPECT_GE(traits(format).driver_input, 0) << to_string(format);
    EXPECT_GE(traits(format).nvjitlink_input, 0) << to_string(format);
  }
}

struct DetectCase {
  const char* fixture;
  Format format;
};

void PrintTo(const DetectCase& detect, std::ostream* out) { *out << detect.fixture; }

class FormatDetection : public ::testing::TestWithParam<DetectCase> {};

TEST_P(FormatDetection, RecognisesNvccOutput) {
  const std::string bytes = read_bytes(fixture_path(GetParam().fixture));
  EXPECT_EQ(detect_format(bytes), GetParam().format);
  EXPECT_EQ(integrity_problem(GetParam().format, bytes), "");
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, FormatDetection,
    ::testing::Values(DetectCase{"scale_kernel.ptx", Format::ptx},
                      DetectCase{"scale_kernel.ltoir", Format::ltoir},
                      DetectCase{"scale_kernel.cubin", Format::cubin},
                      DetectCase{"scale_kernel_sass.fatbin", Format::fatbin},
                      DetectCase{"scale_kernel_ptx.fatbin", Format::fatbin},
                      DetectCase{"scale_kernel_ltoir.fatbin", Format::fatbin},
                      DetectCase{"scale_kernel.o", Format::object},
                      DetectCase{"scale_kernel.a", Format::archive}),
    [](const auto& cell) {
      std::string name = cell.param.fixture;
      for (char& c : name) {
        if (c == '.') c = '_';
      }
      return name;
    });

TEST(FormatDetection, TextThatIsNotPtxIsCudaSource) {
  EXPECT_EQ(detect_format("__global__ void k() {}\n"), Format::cu);
  EXPECT_EQ(detect_format(".version 9.0\n.target sm_90\n"), Format::ptx);
  // Directives must be whole tokens.
  EXPECT_EQ(detect_format("// .versionX .targets\n"), Format::cu);
  EXPECT_EQ(detect_format(""), std::nullopt);
  EXPECT_EQ(detect_format(std::string("\x01\x02\x00\x03", 4)), std::nullopt);
}

TEST(FormatIntegrity, TruncationOfEachBinaryFormatIsFound) {
  for (const char* name : {"scale_kernel.cubin", "scale_kernel_sass.fatbin",
                           "scale_kernel.o", "scale_kernel.a"}) {
    const std::string bytes = read_bytes(fixture_path(name));
    const auto format = detect_format(bytes);
    ASSERT_TRUE(format.has_value()) << name;
    for (std::size_t keep : {bytes.size() / 2, bytes.size() - 1, std::size_t{12}}) {
      const std::string cut = bytes.substr(0, keep);
      const auto cut_format = detect_format(cut);
      const bool detected_same = cut_format == format;
      const std::string problem = detected_same ? integrity_problem(*format, cut) : "";
      EXPECT_TRUE(!detected_same || !problem.empty())
          << name << " cut to " << keep << " bytes passed as intact";
    }
  }
}

TEST(EmbeddedCode, FatbinEntryKindsAreRead) {
  const auto sass = embedded_code_kinds(read_bytes(fixture_path("scale_kernel_sass.fatbin")));
  EXPECT_TRUE(sass.sass);
  EXPECT_FALSE(sass.ptx);
  EXPECT_FALSE(sass.ltoir);
  const auto ptx = embedded_code_kinds(read_bytes(fixture_path("scale_kernel_ptx.fatbin")));
  EXPECT_TRUE(ptx.ptx);
  EXPECT_FALSE(ptx.sass);
  const auto lto = embedded_code_kinds(read_bytes(fixture_path("scale_kernel_ltoir.fatbin")));
  EXPECT_TRUE(lto.ltoir);
  EXPECT_FALSE(lto.sass);
  const auto object = embedded_code_kinds(read_bytes(fixture_path("scale_kernel.o")));
  EXPECT_TRUE(object.sass);
  EXPECT_TRUE(object.ptx);
  EXPECT_FALSE(object.ltoir);
}

TEST(CubinArch, ReadFromTheElfHeader) {
  EXPECT_EQ(cubin_sm_number(read_bytes(fixture_path("scale_kernel.cubin"))), 90);
  EXPECT_EQ(cubin_sm_number(read_bytes(fixture_path("scale_kernel_sm80.cubin"))), 80);
  EXPECT_EQ(cubin_sm_number(read_bytes(fixture_path("scale_kernel.ptx"))), std::nullopt);
}

TEST(PtxTarget, ReadsTheDirectiveOperand) {
  EXPECT_EQ(ptx_target(".version 9.0\n.target sm_90a\n"), "sm_90a");
  EXPECT_EQ(ptx_target(".version 9.0\n.target\tsm_80, debug\n"), "sm_80");
  EXPECT_EQ(ptx_target("// no target here\n"), std::nullopt);
  EXPECT_EQ(ptx_target(read_bytes(fixture_path("scale_kernel.ptx"))), "sm_90");
}

TEST(EmbeddedCode, NeedsLtoOnlyWhenLtoIrIsAllThereIs) {
  EXPECT_TRUE(needs_lto(Format::ltoir, read_bytes(fixture_path("scale_kernel.ltoir"))));
  EXPECT_TRUE(needs_lto(Format::fatbin, read_bytes(fixture_path("scale_kernel_ltoir.fatbin"))));
  EXPECT_FALSE(needs_lto(Format::fatbin, read_bytes(fixture_path("scale_kernel_sass.fatbin"))));
  EXPECT_FALSE(needs_lto(Format::object, read_bytes(fixture_path("scale_kernel.o"))));
  EXPECT_FALSE(needs_lto(Format::ptx, read_bytes(fixture_path("scale_kernel.ptx"))));
}


// ---- damaged binaries ------------------------------------------------------------------------
// Each case is a change nvJitLink 13.0 was seen to die on (SIGSEGV / SIGFPE / a hang) or one the
// format forbids; the checks must refuse it, saying what is wrong. Fields are found by reading
// the fixture, not at fixed offsets, so the cases follow the toolchain's layout.

namespace damage {

std::uint64_t get(const std::string& bytes, std::size_t at, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t k = 0; k < width; ++k) {
    value |= std::uint64_t{static_cast<unsigned char>(bytes.at(at + k))} << (8 * k);
  }
  return value;
}

void put(std::string& bytes, std::size_t at, std::size_t width, std::uint64_t value) {
  for (std::size_t k = 0; k < width; ++k) bytes.at(at + k) = static_cast<char>((value >> (8 * k)) & 0xFF);
}

// The offset of the section header of the section called `name` in an ELF64 file.
std::size_t section_header(const std::string& elf, const std::string& name) {
  const std::size_t table = get(elf, 40, 8);
  const std::size_t count = get(elf, 60, 2);
  const std::size_t names = get(elf, table + get(elf, 62, 2) * 64 + 24, 8);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = table + i * 64;
    if (std::string(elf.c_str() + names + get(elf, at, 4)) == name) return at;
  }
  throw std::runtime_error("no section " + name);
}

std::size_t section_data(const std::string& elf, const std::string& name) {
  return get(elf, section_header(elf, name) + 24, 8);
}

}  // namespace damage

struct Damage {
  const char* name;
  const char* fixture;
  std::string (*apply)(std::string);
  const char* expected;  // a fragment of the refusal
};

void PrintTo(const Damage& damage, std::ostream* out) { *out << damage.name; }

std::string cubin_section_table_moved(std::string b) {
  damage::put(b, 40, 1, 0x5f);  // the first crash report: e_shoff's low byte
  return b;
}
std::string cubin_flags_bit0(std::string b) {
  damage::put(b, 48, 1, damage::get(b, 48, 1) | 1);
  return b;
}
std::string cubin_line_flag_without_lines(std::string b) {
  damage::put(b, 51, 1, damage::get(b, 51, 1) | 0x08);
  return b;
}
std::string cubin_null_section_typed(std::string b) {
  damage::put(b, damage::get(b, 40, 8) + 4, 4, 1);  // SIGFPE
  return b;
}
std::string cubin_alignment_zero(std::string b) {
  damage::put(b, damage::section_header(b, ".debug_frame") + 48, 8, 0);  // SIGFPE
  return b;
}
std::string cubin_symbol_name_outside(std::string b) {
  damage::put(b, damage::section_data(b, ".symtab") + 24 * 4 + 3, 1, 0x40);
  return b;
}
std::string cubin_symbol_section_outside(std::string b) {
  damage::put(b, damage::section_data(b, ".symtab") + 24 * 4 + 6, 2, 0x5f);
  return b;
}
std::string cubin_function_not_a_function(std::string b) {
  const std::size_t text = damage::section_header(b, ".text.scale_kernel");
  const std::size_t function = damage::get(b, text + 44, 4) & 0xFFFFFF;
  damage::put(b, damage::section_data(b, ".symtab") + 24 * function + 4, 1, 0x11);  // an object
  return b;
}
std::string cubin_attribute_size_broken(std::string b) {
  damage::put(b, damage::section_data(b, ".nv.info") + 2, 2, 1);
  return b;
}
std::string cubin_attribute_symbol_outside(std::string b) {
  damage::put(b, damage::section_data(b, ".nv.info") + 6, 2, 0x5f5f);
  return b;
}
std::string cubin_attribute_wrong_format(std::string b) {
  // REGCOUNT (0x2f) is an SVAL; as an HVAL nvJitLink reads garbage.
  damage::put(b, damage::section_data(b, ".nv.info"), 1, 3);
  return b;
}
std::string cubin_callgraph_marker_broken(std::string b) {
  damage::put(b, damage::section_data(b, ".nv.callgraph") + 6, 1, 0x5f);
  return b;
}
std::string cubin_section_type_against_name(std::string b) {
  damage::put(b, damage::section_header(b, ".note.nv.cuinfo") + 4, 4, 1);
  return b;
}
std::string cubin_info_outside(std::string b) {
  damage::put(b, damage::section_header(b, ".nv.info") + 44, 4, 0x5f00);
  return b;
}
std::string cubin_relocation_type_wide(std::string b) {
  damage::put(b, damage::section_data(b, ".rela.debug_frame") + 8 + 2, 1, 0x5f);
  return b;
}
std::string cubin_relocation_symbol_outside(std::string b) {
  damage::put(b, damage::section_data(b, ".rela.debug_frame") + 8 + 5, 1, 0x5f);
  return b;
}
std::string cubin_sections_overlap(std::string b) {
  const std::size_t info = damage::section_header(b, ".nv.info");
  damage::put(b, info + 32, 8, damage::get(b, info + 32, 8) + 4);  // into .nv.compat
  return b;
}
std::string cubin_kparam_index(std::string b) {
  const std::string records = b.substr(damage::section_data(b, ".nv.info.scale_kernel"));
  const std::size_t kparam = records.find(std::string("\x04\x17\x0c\x00", 4));
  damage::put(b, damage::section_data(b, ".nv.info.scale_kernel") + kparam + 4, 1, 0x5f);
  return b;
}
std::string fatbin_entry_kind(std::string b) {
  damage::put(b, 16, 2, 0x10);
  return b;
}
std::string fatbin_entry_header_small(std::string b) {
  damage::put(b, 20, 4, 0x10);
  return b;
}
std::string fatbin_padded_size_short(std::string b) {
  damage::put(b, 24, 1, 0);
  return b;
}
std::string fatbin_body_past_end(std::string b) {
  damage::put(b, 9, 1, 0xff);  // nvJitLink hangs on this one
  return b;
}
std::string fatbin_sass_as_ptx(std::string b) {
  damage::put(b, 16, 2, 1);
  return b;
}
std::string fatbin_compressed_twice(std::string b) {
  damage::put(b, 16 + 41, 1, damage::get(b, 16 + 41, 1) | 0x20);
  return b;
}
std::string fatbin_payload_damaged(std::string b) {
  // A byte of the zstd frame that changes the cubin inside: its e_shoff.
  const std::size_t payload = 16 + damage::get(b, 20, 4);
  damage::put(b, payload + 40, 1, damage::get(b, payload + 40, 1) ^ 0x5f);
  return b;
}
std::string object_fatbin_damaged(std::string b) {
  const std::size_t fatbin = damage::section_data(b, "__nv_relfatbin");
  damage::put(b, fatbin + 16, 2, 0x10);
  return b;
}
std::string object_without_device_code(std::string b) {
  const std::size_t header = damage::section_header(b, "__nv_relfatbin");
  const std::size_t name = damage::get(b, header, 4) + damage::section_data(b, ".shstrtab");
  b.at(name + 2) = 'X';  // "__Xv_relfatbin": no longer the device code section
  const std::size_t fatbin = damage::get(b, header + 24, 8);
  b.replace(fatbin, 4, "XXXX");
  return b;
}
std::string object_for_another_machine(std::string b) {
  damage::put(b, 18, 2, 183);
  return b;
}
std::string archive_size_not_a_number(std::string b) {
  b.replace(8 + 48, 2, "1x");
  return b;
}
std::string archive_name_with_nul(std::string b) {
  b.at(8) = '\0';
  return b;
}
std::string archive_member_damaged(std::string b) {
  // The first member after the symbol table is the object: damage its fatbin's entry kind.
  const std::size_t fatbin = b.find(std::string("\x50\xed\x55\xba", 4));
  damage::put(b, fatbin + 16, 2, 0x10);
  return b;
}
std::string ltoir_option_data_outside(std::string b) {
  damage::put(b, 18, 1, 0x5f);
  return b;
}
std::string ltoir_option_number(std::string b) {
  damage::put(b, damage::get(b, 12, 2), 1, 0xcd);
  return b;
}
std::string ltoir_ir_outside(std::string b) {
  damage::put(b, 20, 4, b.size());
  return b;
}

class HostileFormatChecks : public ::testing::TestWithParam<Damage> {};

TEST_P(HostileFormatChecks, RefuseWhatKillsTheLinkerAndSayWhy) {
  const std::string original = read_bytes(fixture_path(GetParam().fixture));
  const auto format = detect_format(original);
  ASSERT_TRUE(format.has_value());
  ASSERT_EQ(integrity_problem(*format, original), "") << "the fixture itself must be sound";
  const std::string damaged = GetParam().apply(original);
  ASSERT_NE(damaged, original);
  ASSERT_EQ(detect_format(damaged), format) << "the damage must keep the format recognisable";
  const std::string problem = integrity_problem(*format, damaged);
  EXPECT_NE(problem.find(GetParam().expected), std::string::npos)
      << "expected '" << GetParam().expected << "' in: '" << problem << "'";
}

// Every relocation type that names a function, set on a relocation against a symbol that is
// not one (.rela.debug_frame's third entry names the section symbol .debug_frame), is refused
// before nvJitLink sees it: types 31-34, 47-49 and 61 killed nvJitLinkAddData in the red-team
// pass of issue 31; the same types against a function link (scale_kernel's own calls).
TEST(HostileFormatChecks, EveryFunctionRelocationTypeAgainstANonFunctionIsRefused) {
  const std::string original = read_bytes(fixture_path("scale_kernel.cubin"));
  const std::size_t third_type = damage::section_data(original, ".rela.debug_frame") + 2 * 24 + 8;
  for (const unsigned type : {0x1fu, 0x20u, 0x21u, 0x22u, 0x23u, 0x2fu, 0x30u, 0x31u, 0x3au, 0x3du, 0x3eu, 0x3fu,
                              0x49u, 0x4bu, 0x66u}) {
    std::string damaged = original;
    damage::put(damaged, third_type, 4, type);
    const std::string problem = integrity_problem(Format::cubin, damaged);
    EXPECT_NE(problem.find("which names a function"), std::string::npos) << "type " << type << ": '" << problem << "'";
  }
  // The relocation as nvcc wrote it is sound (the check does not refuse by position).
  EXPECT_EQ(integrity_problem(Format::cubin, original), "");
}

// Every PTX field that holds a name, at the limit and one character over it (red-team
// finding F18): over it is refused naming the line and the limit, at it is sound. That
// nvJitLink survives names at the limit is HostileLinkerLog.NamesAtTheLimitLinkInEveryField.
TEST(HostileFormatChecks, APtxNameOverTheLimitIsRefusedInEveryField) {
  const auto at_limit = test::long_name_ptx(max_linker_name_length);
  const auto over = test::long_name_ptx(max_linker_name_length + 1);
  ASSERT_EQ(at_limit.size(), over.size());
  for (std::size_t i = 0; i < over.size(); ++i) {
    EXPECT_EQ(detect_format(over[i].ptx), Format::ptx) << over[i].field;
    EXPECT_EQ(integrity_problem(Format::ptx, at_limit[i].ptx), "") << at_limit[i].field;
    const std::string problem = integrity_problem(Format::ptx, over[i].ptx);
    EXPECT_NE(problem.find("characters ('"), std::string::npos) << over[i].field << ": " << problem;
    EXPECT_NE(problem.find("the limit is " + std::to_string(max_linker_name_length)), std::string::npos)
        << over[i].field << ": " << problem;
    EXPECT_LT(problem.size(), 300u) << "the message shows the name's start only";
  }
  // Comments are not handed to nvJitLink's name handling: a long comment word is sound.
  const std::string commented = at_limit[0].ptx + "// " + std::string(4 * max_linker_name_length, 'c') +
                                "\n/* " + std::string(4 * max_linker_name_length, 'c') + " */\n";
  EXPECT_EQ(integrity_problem(Format::ptx, commented), "");
}

// The name check looks only at every max_linker_name_length-th byte unless one of them lies
// in a run over the limit (format.cpp says why that finds every such run). Checked here
// against an exact scan written apart, on texts whose long runs start at random offsets
// around the stride's multiples, some inside comments, at the limit and one over it.
std::size_t longest_name_outside_comments(const std::string& text) {
  const auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%';
  };
  std::size_t longest = 0, at = 0;
  while (at < text.size()) {
    if (text.compare(at, 2, "//") == 0) {
      at = std::min(text.find('\n', at), text.size());
    } else if (text.compare(at, 2, "/*") == 0) {
      const std::size_t end = text.find("*/", at + 2);
      at = end == std::string::npos ? text.size() : end + 2;
    } else if (name_char(text[at])) {
      const std::size_t start = at;
      while (at < text.size() && name_char(text[at])) ++at;
      longest = std::max(longest, at - start);
    } else {
      ++at;
    }
  }
  return longest;
}

TEST(PtxNameCheck, TheStrideShortcutAgreesWithAnExactScan) {
  constexpr std::size_t limit = max_linker_name_length;
  std::mt19937_64 random(20261128);
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  int refused = 0, sound = 0;
  for (int round = 0; round < 400; ++round) {
    std::string text = ".version 8.0\n.target sm_90\n";
    const std::size_t runs = 1 + pick(3);
    for (std::size_t r = 0; r < runs; ++r) {
      // Filler up to a random offset around the next multiple of the limit, then one long run.
      const std::size_t multiple = (text.size() / limit + 1 + pick(2)) * limit;
      const std::size_t length = std::vector<std::size_t>{limit - 1, limit, limit + 1, limit + 2, 2 * limit + 1}[pick(5)];
      const std::size_t start = multiple - std::min(multiple - text.size(), pick(length + 2));
      while (text.size() < start) text += pick(8) == 0 ? std::string("\n") : std::string(pick(2) ? "ab_1 " : "%r7, ");
      text.resize(start);
      const int where = static_cast<int>(pick(4));  // 0, 1: code; 2: line comment; 3: block comment
      const std::string run(length, "aZ9_$%"[pick(6)]);
      if (where == 2) text += "// " + run + "\n";
      else if (where == 3) text += "/* " + run + " */";
      else text += run + (pick(2) ? " " : ";\n");
    }
    const bool too_long = longest_name_outside_comments(text) > limit;
    const std::string problem = integrity_problem(Format::ptx, text);
    EXPECT_EQ(!problem.empty(), too_long) << "round " << round << " (" << text.size() << " bytes): '"
                                          << problem.substr(0, 200) << "'";
    (too_long ? refused : sound) += 1;
  }
  // Both answers were asked for often enough to mean something.
  EXPECT_GT(refused, 50);
  EXPECT_GT(sound, 50);
  // A run one over the limit fits between two looks only if they are further apart than the
  // limit: starts swept around the first multiples catch a stride a few bytes too long.
  for (std::size_t k = 1; k <= 3; ++k) {
    for (std::size_t start = k * limit - 8; start <= k * limit + 8; ++start) {
      for (const std::size_t length : {limit, limit + 1}) {
        std::string text = ".version 8.0\n.target sm_90\n";
        text.resize(start, ' ');
        text += std::string(length, 'q') + "\n";
        EXPECT_EQ(integrity_problem(Format::ptx, text).empty(), length == limit)
            << "a run of " << length << " at byte " << start;
      }
    }
  }
}

// scale_kernel.cubin with its last symbol renamed to `length` characters: the string table
// moved to the end of the file, grown by the name.
std::string cubin_with_symbol_name(std::string b, std::size_t length) {
  const std::size_t strtab = damage::section_header(b, ".strtab");
  std::string table = b.substr(damage::get(b, strtab + 24, 8), damage::get(b, strtab + 32, 8));
  const std::size_t name_at = table.size();
  table += std::string(length, 'n') + '\0';
  const std::size_t moved_to = b.size();
  b += table;
  damage::put(b, strtab + 24, 8, moved_to);
  damage::put(b, strtab + 32, 8, table.size());
  const std::size_t symtab = damage::section_header(b, ".symtab");
  const std::size_t last = damage::get(b, symtab + 24, 8) + damage::get(b, symtab + 32, 8) - 24;
  damage::put(b, last, 4, name_at);
  return b;
}

// Cubin symbol names too (red-team finding F18's class): over the limit refused naming the
// symbol and the limit; at the limit the length is not what is refused.
TEST(HostileFormatChecks, ACubinSymbolNameOverTheLimitIsRefused) {
  const std::string original = read_bytes(fixture_path("scale_kernel.cubin"));
  for (const std::size_t length : {max_linker_name_length + 1, 2 * max_linker_name_length, std::size_t{5'000'000}}) {
    const std::string problem = integrity_problem(Format::cubin, cubin_with_symbol_name(original, length));
    EXPECT_NE(problem.find("has a name of " + std::to_string(length) + " characters"), std::string::npos) << problem;
    EXPECT_NE(problem.find("the limit is"), std::string::npos) << problem;
  }
  // At the limit the length is no problem (the renamed function may be one of its own).
  for (const std::size_t length : {std::size_t{8}, max_linker_name_length}) {
    const std::string problem = integrity_problem(Format::cubin, cubin_with_symbol_name(original, length));
    EXPECT_EQ(problem.find("the limit is"), std::string::npos) << problem;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostileFormatChecks,
    ::testing::Values(
        Damage{"cubin_section_table_moved", "scale_kernel.cubin", cubin_section_table_moved, "misplaced"},
        Damage{"cubin_flags_bit0", "scale_kernel.cubin", cubin_flags_bit0, "bit 0"},
        Damage{"cubin_line_flag_without_lines", "scale_kernel.cubin", cubin_line_flag_without_lines,
               "line information"},
        Damage{"cubin_null_section_typed", "scale_kernel.cubin", cubin_null_section_typed, "null section"},
        Damage{"cubin_alignment_zero", "scale_kernel.cubin", cubin_alignment_zero, "alignment 0"},
        Damage{"cubin_symbol_name_outside", "scale_kernel.cubin", cubin_symbol_name_outside,
               "of its string table"},
        Damage{"cubin_symbol_section_outside", "scale_kernel.cubin", cubin_symbol_section_outside,
               "is in section"},
        Damage{"cubin_function_not_a_function", "scale_kernel.cubin", cubin_function_not_a_function,
               "function"},
        Damage{"cubin_attribute_size_broken", "scale_kernel.cubin", cubin_attribute_size_broken,
               "('.nv.info'): "},
        Damage{"cubin_attribute_symbol_outside", "scale_kernel.cubin", cubin_attribute_symbol_outside,
               "names symbol"},
        Damage{"cubin_attribute_wrong_format", "scale_kernel.cubin", cubin_attribute_wrong_format,
               "in format 4"},
        Damage{"cubin_callgraph_marker_broken", "scale_kernel.cubin", cubin_callgraph_marker_broken,
               "('.nv.callgraph')"},
        Damage{"cubin_section_type_against_name", "scale_kernel.cubin", cubin_section_type_against_name,
               "its name does not allow"},
        Damage{"cubin_info_outside", "scale_kernel.cubin", cubin_info_outside, "refers to section"},
        Damage{"cubin_relocation_type_wide", "scale_kernel.cubin", cubin_relocation_type_wide,
               "no CUDA relocation"},
        Damage{"cubin_relocation_symbol_outside", "scale_kernel.cubin", cubin_relocation_symbol_outside,
               "uses symbol"},
        Damage{"cubin_sections_overlap", "scale_kernel.cubin", cubin_sections_overlap, "overlaps"},
        Damage{"cubin_kparam_index", "scale_kernel.cubin", cubin_kparam_index, "parameter index"},
        Damage{"fatbin_entry_kind", "scale_kernel_sass.fatbin", fatbin_entry_kind, "has kind 16"},
        Damage{"fatbin_entry_header_small", "scale_kernel_sass.fatbin", fatbin_entry_header_small,
               "has a header of 16 bytes"},
        Damage{"fatbin_padded_size_short", "scale_kernel_sass.fatbin", fatbin_padded_size_short,
               "padded bytes"},
        Damage{"fatbin_body_past_end", "scale_kernel_ptx.fatbin", fatbin_body_past_end, "truncated"},
        Damage{"fatbin_sass_as_ptx", "scale_kernel_sass.fatbin", fatbin_sass_as_ptx, "no compile options"},
        Damage{"fatbin_compressed_twice", "scale_kernel_sass.fatbin", fatbin_compressed_twice,
               "compressed twice"},
        Damage{"fatbin_payload_damaged", "scale_kernel_sass.fatbin", fatbin_payload_damaged, "ELF entry"},
        Damage{"object_fatbin_damaged", "scale_kernel.o", object_fatbin_damaged, "'__nv_relfatbin'"},
        Damage{"object_without_device_code", "scale_kernel.o", object_without_device_code,
               "without embedded device code"},
        Damage{"object_for_another_machine", "scale_kernel.o", object_for_another_machine, "machine 183"},
        Damage{"archive_size_not_a_number", "scale_kernel.a", archive_size_not_a_number, "not a number"},
        Damage{"archive_name_with_nul", "scale_kernel.a", archive_name_with_nul, "non-ASCII"},
        Damage{"archive_member_damaged", "scale_kernel.a", archive_member_damaged, "member '"},
        Damage{"ltoir_option_data_outside", "scale_kernel.ltoir", ltoir_option_data_outside, "out of order"},
        Damage{"ltoir_option_number", "scale_kernel.ltoir", ltoir_option_number, "number 205"},
        Damage{"ltoir_ir_outside", "scale_kernel.ltoir", ltoir_ir_outside, "truncated"}),
    [](const auto& cell) { return std::string(cell.param.name); });

TEST(FormatIntegrity, EveryBinaryFixtureIsAccepted) {
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_path(""))) {
    if (!entry.is_regular_file()) continue;
    const std::string bytes = read_bytes(entry.path());
    const auto format = detect_format(bytes);
    if (!format || *format == Format::ptx || *format == Format::cu) continue;
    EXPECT_EQ(integrity_problem(*format, bytes), "") << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 20u);
}

}  // namespace
}  // namespace cujit
