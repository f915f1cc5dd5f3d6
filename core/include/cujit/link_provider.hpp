#pragma once
// Link providers: whatever backs a device function a kernel calls supplies, for the
// signature actually used, the code to link, so the kernel author lists no files.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cujit/abi.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/signature.hpp"

namespace cujit {

/// Supplies the code of a declared device function per signature; subclass it.
class LinkProvider {
 public:
  /// A provider with a fresh identity().
  LinkProvider() noexcept;
  /// A copy is another provider: it gets an identity of its own.
  LinkProvider(const LinkProvider&) noexcept;
  /// Assignment keeps this object's identity.
  LinkProvider& operator=(const LinkProvider&) noexcept { return *this; }
  virtual ~LinkProvider() = default;
  /// For messages: "block_reduce<128>".
  virtual std::string name() const = 0;
  /// The code defining the declared function for `signature` (and anything it needs). May
  /// generate and compile code on the spot. Items it marks nrt = true feed the NRT policy.
  virtual std::vector<LinkableCode> code_for(const Signature& signature) = 0;

  /// The version of what this provider generates, or nullopt (the default). A provider
  /// that declares one promises that every provider object with the same name() and
  /// version gives the same code for the same signature: its answers are then remembered
  /// under (name, version, signature) by the cache's tiers, across builders, provider
  /// objects and processes (remembered_code_for). Change the version whenever the code it
  /// generates changes. Without one, answers are remembered per object, in the process.
  virtual std::optional<std::string> version() const { return std::nullopt; }

  /// Unique to this object in the process, never reused: what a memorized build names a
  /// provider without a version by (an address can be reused once an object is gone). A
  /// build that asked this provider once is recalled without asking it again.
  std::uint64_t identity() const noexcept { return identity_; }

  /// What builds and keys name this provider by: "name@version" with a version,
  /// "#identity" (process-local) without.
  std::string memory_name() const;

 private:
  const std::uint64_t identity_;
};

/// A device function a kernel calls, declared to the KernelBuilder. Its symbol for each
/// signature follows its ABI: the C ABI uses abi_name (or the name) and allows one
/// signature; the numba ABI mangles module, name and argument types, so one name can have
/// several signatures (overloads).
struct DeclaredFunction {
  std::string name;                    ///< an identifier: what CUDA C++ calls it
  std::string module = "__main__";     ///< numba's module, part of a numba-ABI symbol
  std::vector<Signature> signatures;   ///< at least one; one for the C ABI
  abi::Abi abi = abi::Abi::numba;      ///< how symbols are named and called
  std::optional<std::string> abi_name; ///< C ABI only: the symbol, when not the name
  /// Numba ABI only: the flags the definition was compiled with (their tag is part of the
  /// symbol); the default is a device function compiled with no options.
  abi::NumbaFlags numba_flags;
  /// Numba ABI only: the definition's function number ("v<uid>" tag), which numba counts
  /// per process: 1 for the first function numba compiled, "B2v2" for the second.
  unsigned numba_uid = 1;
  /// Linked whenever the kernel calls this function.
  std::vector<LinkableCode> link;
  /// Asked for code per signature the kernel calls (may be null).
  std::shared_ptr<LinkProvider> provider;

  /// The symbol of this function for `signature`, by its ABI.
  std::string symbol(const Signature& signature) const;
  /// Throws Error(usage) naming the function when it cannot be declared as given.
  void validate() const;
};

/// The code `provider` supplies for `signature`, asking it only when no earlier answer is
/// remembered: per (memory_name(), signature) in `cache`'s memo for the process, and, for a
/// provider with a version(), in the cache's tiers (memory, disk, remote) across processes.
/// `asked` (if given) is set to whether the provider was called. What the provider throws
/// propagates and nothing is remembered; a remembered entry that does not decode is dropped
/// and the provider asked again.
std::shared_ptr<const std::vector<LinkableCode>> remembered_code_for(LinkProvider& provider,
                                                                     const Signature& signature,
                                                                     BuildCache& cache,
                                                                     bool* asked = nullptr);

/// CUDA C++ declarations of every signature of `functions`, plus callable wrappers named
/// after each function (overloaded by signature; a numba-ABI wrapper traps on a non-zero
/// status). Kernels include it as "cujit/declarations.cuh".
std::string declarations_header(std::span<const DeclaredFunction> functions);

}  // namespace cujit
