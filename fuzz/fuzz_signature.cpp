// Arbitrary text as a numba-style signature and type, and through the mangler.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cujit/abi.hpp"
#include "cujit/error.hpp"
#include "cujit/signature.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const cujit::Signature signature = cujit::Signature::parse(text);
    (void)cujit::abi::mangle_numba("fuzz.module", "f", signature.args);
    (void)cujit::abi::declaration_of("f", signature, cujit::abi::Abi::numba);
  } catch (const cujit::Error&) {
  }
  try {
    (void)cujit::Type::parse(text);
  } catch (const cujit::Error&) {
  }
  (void)cujit::abi::is_identifier(text);
  return 0;
}
