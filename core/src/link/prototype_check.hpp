#pragma once
// Prototypes checked by cujit before either backend: each PTX `.extern .func` declaration
// is compared with its definition in the other PTX inputs (how many values it returns, how
// many parameters it takes, each one's width, and whether it is floating-point: nvJitLink
// takes .b32, .u32 and .s32 for each other but not .f32 for any of them). nvJitLink 13.0 reports a mismatch only on
// stderr, with a success status (and crashes instead once an LTO link has run in the
// process); the driver linker refuses it. Checked here, both backends refuse it the same
// way, naming both inputs and both prototypes. A definition inside LTO-IR, a cubin, fatbin,
// object or archive carries no PTX prototype to read: those are left to the backends'
// diagnostics, which every link hears (support/stderr_capture.hpp).

#include <string>
#include <vector>

#include "cujit/linkable_code.hpp"
#include "support/ptx_scan.hpp"

namespace cujit::detail {

struct PrototypeConflict {
  std::string symbol;
  const LinkableCode* declaring = nullptr;
  PtxPrototype declared;
  const LinkableCode* defining = nullptr;
  PtxPrototype defined;
};

// Every declaration in a PTX input whose definition in another PTX input has another
// prototype, in input order.
std::vector<PrototypeConflict> prototype_conflicts(const std::vector<const LinkableCode*>& inputs);

// Whether two prototypes agree: as many returns and parameters, each of the same width and
// the same class (integer or floating-point).
bool same_shape(const PtxPrototype& a, const PtxPrototype& b) noexcept;

// What most likely made them differ, or empty: one side has numba's ABI (a pointer to the
// result first, an int status returned) and the other the C ABI (the result returned).
std::string likely_cause(const PtxPrototype& declared, const PtxPrototype& defined);

}  // namespace cujit::detail
