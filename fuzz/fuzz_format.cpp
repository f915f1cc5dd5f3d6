// Arbitrary bytes through format detection, integrity checks and every factory: the first
// thing cujit does with a file a user points it at. Also the readers of embedded code
// kinds, cubin architecture, PTX .target and ELF symbol tables.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cujit/error.hpp"
#include "cujit/linkable_code.hpp"
#include "link/defined_symbols.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)cujit::detect_format(bytes);
  for (cujit::Format format : cujit::all_formats) {
    (void)cujit::integrity_problem(format, bytes);
    (void)cujit::needs_lto(format, bytes);
    try {
      const cujit::LinkableCode code = cujit::LinkableCode::from_bytes(format, bytes, "fuzz");
      (void)cujit::detail::defined_symbols(code);
    } catch (const cujit::Error&) {
      // rejected with a typed error: what must happen to bad bytes
    }
  }
  (void)cujit::embedded_code_kinds(bytes);
  (void)cujit::cubin_sm_number(bytes);
  (void)cujit::ptx_target(bytes);
  (void)cujit::detail::elf_global_definitions(bytes);
  return 0;
}
