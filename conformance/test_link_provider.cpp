// Link providers: asked with the signatures used, once per (provider, signature) in a
// build, their code deduplicated, resolved transitively, errors naming provider and
// signature; on a GPU the example provider's kernels compute the right values.
#include <gtest/gtest.h>

#include <mutex>
#include <numeric>

#include "cujit/kernel_builder.hpp"
#include "providers/block_reduce_provider.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

using test::scenario_path;

LinkableCode provider_fixture(const std::string& name) {
  return LinkableCode::from_path(scenario_path("fixtures/providers/" + name));
}

// A provider that records what it is asked and returns `twice` (numba ABI) as PTX.
class RecordingProvider : public LinkProvider {
 public:
  explicit RecordingProvider(std::string function = "twice") : function_(std::move(function)) {}
  std::string name() const override { return "recording<" + function_ + ">"; }
  std::vector<LinkableCode> code_for(const Signature& signature) override {
    asked.push_back(signature.str());
    abi::DeviceFunction fn;
    fn.name = function_;
    fn.signature = signature;
    fn.param_names = {"x"};
    fn.body = "return x + x;";
    abi::CompileOptions options;
    options.abi = abi::Abi::numba;
    options.output = CompileTarget::ptx;
    std::vector<LinkableCode> out{abi::compile(fn, options).code};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }
  std::vector<std::string> asked;
  std::vector<LinkableCode> extra;

 private:
  std::string function_;
};

DeclaredFunction declared(const std::string& name, std::vector<std::string> signatures,
                          std::shared_ptr<LinkProvider> provider) {
  DeclaredFunction function;
  function.name = name;
  for (const std::string& s : signatures) function.signatures.push_back(Signature::parse(s));
  function.provider = std::move(provider);
  return function;
}

KernelBuilder twice_kernel(const std::shared_ptr<RecordingProvider>& provider,
                           KernelOptions options = {}) {
  KernelBuilder builder("twice_caller", options);
  builder.declare(declared("twice", {"float32(float32)", "int32(int32)", "float64(float64)"},
                           provider));
  builder.source(provider_fixture("twice_caller.cu"));
  return builder;
}

TEST(LinkProviders, AskedOnlyForTheSignaturesUsed) {
  auto provider = std::make_shared<RecordingProvider>();
  const LinkedKernel linked = twice_kernel(provider).link_cubin();
  std::vector<std::string> asked = provider->asked;
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<std::string>{"float32(float32)", "int32(int32)"}));
  EXPECT_EQ(linked.provider_requests, 2u);
  ASSERT_EQ(linked.resolved.size(), 2u);
  for (const ResolvedCall& call : linked.resolved) {
    EXPECT_EQ(call.function, "twice");
    EXPECT_EQ(call.provider, "recording<twice>");
  }
  EXPECT_EQ(detect_format(linked.link.code.bytes()), Format::cubin);
}

TEST(LinkProviders, OneRequestPerProviderAndSignatureInABuild) {
  auto provider = std::make_shared<RecordingProvider>();
  KernelBuilder builder = twice_kernel(provider);
  // The same references again, from an external item: no new request.
  builder.link(LinkableCode::from_path(scenario_path("fixtures/providers/twice_caller.cu")));
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_EQ(provider->asked.size(), 2u);
  EXPECT_EQ(linked.provider_requests, 2u);
  // Resolving again (for the NRT decision) is answered from what the build remembered
  // (test_link_provider_memory.cpp).
  (void)builder.nrt_decision();
  EXPECT_EQ(provider->asked.size(), 2u);
}

TEST(LinkProviders, IdenticalCodeIsLinkedOnce) {
  // Both signatures' code carries the same LTO-IR helper; linking it twice is the
  // "multiple definition" failure users reported.
  abi::DeviceFunction helper;
  helper.name = "shared_helper";
  helper.signature = Signature::parse("int32(int32)");
  helper.body = "return arg0;";
  abi::CompileOptions options;
  options.abi = abi::Abi::c;
  options.output = CompileTarget::ltoir;
  auto provider = std::make_shared<RecordingProvider>();
  provider->extra = {abi::compile(helper, options).code};
  KernelOptions kernel_options;
  kernel_options.link.lto = true;
  const LinkedKernel linked = twice_kernel(provider, kernel_options).link_cubin();
  EXPECT_EQ(provider->asked.size(), 2u);
  EXPECT_EQ(detect_format(linked.link.code.bytes()), Format::cubin);
}

