#pragma once
// KernelBuilder: a kernel's own code (PTX or CUDA C++, scanned for NRT use) plus external
// link items (never scanned; their `nrt` flag says whether they use NRT). It applies the
// NRT policy, links through either backend and loads the result.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "cujit/nrt.hpp"

namespace cujit {

struct KernelOptions {
  Arch arch;
  bool lto = false;
  std::optional<LinkerBackend> backend;
  // Per-kernel NRT override: wins over nrt::enabled() in both directions.
  std::optional<bool> nrt;
  std::vector<std::string> include_paths;
  std::vector<std::string> compile_options;
};

struct LinkedKernel {
  std::string kernel_name;
  nrt::Decision nrt;
  LinkResult link;
};

struct BuiltKernel {
  std::shared_ptr<Module> module;
  Kernel kernel;
  nrt::Decision nrt;
};

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string kernel_name, KernelOptions options = {});

  // The kernel's own code, part of what NRT detection scans: PTX, or CUDA C++ compiled to
  // PTX here (with nrt.cuh available as "cujit/nrt.cuh"). Other formats are Error(usage):
  // add them with link().
  KernelBuilder& source(LinkableCode code);
  // External code: linked, not scanned. Mark it nrt = true when it uses NRT.
  KernelBuilder& link(LinkableCode code);

  // The NRT decision for what has been added so far (pure given the inputs and switches).
  nrt::Decision nrt_decision() const;

  // Links to a cubin (no GPU needed). When NRT is not linked and the link fails on an
  // unresolved NRT_* symbol, throws Error(nrt) naming the symbol and the input and saying
  // how to fix it.
  LinkedKernel link_cubin() const;
  // Links and loads (needs a GPU).
  BuiltKernel build() const;

  const std::string& kernel_name() const noexcept { return kernel_name_; }
  const std::vector<LinkableCode>& own_code() const noexcept { return own_; }
  const std::vector<LinkableCode>& link_items() const noexcept { return external_; }

 private:
  LinkOptions link_options() const;
  std::vector<std::string> culprits_of(const std::string& log) const;

  std::string kernel_name_;
  KernelOptions options_;
  std::vector<LinkableCode> own_;
  std::vector<LinkableCode> external_;
};

}  // namespace cujit
