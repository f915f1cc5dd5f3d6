// The memo in front of the cache's tiers: recall() answers with the very object memorized;
// a KernelBuilder's pre-key names every input and setting of its build, so any change is a
// different entry, and a recall reaches no vendor library and no provider.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "cujit/kernel_builder.hpp"
#include "cujit/nrt.hpp"
#include "cujit/reduce.hpp"
#include "cujit/vendor_time.hpp"
#include "support/cache_helpers.hpp"
#include "support/fixtures.hpp"
#include "support/reduce_data.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

CacheConfig memory_config(std::uint64_t max_bytes = std::uint64_t{64} << 20) {
  CacheConfig config;
  config.mode = CacheMode::memory;
  config.max_memory_bytes = max_bytes;
  return config;
}

TEST(Memo, RecallsTheVeryObjectMemorized) {
  BuildCache cache(memory_config());
  const auto value = std::make_shared<const std::string>("decoded");
  cache.memorize("pre-key", value, value->size());
  const std::shared_ptr<const std::string> recalled = cache.recall<std::string>("pre-key");
  EXPECT_EQ(recalled.get(), value.get());
  EXPECT_EQ(cache.recall<std::string>("another pre-key"), nullptr);
  EXPECT_EQ(cache.stats().memo_hits, 1u);
  EXPECT_EQ(cache.stats().memo_entries, 1u);
}

TEST(Memo, AnEntryOfAnotherTypeIsNotRecalled) {
  BuildCache cache(memory_config());
  cache.memorize("pre-key", std::make_shared<const int>(7), sizeof(int));
  EXPECT_EQ(cache.recall<long>("pre-key"), nullptr);
  ASSERT_NE(cache.recall<int>("pre-key"), nullptr);
}

TEST(Memo, ModeOffMemorizesNothing) {
  CacheConfig off = memory_config();
  off.mode = CacheMode::off;
  BuildCache cache(off);
  cache.memorize("pre-key", std::make_shared<const int>(7), sizeof(int));
  EXPECT_EQ(cache.recall<int>("pre-key"), nullptr);
  EXPECT_EQ(cache.stats().memo_entries, 0u);
}

TEST(Memo, ClearEmptiesIt) {
  BuildCache cache(memory_config());
  cache.memorize("pre-key", std::make_shared<const int>(7), sizeof(int));
  cache.clear();
  EXPECT_EQ(cache.recall<int>("pre-key"), nullptr);
  EXPECT_EQ(cache.stats().memo_bytes, 0u);
}

TEST(Memo, BoundedInBytesLeastRecentlyUsedFirst) {
  BuildCache cache(memory_config(100));
  cache.memorize("a", std::make_shared<const int>(1), 40);
  cache.memorize("b", std::make_shared<const int>(2), 40);
  ASSERT_NE(cache.recall<int>("a"), nullptr);  // b is now the least recently used
  cache.memorize("c", std::make_shared<const int>(3), 40);
  EXPECT_NE(cache.recall<int>("a"), nullptr);
  EXPECT_EQ(cache.recall<int>("b"), nullptr);
  EXPECT_NE(cache.recall<int>("c"), nullptr);
  EXPECT_LE(cache.stats().memo_bytes, 100u);
  cache.memorize("huge", std::make_shared<const int>(4), 101);
  EXPECT_EQ(cache.recall<int>("huge"), nullptr);
}

// ---- KernelBuilder ----------------------------------------------------------------------

const char* kernel_source = "extern \"C\" __global__ void k(int* p) { *p = VALUE; }\n";

KernelOptions with_value(int value) {
  KernelOptions options;
  options.link.arch = Arch::parse("sm_90");
  options.link.compile.options = {"-DVALUE=" + std::to_string(value)};
  return options;
}

std::shared_ptr<const LinkedKernel> link(BuildCache& cache, const KernelOptions& options,
                                         const std::vector<LinkableCode>& external = {}) {
  KernelBuilder builder("k", options, cache);
  builder.source(LinkableCode::cuda_source(kernel_source, "k.cu"));
  for (const LinkableCode& code : external) builder.link(code);
  return builder.link_shared();
}

