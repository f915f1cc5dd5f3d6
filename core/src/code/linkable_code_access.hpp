#pragma once
// The library's own way to make a LinkableCode without the factories' full checks, for
// bytes whose structure a vendor library has just vouched for.

#include <string>

#include "cujit/linkable_code.hpp"

namespace cujit::detail {

class LinkableCodeAccess {
 public:
  // The cubin nvJitLinkGetLinkedCubin or cuLinkComplete returned, wrapped as it is: its
  // format is checked (a CUDA ELF), its sections are not. Reading every section header,
  // symbol and relocation of the linker's own output cost 10-100 us per link (a third of
  // the cost of a link the vendor's cache answers) and could only find a linker bug.
  // Bytes from anywhere else (files, caches, callers) go through LinkableCode::cubin.
  // \throws Error (format) naming `name` when the bytes are not a cubin at all.
  static LinkableCode linker_output(Bytes bytes, std::string name);
};

}  // namespace cujit::detail
