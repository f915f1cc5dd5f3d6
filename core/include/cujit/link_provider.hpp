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
#include "cujit/linkable_code.hpp"
#include "cujit/signature.hpp"

namespace cujit {

class LinkProvider {
 public:
  LinkProvider() noexcept;
  // A copy is another provider: it gets an identity of its own.
  LinkProvider(const LinkProvider&) noexcept;
  LinkProvider& operator=(const LinkProvider&) noexcept { return *this; }
  virtual ~LinkProvider() = default;
  // For messages: "block_reduce<128>".
  virtual std::string name() const = 0;
  // The code defining the declared function for `signature` (and anything it needs). May
  // generate and compile code on the spot. Items it marks nrt = true feed the NRT policy.
  virtual std::vector<LinkableCode> code_for(const Signature& signature) = 0;

  // Unique to this object in the process, never reused: what a memorized build names the
  // provider by (an address can be reused once an object is gone). A build that asked this
  // provider once is recalled without asking it again.
  std::uint64_t identity() const noexcept { return identity_; }

 private:
  const std::uint64_t identity_;
};

// A device function a kernel calls, declared to the KernelBuilder. Its symbol for each
// signature follows its ABI: the C ABI uses abi_name (or the name) and allows one
// signature; the numba ABI mangles module, name and argument types, so one name can have
// several signatures (overloads).
struct DeclaredFunction {
  std::string name;
  std::string module = "__main__";
  std::vector<Signature> signatures;
  abi::Abi abi = abi::Abi::numba;
  std::optional<std::string> abi_name;
  // Linked whenever the kernel calls this function.
  std::vector<LinkableCode> link;
  // Asked for code per signature the kernel calls (may be null).
  std::shared_ptr<LinkProvider> provider;

  std::string symbol(const Signature& signature) const;
  // Throws Error(usage) naming the function when it cannot be declared as given.
  void validate() const;
};

// CUDA C++ declarations of every signature of `functions`, plus callable wrappers named
// after each function (overloaded by signature; a numba-ABI wrapper traps on a non-zero
// status). Kernels include it as "cujit/declarations.cuh".
std::string declarations_header(std::span<const DeclaredFunction> functions);

}  // namespace cujit