TEST(LinkProviders, ProviderCodeCallingDeclaredFunctionsResolvesToAFixedPoint) {
  auto inner = std::make_shared<RecordingProvider>("inner");
  class OuterProvider : public LinkProvider {
   public:
    std::string name() const override { return "outer-provider"; }
    std::vector<LinkableCode> code_for(const Signature&) override {
      ++requests;
      return {provider_fixture("outer_calls_inner.cu")};
    }
    int requests = 0;
  };
  auto outer = std::make_shared<OuterProvider>();
  KernelBuilder builder("outer_caller");
  DeclaredFunction outer_fn = declared("outer", {"int32(int32)"}, outer);
  outer_fn.abi = abi::Abi::c;
  builder.declare(outer_fn);
  builder.declare(declared("inner", {"int32(int32)"}, inner));
  builder.source(provider_fixture("outer_caller.cu"));
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_EQ(outer->requests, 1);
  EXPECT_EQ(inner->asked, std::vector<std::string>{"int32(int32)"});
  EXPECT_EQ(linked.resolved.size(), 2u);
}

TEST(LinkProviders, LtoIrReferencesAreResolvedFromTheLinkReport) {
  // LTO-IR is compressed, so what it calls cannot be scanned: the builder links, reads the
  // unresolved symbols nvJitLink reports, resolves the declared ones and links again.
  auto inner = std::make_shared<RecordingProvider>("inner");
  const DeclaredFunction inner_fn = declared("inner", {"int32(int32)"}, inner);
  class OuterLtoProvider : public LinkProvider {
   public:
    explicit OuterLtoProvider(std::string declarations) : declarations_(std::move(declarations)) {}
    std::string name() const override { return "outer-lto-provider"; }
    std::vector<LinkableCode> code_for(const Signature&) override {
      CompileOptions options;
      options.target = CompileTarget::ltoir;
      options.headers = {{"cujit/declarations.cuh", declarations_}};
      return {Program(test::read_bytes(test::scenario_path("fixtures/providers/outer_calls_inner.cu")),
                      "outer_calls_inner.cu")
                  .compile(options)
                  .code};
    }

   private:
    std::string declarations_;
  };
  KernelOptions options;
  options.link.lto = true;
  KernelBuilder builder("outer_caller", options);
  DeclaredFunction outer_fn = declared(
      "outer", {"int32(int32)"},
      std::make_shared<OuterLtoProvider>(declarations_header(std::vector<DeclaredFunction>{inner_fn})));
  outer_fn.abi = abi::Abi::c;
  builder.declare(outer_fn);
  builder.declare(inner_fn);
  builder.source(provider_fixture("outer_caller.cu"));
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_EQ(inner->asked, std::vector<std::string>{"int32(int32)"});
  EXPECT_EQ(linked.resolved.size(), 2u);
  EXPECT_EQ(detect_format(linked.link.code.bytes()), Format::cubin);
}

TEST(LinkProviders, ProviderNrtItemsFeedThePolicy) {
  class ShimProvider : public LinkProvider {
   public:
    std::string name() const override { return "cudf-shim"; }
    std::vector<LinkableCode> code_for(const Signature&) override {
      return {LinkableCode::from_path(scenario_path("fixtures/nrt/cudf_udf_shim.cu")).set_nrt(true)};
    }
  };
  const bool before = nrt::enabled();
  nrt::set_enabled(true);
  KernelBuilder builder("cudf_udf_kernel");
  DeclaredFunction shim = declared("string_udf_shim", {"int32(int32)"},
                                   std::make_shared<ShimProvider>());
  shim.abi = abi::Abi::c;
  builder.declare(shim);
  builder.source(LinkableCode::from_path(scenario_path("fixtures/nrt/cudf_udf_kernel.cu")));
  const LinkedKernel linked = builder.link_cubin();
  nrt::set_enabled(before);
  EXPECT_TRUE(linked.nrt.link);
  EXPECT_EQ(linked.nrt.reason, nrt::Reason::flagged_input);
}