TEST(KernelBuilderMemo, AnotherBuilderOfTheSameInputsGetsTheSameObject) {
  BuildCache cache(memory_config());
  const auto first = link(cache, with_value(1));
  const auto second = link(cache, with_value(1));
  EXPECT_EQ(second.get(), first.get());
  KernelBuilder builder("k", with_value(1), cache);
  builder.source(LinkableCode::cuda_source(kernel_source, "k.cu"));
  const LinkedKernel copy = builder.link_cubin();
  EXPECT_EQ(copy.source, CacheSource::memo);
  EXPECT_EQ(copy.link.code.bytes(), first->link.code.bytes());
}

TEST(KernelBuilderMemo, ARecallReachesNoVendorLibrary) {
  BuildCache cache(memory_config());
  KernelBuilder builder("k", with_value(1), cache);
  builder.source(LinkableCode::cuda_source(kernel_source, "k.cu"));
  (void)builder.link_shared();
  const VendorTime before = vendor_time();
  const std::uint64_t hits = cache.stats().memo_hits;
  (void)builder.link_shared();
  EXPECT_EQ(vendor_time() - before, VendorTime{});
  EXPECT_EQ(cache.stats().memo_hits, hits + 1);
}

TEST(KernelBuilderMemo, EveryInputAndSettingIsPartOfThePreKey) {
  BuildCache cache(memory_config());
  const auto base = link(cache, with_value(1));
  EXPECT_NE(link(cache, with_value(2)).get(), base.get()) << "an NVRTC option";
  KernelOptions lto = with_value(1);
  lto.link.lto = true;
  EXPECT_NE(link(cache, lto).get(), base.get()) << "LTO";
  KernelOptions nrt_forced = with_value(1);
  nrt_forced.nrt = true;
  EXPECT_NE(link(cache, nrt_forced).get(), base.get()) << "the per-kernel NRT override";
  const LinkableCode extra = LinkableCode::ptx(".version 8.0\n.target sm_90\n.address_size 64\n", "extra.ptx");
  const auto with_extra = link(cache, with_value(1), {extra});
  EXPECT_NE(with_extra.get(), base.get()) << "an external input";
  const LinkableCode renamed = LinkableCode::ptx(extra.bytes(), "renamed.ptx");
  EXPECT_NE(link(cache, with_value(1), {renamed}).get(), with_extra.get()) << "an input's name";
  const LinkableCode flagged = LinkableCode(extra).set_nrt(true);
  EXPECT_NE(link(cache, with_value(1), {flagged}).get(), with_extra.get()) << "an input's NRT flag";
  EXPECT_EQ(link(cache, with_value(1)).get(), base.get());
}

TEST(KernelBuilderMemo, TheNrtSwitchReadAtCallTimeIsPartOfThePreKey) {
  BuildCache cache(memory_config());
  const bool was = nrt::enabled();
  nrt::set_enabled(false);
  const auto off = link(cache, with_value(1));
  nrt::set_enabled(true);
  const auto on = link(cache, with_value(1));
  nrt::set_enabled(was);
  EXPECT_NE(on.get(), off.get());
}

