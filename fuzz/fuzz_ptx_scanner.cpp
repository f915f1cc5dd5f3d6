// Arbitrary text through the PTX scanners: NRT detection and the declared / defined
// function readers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cujit/nrt.hpp"
#include "support/ptx_scan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view ptx(reinterpret_cast<const char*>(data), size);
  (void)cujit::nrt::referenced_functions(ptx);
  (void)cujit::detail::extern_functions(ptx);
  (void)cujit::detail::visible_functions(ptx);
  return 0;
}