TEST(LinkProviders, AThrowingProviderIsNamedWithTheSignature) {
  class Failing : public LinkProvider {
   public:
    std::string name() const override { return "failing-provider"; }
    std::vector<LinkableCode> code_for(const Signature&) override {
      throw std::runtime_error("no code for you");
    }
  };
  KernelBuilder builder("twice_caller");
  builder.declare(declared("twice", {"float32(float32)", "int32(int32)"}, std::make_shared<Failing>()));
  builder.source(provider_fixture("twice_caller.cu"));
  CUJIT_EXPECT_ERROR((void)builder.link_cubin(), ErrorKind::link, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("failing-provider"), std::string::npos) << what;
                     EXPECT_NE(what.find("(float32)"), std::string::npos) << what;
                     EXPECT_NE(what.find("no code for you"), std::string::npos) << what;);
}

TEST(LinkProviders, AProviderErrorKeepsItsKind) {
  auto provider = scenarios::BlockReduceProvider::make(128, Arch(9, 0));
  KernelBuilder builder("bool_sum");
  builder.declare(provider->declaration({"bool"}));
  builder.source(LinkableCode::cuda_source(
      "#include \"cujit/declarations.cuh\"\n"
      "extern \"C\" __global__ void bool_sum(bool* out) { out[0] = block_sum(out[0]); }\n",
      "bool_sum.cu"));
  CUJIT_EXPECT_ERROR((void)builder.link_cubin(), ErrorKind::unsupported, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("block_reduce<128>"), std::string::npos) << what;
                     EXPECT_NE(what.find("bool(bool)"), std::string::npos) << what;);
}

TEST(LinkProviders, UnsupportedSignatureFromTheExampleProvider) {
  auto provider = scenarios::BlockReduceProvider::make(128, Arch(9, 0));
  CUJIT_EXPECT_ERROR((void)provider->code_for(Signature::parse("bool(bool)")),
                     ErrorKind::unsupported, error,
                     EXPECT_NE(std::string(error.what()).find("block_reduce<128>"),
                               std::string::npos););
}

TEST(DeclaredFunctions, ValidationErrors) {
  KernelBuilder builder("k");
  DeclaredFunction c_overloads = declared("f", {"int32(int32)", "float32(float32)"}, nullptr);
  c_overloads.abi = abi::Abi::c;
  CUJIT_EXPECT_ERROR(builder.declare(c_overloads), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("C ABI"), std::string::npos););
  builder.declare(declared("g", {"int32(int32)"}, nullptr));
  CUJIT_EXPECT_ERROR(builder.declare(declared("g", {"int32(int32)"}, nullptr)), ErrorKind::usage,
                     error, EXPECT_NE(std::string(error.what()).find("already declared"),
                                      std::string::npos););
  CUJIT_EXPECT_ERROR(builder.declare(declared("g", {}, nullptr)), ErrorKind::usage, error,
                     (void)error;);
}

// ---- GPU: the example provider ---------------------------------------------------------

struct ProviderRoute {
  LinkerBackend backend;
  const char* output;  // what the provider generates
};

void PrintTo(const ProviderRoute& route, std::ostream* out) {
  *out << to_string(route.backend) << " " << route.output;
}

class GpuLinkProviders : public ::testing::TestWithParam<ProviderRoute> {
 protected:
  void SetUp() override { CUJIT_REQUIRE_DEVICE(); }
};

