// Run by the provider-memory suite as a new process: one KernelBuilder build whose declared
// function has a provider with a declared version, through a disk cache. Prints how many
// times the provider was called, so the suite sees whether another process's answer was
// remembered.
//
//   provider_memory_child CACHE_DIR VERSION   prints "provider calls: N"
#include <cstdio>
#include <string>

#include "cujit/abi.hpp"
#include "cujit/error.hpp"
#include "cujit/kernel_builder.hpp"
#include "support/child_cache_config.hpp"

namespace {

// Gives `twice` (C ABI) as PTX and counts its calls; named "twice-provider", versioned.
class VersionedProvider : public cujit::LinkProvider {
 public:
  explicit VersionedProvider(std::string version) : version_(std::move(version)) {}
  std::string name() const override { return "twice-provider"; }
  std::optional<std::string> version() const override { return version_; }
  std::vector<cujit::LinkableCode> code_for(const cujit::Signature& signature) override {
    ++calls;
    cujit::abi::DeviceFunction fn;
    fn.name = "twice";
    fn.signature = signature;
    fn.param_names = {"x"};
    fn.body = "return x + x;";
    cujit::abi::CompileOptions options;
    options.abi = cujit::abi::Abi::c;
    options.output = cujit::CompileTarget::ptx;
    return {cujit::abi::compile(fn, options).code};
  }
  int calls = 0;

 private:
  std::string version_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: provider_memory_child CACHE_DIR VERSION\n");
    return 2;
  }
  try {
    cujit::BuildCache cache(cujit::test::child_cache_config(argv[1]));
    auto provider = std::make_shared<VersionedProvider>(argv[2]);
    cujit::DeclaredFunction twice;
    twice.name = "twice";
    twice.abi = cujit::abi::Abi::c;
    twice.signatures = {cujit::Signature::parse("int32(int32)")};
    twice.provider = provider;
    cujit::KernelOptions options;
    options.link.arch = cujit::Arch::parse("sm_90");
    cujit::KernelBuilder builder("twice_caller", options, cache);
    builder.declare(twice);
    builder.source(cujit::LinkableCode::cuda_source(
        "#include \"cujit/declarations.cuh\"\n"
        "extern \"C\" __global__ void twice_caller(int* out, int y) { out[0] = twice(y); }\n",
        "twice_caller.cu"));
    (void)builder.link_cubin();
    std::printf("provider calls: %d\n", provider->calls);
    return 0;
  } catch (const cujit::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