// The memo names a build by its inputs' bytes, so it must never hold a build that read a
// file: after a header edit, a new builder gets what a fresh build makes. One case per way
// a compile reaches a file (issue 25): -I in the options, the include_paths field, -include,
// and a header next to a relative program name (the working directory).
TEST(KernelBuilderMemo, ABuildThatReadsAFileIsNeverMemorized) {
  test::TempDir dir;
  const std::string inc = dir.path().string();
  struct Way {
    const char* name;
    std::function<void(KernelOptions&)> configure;
    std::string source;
  };
  const std::string reads_val = "#include \"val.h\"\nextern \"C\" __device__ int helper() { return VAL; }\n";
  const std::string uses_val = "extern \"C\" __device__ int helper() { return VAL; }\n";
  const std::vector<Way> ways{
      {"-I option", [&](KernelOptions& o) { o.link.compile.options.push_back("-I" + inc); }, reads_val},
      {"include_paths", [&](KernelOptions& o) { o.link.compile.include_paths = {inc}; }, reads_val},
      {"-include", [&](KernelOptions& o) { o.link.compile.options.push_back("-include=" + inc + "/val.h"); }, uses_val},
      {"working directory", [&](KernelOptions&) {}, reads_val},
  };
  const fs::path before = fs::current_path();
  fs::current_path(dir.path());
  for (const Way& way : ways) {
    BuildCache cache(memory_config());
    KernelOptions options = with_value(1);
    options.link.lto = true;
    way.configure(options);
    const auto build = [&](BuildCache& in) {
      KernelBuilder builder("k", options, in);
      builder.source(LinkableCode::cuda_source(
          "extern \"C\" __device__ int helper();\nextern \"C\" __global__ void k(int* p) { *p = helper(); }\n", "k.cu"));
      builder.link(LinkableCode::cuda_source(way.source, "helper.cu"));
      return builder.link_cubin().link.code.bytes();
    };
    dir.write("val.h", "#define VAL 1\n");
    const std::string first = build(cache);
    dir.write("val.h", "#define VAL 2\n");
    const std::string after_edit = build(cache);
    EXPECT_EQ(after_edit, build(BuildCache::disabled())) << way.name << ": the memo served the old cubin";
    EXPECT_NE(after_edit, first) << way.name;
    EXPECT_EQ(cache.stats().memo_hits, 0u) << way.name;
  }
  fs::current_path(before);
}

TEST(KernelBuilderMemo, IncludeDirectoriesThatNothingReadsAreMemorized) {
  test::TempDir dir;
  BuildCache cache(memory_config());
  KernelOptions options = with_value(1);
  options.link.compile.include_paths = {dir.path().string()};
  const auto first = link(cache, options);
  EXPECT_EQ(link(cache, options).get(), first.get());
}

class CountingProvider : public LinkProvider {
 public:
  std::string name() const override { return "counting"; }
  std::vector<LinkableCode> code_for(const Signature&) override {
    ++asked;
    return {LinkableCode::cuda_source("extern \"C\" __device__ int helper(int x) { return x + 1; }\n", "helper.cu")};
  }
  int asked = 0;
};

std::shared_ptr<const LinkedKernel> link_calling_helper(BuildCache& cache, std::shared_ptr<LinkProvider> provider) {
  KernelOptions options = with_value(1);
  KernelBuilder builder("k", options, cache);
  DeclaredFunction helper;
  helper.name = "helper";
  helper.abi = abi::Abi::c;
  helper.signatures = {Signature::parse("int32(int32)")};
  helper.provider = std::move(provider);
  builder.declare(helper);
  builder.source(LinkableCode::cuda_source(
      "extern \"C\" __device__ int helper(int);\n"
      "extern \"C\" __global__ void k(int* p) { *p = helper(*p); }\n", "k.cu"));
  return builder.link_shared();
}

TEST(KernelBuilderMemo, ProvidersAreNamedByIdentityAndNotAskedOnARecall) {
  BuildCache cache(memory_config());
  const auto provider = std::make_shared<CountingProvider>();
  const auto first = link_calling_helper(cache, provider);
  EXPECT_EQ(link_calling_helper(cache, provider).get(), first.get());
  EXPECT_EQ(provider->asked, 1);
  // Another provider object of the same name may supply other code: not recalled.
  const auto other = std::make_shared<CountingProvider>();
  EXPECT_NE(link_calling_helper(cache, other).get(), first.get());
  EXPECT_EQ(other->asked, 1);
}

