// The PTX scanner (support/ptx_scan.hpp) against the reference it replaced: blank out
// comments and strings in a copy, list every token, match token sequences. The scanner
// skips that work for speed (issue 15); its answers must stay the reference's for every
// input: each PTX the fixtures hold, PTX NVRTC makes of NRT and of the NRT kernels, and
// generated hostile text.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "cujit/nrt.hpp"
#include "cujit/program.hpp"
#include "support/fixtures.hpp"
#include "support/ptx_scan.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

// ---- the reference: the obvious way, every byte and every token ---------------------------

bool reference_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

std::string reference_code_only(std::string_view ptx) {
  std::string out(ptx);
  std::size_t i = 0;
  const auto blank = [&](std::size_t stop) {
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(stop), ' ');
    i = stop;
  };
  while (i < out.size()) {
    if (out.compare(i, 2, "//") == 0) {
      const std::size_t end = out.find('\n', i);
      blank(end == std::string::npos ? out.size() : end);
    } else if (out.compare(i, 2, "/*") == 0) {
      const std::size_t end = out.find("*/", i + 2);
      blank(end == std::string::npos ? out.size() : end + 2);
    } else if (out[i] == '"') {
      std::size_t end = i + 1;
      while (end < out.size() && out[end] != '"') end += out[end] == '\\' ? 2 : 1;
      blank(std::min(end + 1, out.size()));
    } else {
      ++i;
    }
  }
  return out;
}

std::vector<std::string> reference_tokens(std::string_view code) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < code.size()) {
    if (std::isspace(static_cast<unsigned char>(code[i]))) {
      ++i;
    } else if (reference_identifier_char(code[i]) || code[i] == '%') {
      std::size_t end = i + 1;
      while (end < code.size() && reference_identifier_char(code[end])) ++end;
      out.emplace_back(code.substr(i, end - i));
      i = end;
    } else {
      out.emplace_back(code.substr(i, 1));
      ++i;
    }
  }
  return out;
}

std::vector<std::string> reference_functions(std::string_view ptx, std::string_view linkage, bool entries) {
  const std::vector<std::string> toks = reference_tokens(reference_code_only(ptx));
  std::vector<std::string> found;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    if (toks[i] != linkage || (toks[i + 1] != ".func" && !(entries && toks[i + 1] == ".entry"))) continue;
    std::size_t at = i + 2;
    if (at < toks.size() && toks[at] == "(") {
      int depth = 0;
      for (; at < toks.size(); ++at) {
        if (toks[at] == "(") ++depth;
        if (toks[at] == ")" && --depth == 0) break;
      }
      ++at;
    }
    if (at >= toks.size()) break;
    if (std::find(found.begin(), found.end(), toks[at]) == found.end()) found.push_back(toks[at]);
  }
  return found;
}

// ---- comparing ------------------------------------------------------------------------------

std::string shown(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 300)) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
    out += std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : std::string(escaped);
  }
  return out + (text.size() > 300 ? "... (" + std::to_string(text.size()) + " bytes)" : "");
}

// Both scans agree with the reference on `ptx`; the input is named on failure.
void expect_same_answers(std::string_view ptx, const std::string& what) {
  EXPECT_EQ(detail::extern_functions(ptx), reference_functions(ptx, ".extern", false))
      << what << ": " << shown(ptx);
  EXPECT_EQ(detail::visible_functions(ptx), reference_functions(ptx, ".visible", true))
      << what << ": " << shown(ptx);
}

