#pragma once
// The example link provider: `block_sum(value)`, a block-level sum over a fixed block
// size, generated and compiled (NVRTC -> LTO-IR) per element type when a kernel's link
// asks for it. A kernel calls block_sum for any arithmetic type without listing a file.

#include <atomic>
#include <memory>

#include "cujit/link_provider.hpp"

namespace cujit::scenarios {

class BlockReduceProvider : public LinkProvider {
 public:
  // block_size: threads per block the generated code reduces over (a power of two, at
  // most 1024); arch and output: what the generated code is compiled for.
  BlockReduceProvider(unsigned block_size, Arch arch, CompileTarget output = CompileTarget::ltoir);

  std::string name() const override;
  // Signature T(T) for an arithmetic scalar T; Error(unsupported) otherwise.
  std::vector<LinkableCode> code_for(const Signature& signature) override;

  // The declaration kernels use: block_sum for each of `types` ("float32", "int32"...).
  DeclaredFunction declaration(const std::vector<std::string>& types) const;
  // How many times code_for compiled code.
  std::size_t compilations() const noexcept { return compilations_.load(); }

  static std::shared_ptr<BlockReduceProvider> make(unsigned block_size, Arch arch,
                                                   CompileTarget output = CompileTarget::ltoir);

 private:
  unsigned block_size_;
  Arch arch_;
  CompileTarget output_;
  std::atomic<std::size_t> compilations_{0};
  std::weak_ptr<BlockReduceProvider> self_;
};

}  // namespace cujit::scenarios
