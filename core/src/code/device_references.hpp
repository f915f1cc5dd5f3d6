#pragma once
// The functions device code references without defining them, read without a GPU and
// without a vendor library, from the code a link for one architecture will use:
//   PTX            its `.extern .func` declarations
//   cubin          the undefined global symbols of its ELF symbol table
//   fatbin         per container, the entry the link takes (see select below), read as
//                  PTX or cubin after decompression
//   host object    the fatbins embedded in its .nv_fatbin / __nv_relfatbin sections (ELF),
//                  or found by their magic number (COFF)
//   archive        each member, as the format it holds
// LTO-IR is stored in an encoding of NVIDIA's own and cannot be read: it is reported as
// unread, as is a compressed entry whose decompressor (libzstd, liblz4) is not installed.
//
// The entry a link takes from one fatbin container, for target T: the SASS built for T
// exactly; else every PTX and LTO-IR entry that compiles for T (the newest PTX, and any
// LTO-IR, which cannot be read); else the newest SASS that runs on T (same major version).
// Entries for other architectures are never read, so an NRT user only in an sm_80 entry
// does not count for an sm_90 link.
//
// Every input is untrusted: every read is bounds-checked, damaged structures end the walk
// of the structure they are in (integrity_problem in cujit/format.hpp is what refuses them).

#include <string>
#include <string_view>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/format.hpp"

namespace cujit::detail {

struct DeviceReferences {
  // Undefined symbols of the code the link uses, each once, in order of first appearance.
  std::vector<std::string> symbols;
  // What could not be read, described ("LTO-IR entry (sm_90)", ...), each once.
  std::vector<std::string> unread;
};

// What `bytes` (of `format`) leave undefined for a link for `target`. CUDA C++ is compiled
// before it is linked: as source it references nothing readable (unread "CUDA C++").
DeviceReferences device_references(Format format, std::string_view bytes, const Arch& target);

// The undefined global and weak symbols of an ELF64 file's symbol table, each once in
// table order; empty when the bytes hold no sound symbol table.
std::vector<std::string> elf_undefined_symbols(std::string_view elf);

}  // namespace cujit::detail
