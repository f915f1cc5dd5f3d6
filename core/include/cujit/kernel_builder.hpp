#pragma once
// KernelBuilder: a kernel's own code (PTX, LTO-IR, or CUDA C++ it compiles), the device
// functions it may call (declared, with explicit link items and/or a LinkProvider), and
// external link items. It finds which declared functions the code actually references,
// asks their providers for code for the signatures used (and again for what that code
// references, to a fixed point), applies the NRT policy, links through either backend
// and loads.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cujit/build_cache.hpp"
#include "cujit/link_provider.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "cujit/nrt.hpp"

namespace cujit {

/// How a KernelBuilder builds: the link (typed flags included) and the NRT override.
struct KernelOptions {
  /// Architecture, LTO, backend, how CUDA C++ is compiled (include paths, options), the
  /// typed link flags and verbatim nvJitLink options: the kernel's link, composed rather
  /// than copied.
  LinkOptions link;
  /// Per-kernel NRT override: wins over nrt::enabled() in both directions.
  std::optional<bool> nrt;
};

/// One declared function a build found referenced, and where its code came from.
struct ResolvedCall {
  std::string symbol;     ///< the symbol the code references
  std::string function;   ///< the declared function's name
  Signature signature;    ///< the signature referenced
  std::string provider;  ///< empty when the function has none
};

/// A kernel linked to a cubin (KernelBuilder::link_cubin, link_shared).
struct LinkedKernel {
  std::string kernel_name;              ///< the kernel's name in the cubin
  nrt::Decision nrt;                    ///< whether NRT was linked, and why
  LinkResult link;                      ///< the cubin, info log and backend
  std::vector<ResolvedCall> resolved;   ///< the declared functions found referenced
  /// Provider calls made by this build: one per distinct provider and signature whose
  /// answer was not remembered from an earlier build (remembered_code_for).
  std::size_t provider_requests = 0;
  /// Where the cubin came from (memo: link_cubin() copied a memorized build), and the cache
  /// key's digest.
  CacheSource source = CacheSource::built;
  std::string key;  ///< the link key's digest
};

/// A kernel linked and loaded (KernelBuilder::build).
struct BuiltKernel {
  std::shared_ptr<Module> module;  ///< the loaded module, shared per link key
  Kernel kernel;                   ///< the kernel, ready to launch
  nrt::Decision nrt;               ///< whether NRT was linked, and why
};

/// Builds one kernel from its own code, the device functions it calls (declared, with link
/// items or a LinkProvider) and external link items; see the file comment.
class KernelBuilder {
 public:
  /// Every compile and link of the builder goes through `cache`.
  explicit KernelBuilder(std::string kernel_name, KernelOptions options = {},
                         BuildCache& cache = BuildCache::global());

  /// Declares a device function the kernel may call. Declare before adding CUDA C++ that
  /// calls it: sources are compiled with "cujit/declarations.cuh" of what is declared.
  KernelBuilder& declare(DeclaredFunction function);
  /// The kernel's own code: PTX, LTO-IR, or CUDA C++ (compiled here to PTX through the
  /// cache, with "cujit/nrt.cuh" and "cujit/declarations.cuh" available). Its PTX is what NRT
  /// detection scans; LTO-IR cannot be scanned (its payload is compressed): mark it
  /// nrt = true if it uses NRT.
  KernelBuilder& source(LinkableCode code);
  /// External code: linked, scanned for declared functions, never for NRT.
  KernelBuilder& link(LinkableCode code);

  /// The NRT decision for the kernel's transitive link set (resolving declared functions,
  /// which may ask providers; link_cubin() reports the same decision).
  nrt::Decision nrt_decision() const;

  /// Resolves declared functions, links to a cubin (no GPU needed). When NRT is not linked
  /// and an NRT_* symbol is unresolved, throws Error(nrt) naming symbol, input and fix; a
  /// provider that throws gives an error naming the provider and the signature.
  LinkedKernel link_cubin() const;
  /// The same, shared: a build whose kernel name, options (typed link flags included),
  /// inputs, declared functions (providers by LinkProvider::memory_name()) and settings read at call time (the NRT switch, the backend)
  /// match an earlier one's through the same cache is recalled from the cache's memo, the
  /// very object, without asking providers, scanning, hashing or copying. Builders whose
  /// compile options name include directories are not memorized (their headers on disk can
  /// change); they still hit the cache's tiers.
  std::shared_ptr<const LinkedKernel> link_shared() const;
  /// Links and loads (needs a GPU); one loaded module per link key in a process.
  BuiltKernel build() const;

  /// The kernel's name, as given.
  const std::string& kernel_name() const noexcept { return kernel_name_; }
  /// The functions declared so far, in order.
  const std::vector<DeclaredFunction>& declared() const noexcept { return declared_; }

 private:
  struct LinkSet;
  class Resolver;
  std::vector<Header> headers() const;
  LinkSet resolve(LinkerBackend backend) const;
  /// What a build reads from its process's settings, read once when the build starts.
  struct Settings {
    LinkerBackend backend;
    bool nrt_enabled;
  };
  LinkedKernel link_set(LinkSet& set, const Settings& settings) const;
  nrt::Decision decision_for(const LinkSet& set, bool nrt_enabled) const;
  LinkableCode compile(const LinkableCode& code, CompileTarget target) const;
  std::shared_ptr<const LinkedKernel> linked(CacheSource& from) const;
  LinkedKernel link_fresh(const Settings& settings) const;
  /// Adds `code` to what the memo's pre-key names, as `role`.
  void name_in_memo(std::string_view role, const LinkableCode& code);
  void seal_memo_fields();
  std::vector<std::string> culprits_of(const std::string& log, const LinkSet& set) const;

  std::string kernel_name_;
  KernelOptions options_;
  BuildCache* cache_;
  std::vector<DeclaredFunction> declared_;
  std::vector<LinkableCode> own_;
  std::vector<LinkableCode> external_;
  /// Everything a build depends on but the settings read at call time, as the memo names it
  /// (inputs by digest); memo_digest_ is its digest, empty when the builder is not memorized.
  CacheKey memo_fields_{"kernel-build-memo"};
  std::string memo_digest_;
  /// Whether a CUDA C++ input compiled at link time depends on files (then never memorized).
  bool reads_disk_ = false;
};

}  // namespace cujit