std::vector<fs::path> ptx_files_under(const fs::path& root) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().extension() == ".ptx") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every PTX this project holds: built fixtures and committed ones (numba's output).
std::vector<std::pair<std::string, std::string>> fixture_ptx() {
  std::vector<std::pair<std::string, std::string>> all;
  for (const fs::path& root : {test::fixture_path(""), test::scenario_path("")}) {
    for (const fs::path& file : ptx_files_under(root)) all.emplace_back(file.string(), test::read_bytes(file));
  }
  return all;
}

// PTX NVRTC makes (no GPU needed): the NRT library and the kernels that call it.
std::vector<std::pair<std::string, std::string>> nvrtc_ptx() {
  std::vector<std::pair<std::string, std::string>> all;
  all.emplace_back("nrt::library", nrt::library(Arch(9, 0), CompileTarget::ptx).bytes());
  CompileOptions options;
  options.arch = Arch(9, 0);
  options.headers = nrt::headers();
  for (const std::string name : {"nrt_direct_kernel.cu", "nrt_user_caller.cu", "make_and_sum.cu"}) {
    const fs::path source = test::scenario_path("fixtures/nrt/" + name);
    const CompileResult result = Program(test::read_bytes(source), name).compile(options);
    all.emplace_back(source.string(), result.code.bytes());
  }
  return all;
}

// ---- tests --------------------------------------------------------------------------------

TEST(PtxScanEquivalence, EveryFixturePtxGivesTheReferenceAnswers) {
  const auto all = fixture_ptx();
  ASSERT_GE(all.size(), 5u) << "the fixtures hold PTX (fixtures dir: " << test::fixture_path("") << ")";
  for (const auto& [name, ptx] : all) expect_same_answers(ptx, name);
}

TEST(PtxScanEquivalence, PtxNvrtcMakesOfNrtGivesTheReferenceAnswers) {
  for (const auto& [name, ptx] : nvrtc_ptx()) {
    expect_same_answers(ptx, name);
    // Non-trivial: the kernels declare NRT functions the scan must find.
    if (name.find("nrt_direct_kernel") != std::string::npos) {
      EXPECT_FALSE(detail::extern_functions(ptx).empty()) << name;
    }
  }
}

TEST(PtxScanEquivalence, EveryPrefixAndDamagedCopyOfRealPtxGivesTheReferenceAnswers) {
  // Cuts and inserted delimiters land anywhere: inside directives, comments, lists.
  std::mt19937 random(15);
  const char* inserts[] = {"/*", "*/", "//", "\"", "\\", "(", ")", "\n", "%", ".extern .func ", ".visible .entry "};
  for (const auto& [name, ptx] : fixture_ptx()) {
    for (std::size_t cut = 0; cut <= ptx.size(); cut += 1 + ptx.size() / 97) {
      expect_same_answers(std::string_view(ptx).substr(0, cut), name + " cut at " + std::to_string(cut));
    }
    for (int round = 0; round < 40; ++round) {
      std::string damaged = ptx;
      for (int edit = 0; edit < 3; ++edit) {
        damaged.insert(random() % (damaged.size() + 1), inserts[random() % std::size(inserts)]);
      }
      expect_same_answers(damaged, name + " damaged, round " + std::to_string(round));
    }
    if (HasFailure()) return;  // one broken input is enough to read
  }
}

TEST(PtxScanEquivalence, HostileTextGivesTheReferenceAnswers) {
  const std::string long_name(100000, 'n');
  const std::vector<std::string> cases = {
      "",
      ".extern",
      ".extern .func",
      ".extern .func foo",  // no trailing newline
      ".extern .func (.param .b32 r) foo(.param .b32 a);",
      ".extern .func (.param .b32 r)",
      ".extern .func (.param .b32 r",  // the list never closes: the scan ends
      ".extern .func ( .extern .func a ) b;",
      ".extern .func ( .extern .func ( .extern .func a ) b ) c; .extern .func ((x)) d;",
      ".extern .func ( .extern .func a",
      "// .extern .func hidden;\n.extern .func shown;",
      "/* .visible .entry hidden() */ .visible .entry shown()",
      "/* unterminated .extern .func hidden;",
      "\" .extern .func hidden \" .extern .func shown;",
      "\"escaped \\\" .extern .func hidden\" .extern .func shown;",
      "\"unterminated .extern .func hidden;",
      "\"ends in a backslash\\",
      ".extern /* between */ .func // and\n ( /* ) */ .param .b32 r ) /* */ name;",
      ".extern .func/**/name;.extern//\n.func\"s\"name2;",
      "x.extern .func no; %.extern .func no2; $.extern .func no3; .extern.func no4; .externx .func no5;",
      "a%.extern .func no; %%.extern .func no2; (.extern .func yes)",
      ".extern .func %r1; .extern .func $x.y_z; .extern .func ; .extern .func );",
      ".visible .func (.reg .b32 r) f(); .visible .entry k(); .weak .func w(); .visible .global .u32 g;",
      ".visible .entry k(); .visible .entry k(); .extern .func k; .extern .func k;",
      ".extern\t\v\f\r\n.func\r\nname",
      ".extern .func \x80\xff; .extern .func caf\xc3\xa9;",
      ".extern .func " + long_name + ";",
      long_name + ".extern .func x;",
      "/*" + long_name,
      "\"" + long_name,
      "//" + long_name,
      "/*/ .extern .func hidden; */ .extern .func shown;",
      "*/ .extern .func shown; / / .extern .func shown2; /",
  };
  for (const std::string& text : cases) expect_same_answers(text, "hostile case");
}

TEST(PtxScanEquivalence, RandomTokenSoupAndJunkGiveTheReferenceAnswers) {
  std::mt19937 random(42);
  const char* pieces[] = {".extern", ".visible", ".func", ".entry", ".weak", "(", ")", " ", "\n", "\t", "//",
                          "/*", "*/", "\"", "\\", "%", "a", "$x", ".b32", ";", ",", "/", "*", "_Z3foo", "%r1",
                          "x.extern", ".extern.func", "\x80", "\x01", "{", "}"};
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const int count = static_cast<int>(random() % 40);
    for (int i = 0; i < count; ++i) text += pieces[random() % std::size(pieces)];
    expect_same_answers(text, "token soup, round " + std::to_string(round));
    if (HasFailure()) return;
  }
  for (int round = 0; round < 2000; ++round) {
    std::string junk(random() % 512, ' ');
    for (char& c : junk) c = static_cast<char>(1 + random() % 255);  // any byte but NUL
    expect_same_answers(junk, "binary junk, round " + std::to_string(round));
    if (HasFailure()) return;
  }
}

TEST(PtxScanEquivalence, ManyNamesAndDeepNestingGiveTheReferenceAnswers) {
  // Past the scanner's linear name search, and lists nested thousands deep (each level a
  // declaration of its own, found again inside the outer list).
  std::string many;
  for (int i = 0; i < 500; ++i) many += ".extern .func f" + std::to_string(i % 300) + ";\n";
  expect_same_answers(many, "500 declarations of 300 names");
  std::string nested;
  for (int i = 0; i < 2000; ++i) nested += ".extern .func ( ";
  for (int i = 0; i < 2000; ++i) nested += ") n" + std::to_string(i) + " ";
  expect_same_answers(nested, "2000 nested lists");
  expect_same_answers(nested.substr(0, nested.size() - 10), "2000 nested lists, cut");
}

}  // namespace
}  // namespace cujit
