// The differential link suite (issue 26): a generated corpus of links, formats x symbol
// relations, each linked through both backends, which must end the same way: the same
// kernel results, or the same error kind naming the same symbol. The CPU part checks
// nvJitLink's outcome per case against the relation (no GPU needed: nvJitLink links to a
// cubin); the Gpu part links every case through both backends, runs what links, and
// compares (label `gpu`).
//
// Relations, around mixed_kernel (which calls dev_add and dev_mul):
//   defined_once       every function defined once                      -> links; out = a+b, a*b, a*b+a
//   missing            dev_add defined nowhere                          -> LinkError naming dev_add
//   defined_twice      dev_add defined in two inputs of other formats   -> LinkError naming dev_add
//   prototype_mismatch dev_add defined as (long long, int) -> long long -> LinkError naming dev_add
//   arch_specific      the kernel's PTX for sm_90a in an sm_90 link     -> link error naming the file
// No case links LTO-IR: the driver linker takes none, and nvJitLink 13.0 crashes on a
// mismatch or duplicate once an LTO link ran in the process (docs/linking.md).
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/fresh_process.hpp"
#include "support/linking.hpp"
#include "support/printers.hpp"

namespace cujit {
namespace {

enum class Relation { defined_once, missing, defined_twice, prototype_mismatch, arch_specific };

const char* relation_name(Relation relation) {
  switch (relation) {
    case Relation::defined_once: return "defined_once";
    case Relation::missing: return "missing";
    case Relation::defined_twice: return "defined_twice";
    case Relation::prototype_mismatch: return "prototype_mismatch";
    case Relation::arch_specific: return "arch_specific";
  }
  return "?";
}

struct LinkCase {
  Relation relation;
  std::vector<std::string> files;
  std::string name;
};

// Test listings print the case by its name (stable across runs).
void PrintTo(const LinkCase& link_case, std::ostream* out) { *out << link_case.name; }

// Fixture suffixes of every format both backends take.
const std::vector<std::string> definition_formats{".ptx", "_sass.fatbin", "_ptx.fatbin", ".cubin", ".o", ".a"};

std::vector<LinkCase> generated_cases() {
  std::vector<LinkCase> cases;
  const auto label = [](const std::string& file) { return test::identifier(file); };
  for (const std::string kernel : {"mixed_kernel.ptx", "mixed_kernel.cubin"}) {
    for (const std::string& add : definition_formats) {
      cases.push_back({Relation::defined_once, {kernel, "dev_mul.ptx", "dev_add" + add},
                       "defined_once_" + label(kernel) + "_dev_add" + label(add)});
      cases.push_back({Relation::prototype_mismatch, {kernel, "dev_mul.ptx", "dev_add_wide" + add},
                       "prototype_mismatch_" + label(kernel) + "_dev_add_wide" + label(add)});
      for (const std::string& second : definition_formats) {
        if (second <= add) continue;
        cases.push_back({Relation::defined_twice, {kernel, "dev_mul.ptx", "dev_add" + add, "dev_add" + second},
                         "defined_twice_" + label(kernel) + label(add) + label(second)});
      }
    }
    cases.push_back({Relation::missing, {kernel, "dev_mul.ptx"}, "missing_" + label(kernel)});
  }
  cases.push_back({Relation::arch_specific, {"scale_kernel_sm90a.ptx"}, "arch_specific_scale_kernel_sm90a_ptx"});
  return cases;
}

// How one link ended.
struct Outcome {
  bool linked = false;
  Bytes cubin;
  std::optional<ErrorKind> kind;
  std::string message;
};

Outcome run_link(const LinkCase& link_case, LinkerBackend backend) {
  Outcome outcome;
  try {
    Linker linker(test::link_options(backend, false));
    for (const std::string& file : link_case.files) linker.add_file(test::fixture_path(file));
    outcome.cubin = linker.link().code.bytes();
    outcome.linked = true;
  } catch (const Error& error) {
    outcome.kind = error.kind();
    outcome.message = error.what();
  }
  return outcome;
}

// The symbol (or file) a failed case's error must name.
std::string named_by_failure(const LinkCase& link_case) {
  return link_case.relation == Relation::arch_specific ? "scale_kernel_sm90a.ptx" : "dev_add";
}

std::string case_name(const ::testing::TestParamInfo<LinkCase>& param) { return param.param.name; }

class DifferentialLink : public ::testing::TestWithParam<LinkCase> {};

// nvJitLink's outcome follows the relation (CPU).
// In a process of its own (support/fresh_process.hpp): a duplicate or a mismatch in a binary
// input may kill nvJitLink once an LTO link ran in the process, as when `cujit conformance`
// runs the area's tests together.
TEST_P(DifferentialLink, NvJitLinkEndsAsTheRelationSays) {
  const LinkCase link_case = GetParam();
  test::in_fresh_process([&] {
    const Outcome outcome = run_link(link_case, LinkerBackend::nvjitlink);
    if (link_case.relation == Relation::defined_once) {
      EXPECT_TRUE(outcome.linked) << relation_name(link_case.relation) << ": " << outcome.message;
      return;
    }
    EXPECT_FALSE(outcome.linked) << relation_name(link_case.relation) << " linked";
    EXPECT_EQ(outcome.kind, ErrorKind::link) << outcome.message;
    EXPECT_NE(outcome.message.find(named_by_failure(link_case)), std::string::npos) << outcome.message;
  });
}

INSTANTIATE_TEST_SUITE_P(Corpus, DifferentialLink, ::testing::ValuesIn(generated_cases()), case_name);

class GpuDifferentialLink : public ::testing::TestWithParam<LinkCase> {};

// Both backends end every case the same way: the same results from what links, the same
// error kind naming the same symbol otherwise.
TEST_P(GpuDifferentialLink, BothBackendsEndTheSameWay) {
  CUJIT_REQUIRE_DEVICE();
  const LinkCase& link_case = GetParam();
  const Outcome nvjitlink = run_link(link_case, LinkerBackend::nvjitlink);
  const Outcome driver = run_link(link_case, LinkerBackend::driver);
  ASSERT_EQ(nvjitlink.linked, driver.linked)
      << relation_name(link_case.relation) << ": nvJitLink " << (nvjitlink.linked ? "linked" : nvjitlink.message)
      << "\ndriver " << (driver.linked ? "linked" : driver.message);
  if (nvjitlink.linked) {
    const std::vector<int> expected{7 + 5, 7 * 5, 7 * 5 + 7};
    for (const Outcome* outcome : {&nvjitlink, &driver}) {
      const std::vector<int> out = test::run_int_kernel(outcome->cubin, "mixed_kernel", 3, {7, 5});
      EXPECT_EQ(out, expected) << (outcome == &nvjitlink ? "nvJitLink" : "driver");
    }
    return;
  }
  EXPECT_EQ(nvjitlink.kind, driver.kind) << nvjitlink.message << "\n" << driver.message;
  EXPECT_NE(nvjitlink.message.find(named_by_failure(link_case)), std::string::npos) << nvjitlink.message;
  EXPECT_NE(driver.message.find(named_by_failure(link_case)), std::string::npos) << driver.message;
}

INSTANTIATE_TEST_SUITE_P(Corpus, GpuDifferentialLink, ::testing::ValuesIn(generated_cases()), case_name);

}  // namespace
}  // namespace cujit