TEST_P(GpuLinkProviders, BlockSumForTwoTypesWithAnExplicitItem) {
  constexpr unsigned block = 128, blocks = 4;
  const ProviderRoute route = GetParam();
  auto provider = scenarios::BlockReduceProvider::make(block, Arch(9, 0), parse_compile_target(route.output).value());
  KernelOptions options;
  options.link.backend = route.backend;
  options.link.lto = std::string(route.output) == "ltoir";
  KernelBuilder builder("block_sums", options);
  builder.declare(provider->declaration({"float32", "int32"}));
  // `offset`: a C-ABI function whose code is an explicit link item, not a provider's.
  abi::DeviceFunction offset;
  offset.name = "offset";
  offset.signature = Signature::parse("int32(int32)");
  offset.body = "return arg0 + 1000;";
  abi::CompileOptions offset_options;
  offset_options.abi = abi::Abi::c;
  offset_options.output = CompileTarget::ptx;
  DeclaredFunction offset_decl;
  offset_decl.name = "offset";
  offset_decl.abi = abi::Abi::c;
  offset_decl.signatures = {offset.signature};
  offset_decl.link = {abi::compile(offset, offset_options).code};
  builder.declare(offset_decl);
  builder.source(provider_fixture("block_sums.cu"));
  const BuiltKernel built = builder.build();
  EXPECT_EQ(provider->compilations(), 2u);

  std::vector<float> xf(block * blocks);
  std::vector<int> xi(block * blocks);
  for (std::size_t i = 0; i < xf.size(); ++i) {
    xf[i] = 0.5f * static_cast<float>(i % 17);
    xi[i] = static_cast<int>(i * 7 % 23) - 11;
  }
  DeviceBuffer dxf(xf.size() * sizeof(float)), dxi(xi.size() * sizeof(int));
  dxf.copy_from_host(xf.data(), xf.size() * sizeof(float));
  dxi.copy_from_host(xi.data(), xi.size() * sizeof(int));
  DeviceBuffer of(blocks * sizeof(float)), oi(blocks * sizeof(int));
  of.fill_bytes(0xCD);
  oi.fill_bytes(0xCD);
  LaunchConfig config;
  config.grid.x = blocks;
  config.block.x = block;
  built.kernel(config, dxf.ptr(), dxi.ptr(), of.ptr(), oi.ptr());
  const auto got_f = of.to_vector<float>(blocks);
  const auto got_i = oi.to_vector<int>(blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    float want_f = 0;
    int want_i = 0;
    for (unsigned t = 0; t < block; ++t) {
      want_f += xf[b * block + t];
      want_i += xi[b * block + t] + 1000;
    }
    EXPECT_FLOAT_EQ(got_f[b], want_f) << "block " << b;  // small exact halves: no rounding
    EXPECT_EQ(got_i[b], want_i) << "block " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Routes, GpuLinkProviders,
                         ::testing::Values(ProviderRoute{LinkerBackend::nvjitlink, "ltoir"},
                                           ProviderRoute{LinkerBackend::nvjitlink, "ptx"},
                                           ProviderRoute{LinkerBackend::driver, "ptx"}),
                         [](const auto& route) {
                           return std::string(to_string(route.param.backend)) + "_" +
                                  route.param.output;
                         });

TEST(GpuLinkProvidersTransitive, OuterAndInnerRun) {
  CUJIT_REQUIRE_DEVICE();
  auto inner = std::make_shared<RecordingProvider>("inner");
  class OuterProvider : public LinkProvider {
   public:
    std::string name() const override { return "outer-provider"; }
    std::vector<LinkableCode> code_for(const Signature&) override {
      return {provider_fixture("outer_calls_inner.cu")};
    }
  };
  KernelBuilder builder("outer_caller");
  DeclaredFunction outer_fn = declared("outer", {"int32(int32)"}, std::make_shared<OuterProvider>());
  outer_fn.abi = abi::Abi::c;
  builder.declare(outer_fn);
  builder.declare(declared("inner", {"int32(int32)"}, inner));
  builder.source(provider_fixture("outer_caller.cu"));
  const BuiltKernel built = builder.build();
  DeviceBuffer out(sizeof(int));
  out.fill_bytes(0xCD);
  built.kernel(LaunchConfig{}, out.ptr(), 21);
  EXPECT_EQ(out.to_vector<int>(1)[0], 43);  // inner doubles, outer adds one
}

}  // namespace
}  // namespace cujit
