#include "providers/block_reduce_provider.hpp"

#include "cujit/error.hpp"

namespace cujit::scenarios {

BlockReduceProvider::BlockReduceProvider(unsigned block_size, Arch arch, CompileTarget output)
    : block_size_(block_size), arch_(arch), output_(output) {
  if (block_size_ == 0 || block_size_ > 1024 || (block_size_ & (block_size_ - 1)) != 0) {
    throw Error(ErrorKind::usage, "BlockReduceProvider",
                "block size " + std::to_string(block_size_) +
                    " is not a power of two in [1, 1024]");
  }
}

std::shared_ptr<BlockReduceProvider> BlockReduceProvider::make(unsigned block_size, Arch arch,
                                                               CompileTarget output) {
  auto provider = std::make_shared<BlockReduceProvider>(block_size, arch, output);
  provider->self_ = provider;
  return provider;
}

std::string BlockReduceProvider::name() const {
  return "block_reduce<" + std::to_string(block_size_) + ">";
}

std::vector<LinkableCode> BlockReduceProvider::code_for(const Signature& signature) {
  const bool unary_same_type = signature.args.size() == 1 && signature.args[0] == signature.result;
  const Type& type = signature.result;
  if (!unary_same_type || type.pointers != 0 || type.is_void() || type.scalar == Scalar::boolean) {
    throw Error(ErrorKind::unsupported, name(),
                "block_sum needs T(T) for an arithmetic T, not " + signature.str());
  }
  abi::DeviceFunction function;
  function.name = "block_sum";
  function.signature = signature;
  function.param_names = {"value"};
  // Shared memory per type; every thread of the block must call it (it synchronises).
  const std::string n = std::to_string(block_size_);
  function.body =
      "  __shared__ " + type.cuda() + " partial[" + n + "];\n"
      "  partial[threadIdx.x] = value;\n"
      "  __syncthreads();\n"
      "  for (unsigned stride = " + n + " / 2; stride > 0; stride /= 2) {\n"
      "    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];\n"
      "    __syncthreads();\n"
      "  }\n"
      "  const " + type.cuda() + " total = partial[0];\n"
      "  __syncthreads();  // partial may be reused by the next call\n"
      "  return total;\n";
  abi::CompileOptions options;
  options.abi = abi::Abi::numba;
  options.output = output_;
  options.arch = arch_;
  abi::CompiledFunction compiled = abi::compile(function, options);
  ++compilations_;
  return {std::move(compiled.code)};
}

DeclaredFunction BlockReduceProvider::declaration(const std::vector<std::string>& types) const {
  DeclaredFunction declared;
  declared.name = "block_sum";
  declared.abi = abi::Abi::numba;
  for (const std::string& type : types) declared.signatures.push_back(Signature::parse(type + "(" + type + ")"));
  declared.provider = self_.lock();
  if (!declared.provider) {
    throw Error(ErrorKind::usage, name(), "create the provider with BlockReduceProvider::make");
  }
  return declared;
}

}  // namespace cujit::scenarios
