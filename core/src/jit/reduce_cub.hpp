#pragma once
// Backend::cub of the reduce build (docs/reduce.md): the source that instantiates CUB's own
// DeviceReduce kernels, the shape CUB chose for them (read back from the compile), and
// CUB's dispatch on the host. reduce.cpp owns the spec checks, the operator, the cache and
// the memo; this file owns what differs for CUB.

#include <cstdint>
#include <string>
#include <vector>

#include "cujit/program.hpp"
#include "cujit/reduce.hpp"

namespace cujit::reduce::cub_backend {

/// The generated source and its compile options: `value_types` (for its comment),
/// `types_and_operator` (the type aliases
/// cujit_in_t, cujit_out_t, cujit_acc_t and the operator symbol's declaration or definition)
/// and `op_symbol`, with CUB's kernels named as name expressions.
KernelCompile kernel_compile(const ReduceSpec& spec, const std::string& value_types,
                             const std::string& types_and_operator, const std::string& op_symbol);

/// Fills the kernels' names and shape of `build` from the compile's lowered names (CUB's
/// policy for the architecture is read from the compile, so host and kernels agree);
/// Error(compile) naming `program` if they are missing or malformed.
void set_shape(ReduceBuild& build, const CompileResult& compiled, const std::string& program);

/// CUB's dispatch for n items (launch_for of a Backend::cub build).
Launch launch_for(const ReduceBuild& build, std::uint64_t n);
/// Partials a graph needs for n items: the node pair always runs two passes (a kernel node
/// keeps its kernel), at least one partial.
std::uint64_t graph_blocks(const ReduceBuild& build, std::uint64_t n);
/// The most blocks launch_for gives on the current device.
std::uint64_t max_blocks(const ReduceBuild& build);

/// The arguments of the three kernels (the operator and CUB's identity transform are empty
/// structs: one byte each).
std::vector<ArgValue> single_args(DevicePtr in, DevicePtr out, std::uint64_t n, const ArgValue& init);
std::vector<ArgValue> tiles_args(const ReduceBuild& build, DevicePtr in, DevicePtr partials, std::uint64_t n,
                                 std::uint64_t blocks);
std::vector<ArgValue> final_args(DevicePtr partials, DevicePtr out, std::uint64_t count, const ArgValue& init);

}  // namespace cujit::reduce::cub_backend
