// Provider answers remembered across builds (issue 18): per provider object in a process,
// and, for a provider that declares a version, by (name, version, signature) across
// provider objects and processes through the cache's tiers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cujit/abi.hpp"
#include "cujit/kernel_builder.hpp"
#include "support/cache_helpers.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

// Gives `twice` (C ABI) as PTX, counting its calls; a version when given one.
class CountingProvider : public LinkProvider {
 public:
  explicit CountingProvider(std::optional<std::string> version = std::nullopt) : version_(std::move(version)) {}
  std::string name() const override { return "counting-twice"; }
  std::optional<std::string> version() const override { return version_; }
  std::vector<LinkableCode> code_for(const Signature& signature) override {
    ++calls;
    if (fail) throw Error(ErrorKind::link, "CountingProvider", "asked to fail");
    abi::DeviceFunction fn;
    fn.name = "twice";
    fn.signature = signature;
    fn.param_names = {"x"};
    fn.body = "return x + x;";
    abi::CompileOptions options;
    options.abi = abi::Abi::c;
    options.output = CompileTarget::ptx;
    return {abi::compile(fn, options).code.set_nrt(false)};
  }
  int calls = 0;
  bool fail = false;

 private:
  std::optional<std::string> version_;
};

constexpr const char* caller_source =
    "#include \"cujit/declarations.cuh\"\n"
    "extern \"C\" __global__ void twice_caller(int* out, int y) { out[0] = twice(y); }\n";

// One build. A different kernel option per `round` keeps the builder's memo from answering,
// so each build resolves its declared functions (and would ask the provider) again.
LinkedKernel build(const std::shared_ptr<LinkProvider>& provider, BuildCache& cache, int round) {
  DeclaredFunction twice;
  twice.name = "twice";
  twice.abi = abi::Abi::c;
  twice.signatures = {Signature::parse("int32(int32)")};
  twice.provider = provider;
  KernelOptions options;
  options.link.arch = Arch::parse("sm_90");
  options.link.compile.options = {"-DROUND=" + std::to_string(round)};
  KernelBuilder builder("twice_caller", options, cache);
  builder.declare(twice);
  builder.source(LinkableCode::cuda_source(caller_source, "twice_caller.cu"));
  return builder.link_cubin();
}

TEST(ProviderMemory, ThreeBuildsAskTheSameProviderOnce) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path()));
  auto provider = std::make_shared<CountingProvider>();
  std::vector<std::size_t> requests;
  for (int round = 0; round < 3; ++round) requests.push_back(build(provider, cache, round).provider_requests);
  EXPECT_EQ(provider->calls, 1);
  EXPECT_EQ(requests, (std::vector<std::size_t>{1, 0, 0}));
}

TEST(ProviderMemory, IdenticalBuildsAskOnceMemoHitsIncluded) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path()));
  auto provider = std::make_shared<CountingProvider>();
  for (int i = 0; i < 3; ++i) (void)build(provider, cache, 0);
  EXPECT_EQ(provider->calls, 1);
}

TEST(ProviderMemory, UnversionedProvidersAreRememberedPerObject) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path()));
  auto first = std::make_shared<CountingProvider>();
  auto second = std::make_shared<CountingProvider>();
  (void)build(first, cache, 0);
  (void)build(second, cache, 1);
  // Another object may give other code: without a version nothing says it does not.
  EXPECT_EQ(first->calls, 1);
  EXPECT_EQ(second->calls, 1);
}

TEST(ProviderMemory, VersionedProvidersAreRememberedAcrossObjects) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path()));
  auto first = std::make_shared<CountingProvider>("1");
  auto second = std::make_shared<CountingProvider>("1");
  auto newer = std::make_shared<CountingProvider>("2");
  (void)build(first, cache, 0);
  const LinkedKernel again = build(second, cache, 1);
  (void)build(newer, cache, 2);
  EXPECT_EQ(first->calls, 1);
  EXPECT_EQ(second->calls, 0);
  EXPECT_EQ(again.provider_requests, 0u);
  EXPECT_EQ(newer->calls, 1) << "a new version is asked";
}

TEST(ProviderMemory, RememberedCodeIsWhatTheProviderGave) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path()));
  CountingProvider provider("1");
  const Signature signature = Signature::parse("int32(int32)");
  bool asked = false;
  const auto given = remembered_code_for(provider, signature, cache, &asked);
  EXPECT_TRUE(asked);
  // A second cache over the same directory: the answer comes from the disk tier, decoded.
  BuildCache other(test::disk_cache_at(dir.path()));
  CountingProvider same("1");
  const auto recalled = remembered_code_for(same, signature, other, &asked);
  EXPECT_FALSE(asked);
  EXPECT_EQ(same.calls, 0);
  ASSERT_EQ(recalled->size(), given->size());
  for (std::size_t i = 0; i < given->size(); ++i) {
    EXPECT_EQ((*recalled)[i].format(), (*given)[i].format());
    EXPECT_EQ((*recalled)[i].name(), (*given)[i].name());
    EXPECT_EQ((*recalled)[i].bytes(), (*given)[i].bytes());
    EXPECT_EQ((*recalled)[i].nrt(), (*given)[i].nrt());
  }
}

TEST(ProviderMemory, AFailingProviderIsAskedAgainAndNamedInTheError) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path()));
  auto provider = std::make_shared<CountingProvider>("1");
  provider->fail = true;
  CUJIT_EXPECT_ERROR((void)build(provider, cache, 0), ErrorKind::link, error, {
    EXPECT_NE(error.component().find("counting-twice"), std::string::npos) << error.what();
  });
  provider->fail = false;
  (void)build(provider, cache, 1);
  EXPECT_EQ(provider->calls, 2) << "a failure is not remembered";
}

TEST(ProviderMemory, AVersionedAnswerIsRememberedAcrossProcesses) {
  test::TempDir dir;
  const auto run = [&](const std::string& version) {
    return test::run_child({CUJIT_PROVIDER_MEMORY_CHILD, dir.path().string(), version});
  };
  const test::ChildResult first = run("7");
  const test::ChildResult second = run("7");
  const test::ChildResult bumped = run("8");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(second.exit_code, 0) << second.output;
  ASSERT_EQ(bumped.exit_code, 0) << bumped.output;
  EXPECT_NE(first.output.find("provider calls: 1"), std::string::npos) << first.output;
  EXPECT_NE(second.output.find("provider calls: 0"), std::string::npos) << second.output;
  EXPECT_NE(bumped.output.find("provider calls: 1"), std::string::npos) << bumped.output;
}

}  // namespace
}  // namespace cujit
