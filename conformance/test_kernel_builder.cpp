// KernelBuilder on its own: sources compiled through the one cached compile with the
// kernel's composed options, links through the one cached link, and what each build
// reports (providers and NRT are tested in test_link_provider.cpp and test_nrt*.cpp).
#include <gtest/gtest.h>

#include "cujit/kernel_builder.hpp"
#include "support/cache_helpers.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

const char* kernel_source = "extern \"C\" __global__ void k(int* p) { *p = VALUE; }\n";

KernelOptions sm90() {
  KernelOptions options;
  options.link.arch = Arch::parse("sm_90");
  return options;
}

TEST(KernelBuilder, WithoutASourceIsAUsageErrorNamingTheKernel) {
  KernelBuilder builder("lonely", sm90(), BuildCache::disabled());
  CUJIT_EXPECT_ERROR((void)builder.link_cubin(), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("'lonely'"), std::string::npos););
}

TEST(KernelBuilder, CompileOptionsReachTheKernelsOwnSource) {
  KernelOptions options = sm90();
  options.link.compile.options = {"-DVALUE=4242"};
  KernelBuilder builder("k", options, BuildCache::disabled());
  builder.source(LinkableCode::cuda_source(kernel_source, "k.cu"));
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_EQ(linked.link.code.format(), Format::cubin);
  EXPECT_EQ(linked.source, CacheSource::built);
}

TEST(KernelBuilder, ASecondBuildIsAHitOfTheSameCubin) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path()));
  KernelOptions options = sm90();
  options.link.compile.options = {"-DVALUE=7"};
  const auto build = [&] {
    KernelBuilder builder("k", options, cache);
    builder.source(LinkableCode::cuda_source(kernel_source, "k.cu"));
    return builder.link_cubin();
  };
  const LinkedKernel first = build();
  const LinkedKernel second = build();
  EXPECT_EQ(first.source, CacheSource::built);
  EXPECT_EQ(second.source, CacheSource::memo);
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(second.link.code.bytes(), first.link.code.bytes());
  options.link.compile.options = {"-DVALUE=8"};
  const LinkedKernel other = build();
  EXPECT_EQ(other.source, CacheSource::built);
  EXPECT_NE(other.key, first.key);
}

TEST(KernelBuilder, ASourceThatDoesNotCompileCarriesTheNvrtcLog) {
  KernelBuilder builder("k", sm90(), BuildCache::disabled());
  CUJIT_EXPECT_ERROR(builder.source(LinkableCode::cuda_source(kernel_source, "k.cu")), ErrorKind::compile, error,
                     EXPECT_NE(error.log().find("VALUE"), std::string::npos) << error.log();
                     EXPECT_NE(std::string(error.what()).find("k.cu"), std::string::npos););
}

}  // namespace
}  // namespace cujit