TEST(KernelBuilderMemo, AFailedLinkIsNotMemorized) {
  BuildCache cache(memory_config());
  KernelBuilder builder("k", with_value(1), cache);
  builder.source(LinkableCode::cuda_source(
      "extern \"C\" __device__ int missing(int);\n"
      "extern \"C\" __global__ void k(int* p) { *p = missing(*p); }\n", "k.cu"));
  EXPECT_THROW((void)builder.link_shared(), Error);
  EXPECT_EQ(cache.stats().memo_entries, 0u);
  EXPECT_THROW((void)builder.link_shared(), Error);
}

// ---- reduce::build_reduce ---------------------------------------------------------------

reduce::ReduceSpec reduce_spec(const std::string& type,
                               reduce::Operator op = reduce::Operator::builtin(reduce::Builtin::sum)) {
  reduce::ReduceSpec spec;
  spec.input = spec.output = spec.accumulator = Type::parse(type);
  spec.op = std::move(op);
  spec.arch = Arch::parse("sm_90");
  return spec;
}

TEST(ReduceMemo, TheSameSpecGetsTheSameObject) {
  BuildCache cache(memory_config());
  const auto first = reduce::build_reduce_shared(reduce_spec("int32"), cache);
  EXPECT_EQ(reduce::build_reduce_shared(reduce_spec("int32"), cache).get(), first.get());
  const reduce::ReduceBuild copy = reduce::build_reduce(reduce_spec("int32"), cache);
  EXPECT_EQ(copy.source, CacheSource::memo);
  EXPECT_EQ(copy.code.bytes(), first->code.bytes());
}

TEST(ReduceMemo, EveryFieldOfTheSpecIsPartOfThePreKey) {
  BuildCache cache(memory_config());
  const auto base = reduce::build_reduce_shared(reduce_spec("int32"), cache);
  EXPECT_NE(reduce::build_reduce_shared(reduce_spec("int64"), cache).get(), base.get()) << "the types";
  EXPECT_NE(reduce::build_reduce_shared(reduce_spec("int32", reduce::Operator::builtin(reduce::Builtin::max)), cache).get(),
            base.get()) << "the operator";
  reduce::ReduceSpec other_arch = reduce_spec("int32");
  other_arch.arch = Arch::parse("sm_90a");
  EXPECT_NE(reduce::build_reduce_shared(other_arch, cache).get(), base.get()) << "the architecture";
  reduce::ReduceSpec option = reduce_spec("int32");
  option.config.nvrtc_options = {"-DUNUSED=1"};
  EXPECT_NE(reduce::build_reduce_shared(option, cache).get(), base.get()) << "an NVRTC option";
  abi::DeviceFunction max = test::max_i32_device_function();
  const auto with_max = reduce::build_reduce_shared(reduce_spec("int32", reduce::Operator::device_function(max)), cache);
  max.body = "return b < a ? a : b;";
  EXPECT_NE(reduce::build_reduce_shared(reduce_spec("int32", reduce::Operator::device_function(max)), cache).get(),
            with_max.get()) << "a device function's body";
}

TEST(ReduceMemo, SpecsThatReadFilesAreNotMemorized) {
  test::TempDir dir;
  BuildCache cache(memory_config());
  reduce::ReduceSpec with_dirs = reduce_spec("int32");
  with_dirs.config.include_dirs = {dir.path().string()};
  (void)reduce::build_reduce_shared(with_dirs, cache);
  const reduce::ReduceSpec source_op = reduce_spec(
      "int32", reduce::Operator::cuda_source("extern \"C\" __device__ int add_i32(int a, int b) { return a + b; }\n",
                                             "add_i32"));
  (void)reduce::build_reduce_shared(source_op, cache);
  reduce::ReduceSpec pre_included = reduce_spec("int32");
  pre_included.config.nvrtc_options = {"-include=" + (dir.path() / "extra.h").string()};
  dir.write("extra.h", "\n");
  (void)reduce::build_reduce_shared(pre_included, cache);
  EXPECT_EQ(cache.stats().memo_entries, 0u);
  EXPECT_EQ(reduce::build_reduce(with_dirs, cache).source, CacheSource::memory);
}

}  // namespace
}  // namespace cujit
