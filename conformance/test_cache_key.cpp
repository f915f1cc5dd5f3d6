// Cache keys: every field that changes the code changes the key; nothing else does.
#include <gtest/gtest.h>

#include "cujit/cache_key.hpp"
#include "cujit/reduce.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

using reduce::ReduceSpec;

TEST(CacheKey, LabelledLengthPrefixedFieldsDoNotRunTogether) {
  EXPECT_NE(CacheKey("k").add("ab", "c").digest(), CacheKey("k").add("a", "bc").digest());
  EXPECT_NE(CacheKey("k").add("a", "1").add("b", "2").digest(),
            CacheKey("k").add("b", "2").add("a", "1").digest());
  EXPECT_NE(CacheKey("reduce").digest(), CacheKey("nrt-library").digest());
  EXPECT_EQ(CacheKey("k").add("a", "1").digest(), CacheKey("k").add("a", "1").digest());
  EXPECT_EQ(CacheKey("k").digest().size(), 64u);
}

TEST(CacheKey, CarriesSchemaAndToolVersions) {
  const std::string text = CacheKey("k").description();
  for (const char* field : {"key-schema=", "cujit=", "nvrtc=", "nvjitlink="}) {
    EXPECT_NE(text.find(field), std::string::npos) << field << " in\n" << text;
  }
}

TEST(CanonicalOptions, SpellingAndOrderAreNormalised) {
  const auto a = canonical_options({"--gpu-architecture=sm_90", "-DX=1", "--relocatable-device-code=true",
                                    "-I/a", "-I/b", "-default-device"});
  const auto b = canonical_options({"-default-device", "-D", "X=1", "-rdc=true", "-arch", "sm_90",
                                    "--include-path=/a", "-I", "/b", "-pch", "--pch-dir=/tmp"});
  EXPECT_EQ(a, b);
  // Include order changes what is found first: it is kept.
  EXPECT_NE(canonical_options({"-I/a", "-I/b"}), canonical_options({"-I/b", "-I/a"}));
  EXPECT_EQ(canonical_options({"-rdc"}), std::vector<std::string>{"-rdc=true"});
}

ReduceSpec base_spec() {
  ReduceSpec spec;
  spec.arch = Arch::parse("sm_90");
  return spec;
}

TEST(ReduceKey, EveryFieldThatChangesTheCodeChangesTheKey) {
  const std::string base = reduce::reduce_key(base_spec()).digest();
  std::vector<std::pair<std::string, ReduceSpec>> variants;
  auto variant = [&](const std::string& what, auto change) {
    ReduceSpec spec = base_spec();
    change(spec);
    variants.emplace_back(what, spec);
  };
  variant("input type", [](ReduceSpec& s) { s.input = Type::parse("int64"); });
  variant("output type", [](ReduceSpec& s) { s.output = Type::parse("uint32"); });
  variant("accumulator type", [](ReduceSpec& s) { s.accumulator = Type::parse("float64"); });
  variant("builtin operator", [](ReduceSpec& s) { s.op = reduce::Operator::builtin(reduce::Builtin::max); });
  variant("arch", [](ReduceSpec& s) { s.arch = Arch::parse("sm_80"); });
  variant("arch suffix", [](ReduceSpec& s) { s.arch = Arch::parse("sm_90a"); });
  variant("nvrtc option", [](ReduceSpec& s) { s.config.nvrtc_options = {"-use_fast_math"}; });
  variant("include dir", [](ReduceSpec& s) { s.config.include_dirs = {"/opt/extra"}; });
  variant("operator source", [](ReduceSpec& s) {
    s.op = reduce::Operator::cuda_source(
        "extern \"C\" __device__ int op(int a, int b) { return a + b; }", "op");
  });
  variant("operator bytes", [](ReduceSpec& s) {
    s.op = reduce::Operator::cuda_source(
        "extern \"C\" __device__ int op(int a, int b) { return a - b; }", "op");
  });
  variant("operator name", [](ReduceSpec& s) {
    s.op = reduce::Operator::cuda_source(
        "extern \"C\" __device__ int op2(int a, int b) { return a + b; }", "op2");
  });
  std::vector<std::string> seen{base};
  for (const auto& [what, spec] : variants) {
    const std::string digest = reduce::reduce_key(spec).digest();
    EXPECT_EQ(std::find(seen.begin(), seen.end(), digest), seen.end()) << what << " did not change the key";
    seen.push_back(digest);
  }
}

TEST(ReduceKey, IrrelevantChangesDoNotChangeTheKey) {
  const std::string base = reduce::reduce_key(base_spec()).digest();
  ReduceSpec no_pch = base_spec();
  no_pch.config.precompiled_header = false;  // how NVRTC works, not what it makes
  EXPECT_EQ(reduce::reduce_key(no_pch).digest(), base);
  ReduceSpec reordered = base_spec();
  reordered.config.nvrtc_options = {"-DA=1", "-DB=2"};
  ReduceSpec reordered_back = base_spec();
  reordered_back.config.nvrtc_options = {"-DB=2", "--define-macro=A=1"};
  EXPECT_EQ(reduce::reduce_key(reordered).digest(), reduce::reduce_key(reordered_back).digest());
  // The key covers the CCCL headers and version.
  const std::string text = reduce::reduce_key(base_spec()).description();
  EXPECT_NE(text.find("cccl-version="), std::string::npos);
  EXPECT_NE(text.find("cccl-headers="), std::string::npos);
}

}  // namespace
}  // namespace cujit
