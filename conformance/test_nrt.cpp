// NRT detection in PTX and the link policy: pure, no GPU.
#include <gtest/gtest.h>

#include "cujit/nrt.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

using nrt::referenced_functions;
using nrt::references_nrt;
using Names = std::vector<std::string>;

TEST(NrtNames, ComeFromTheHeaderTable) {
  const auto names = nrt::function_names();
  EXPECT_EQ(names.size(), 14u);
  for (std::string_view name : names) {
    // Every name is declared by nrt.cuh's table, which the header text includes.
    EXPECT_TRUE(nrt::is_function_name(name));
  }
  EXPECT_TRUE(nrt::is_function_name("NRT_MemInfo_alloc_aligned"));
  EXPECT_FALSE(nrt::is_function_name("NRT_increfX"));
  EXPECT_NE(nrt::header_source().find("cujit/nrt_functions.def"), std::string_view::npos);
}

TEST(NrtDetection, ExternWithoutReturnParameter) {
  EXPECT_EQ(referenced_functions(".extern .func NRT_incref(.param .b64 p);"), Names{"NRT_incref"});
}

TEST(NrtDetection, ExternWithReturnParameter) {
  EXPECT_EQ(referenced_functions(
                ".extern .func (.param .b64 func_retval0) NRT_MemInfo_data_fast(.param .b64 p);"),
            Names{"NRT_MemInfo_data_fast"});
}

TEST(NrtDetection, SplitOverLinesWithAnyWhitespace) {
  EXPECT_EQ(referenced_functions(".extern\n\t.func\r\n  (\n .param .b64 func_retval0\n)\n"
                                 "\tNRT_MemInfo_alloc_aligned\n(\n.param .b64 a,\n.param .b32 b\n);"),
            Names{"NRT_MemInfo_alloc_aligned"});
  EXPECT_EQ(referenced_functions(".extern      .func\t\t\tNRT_decref\n(\n.param .b64 x\n)\n;"),
            Names{"NRT_decref"});
}

TEST(NrtDetection, TokenExactOnly) {
  EXPECT_FALSE(references_nrt(".extern .func NRT_increfX(.param .b64 p);"));
  EXPECT_FALSE(references_nrt(".extern .func XNRT_incref(.param .b64 p);"));
  EXPECT_FALSE(references_nrt("// .extern .func NRT_incref(.param .b64 p);\n"));
  EXPECT_FALSE(references_nrt("/* .extern .func NRT_incref\n(.param .b64 p); */\n"));
  EXPECT_FALSE(references_nrt(".file 1 \".extern .func NRT_incref\"\n"));
  EXPECT_FALSE(references_nrt(".visible .func NRT_incref(.param .b64 p)\n{\n ret;\n}\n"));
  EXPECT_FALSE(references_nrt(".extern .func (.param .b32 r) make_and_sum(.param .b64 a);\n"
                              "call.uni NRT_incref, (p);\n"));
  EXPECT_FALSE(references_nrt(".extern .global .u64 NRT_incref;\n"));
}

TEST(NrtDetection, EveryNameIsFound) {
  for (std::string_view name : nrt::function_names()) {
    const std::string ptx = ".extern .func " + std::string(name) + "(.param .b64 p);";
    EXPECT_EQ(referenced_functions(ptx), Names{std::string(name)});
  }
}

TEST(NrtDetection, NumbaNrtUserPtx) {
  const std::string ptx = test::read_bytes(test::scenario_path("fixtures/numba/nrt_user_c_abi.ptx"));
  auto found = referenced_functions(ptx);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (Names{"NRT_MemInfo_alloc_aligned", "NRT_MemInfo_data_fast", "NRT_decref",
                          "NRT_incref"}));
}

TEST(NrtDetection, NumbaShimCallerPtxHidesItsNrtUse) {
  const std::string ptx =
      test::read_bytes(test::scenario_path("fixtures/numba/shim_caller_kernel.ptx"));
  EXPECT_TRUE(referenced_functions(ptx).empty());
}

// The policy, exhaustively: 2 (global) x 3 (override) x 2 (own PTX) x 2 (flagged input).
TEST(NrtPolicy, TruthTable) {
  for (bool global : {false, true}) {
    for (std::optional<bool> override_value : {std::optional<bool>{}, std::optional<bool>{false},
                                               std::optional<bool>{true}}) {
      for (bool own : {false, true}) {
        for (bool flagged : {false, true}) {
          const bool on = override_value.value_or(global);
          const nrt::Decision decision = nrt::decide(global, override_value, own, flagged);
          SCOPED_TRACE(testing::Message() << "global " << global << " override "
                                          << (override_value ? int(*override_value) : -1)
                                          << " own " << own << " flagged " << flagged);
          EXPECT_EQ(decision.link, on && (own || flagged));
          const nrt::Reason expected = !on    ? nrt::Reason::disabled
                                       : own  ? nrt::Reason::own_ptx
                                       : flagged ? nrt::Reason::flagged_input
                                                 : nrt::Reason::not_used;
          EXPECT_EQ(decision.reason, expected);
        }
      }
    }
  }
}

TEST(NrtPolicy, GlobalSwitch) {
  const bool before = nrt::enabled();
  nrt::set_enabled(true);
  EXPECT_TRUE(nrt::enabled());
  nrt::set_enabled(false);
  EXPECT_FALSE(nrt::enabled());
  nrt::set_enabled(before);
}

}  // namespace
}  // namespace cujit
