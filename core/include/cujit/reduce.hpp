#pragma once
// The reduce build: a device-wide reduction specialised on input, output and accumulator
// types and a user operator, generated as CUDA C++ over CUB's BlockReduce (from the
// toolkit's CCCL headers), compiled by NVRTC to LTO-IR, linked with the operator through
// nvJitLink with LTO into a cubin, and cached. reduce_into() runs it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cujit/abi.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/linker.hpp"
#include "cujit/graph_node.hpp"
#include "cujit/module.hpp"
#include "cujit/signature.hpp"

namespace cujit::reduce {

enum class Builtin { sum, min, max };
std::string_view to_string(Builtin op) noexcept;

// The binary operator, acc(acc, acc) with the C ABI, in one of four forms.
class Operator {
 public:
  static Operator builtin(Builtin op);
  // A cujit C-ABI device function (compiled here to LTO-IR).
  static Operator device_function(abi::DeviceFunction function);
  // CUDA C++ source defining `extern "C" __device__ acc name(acc, acc)`.
  static Operator cuda_source(std::string source, std::string name);
  // Foreign LTO-IR or PTX defining `name` with the C ABI and this signature (numba-cuda's
  // min_i32_c_abi.ltoir is `int32(int32, int32)`).
  static Operator foreign(LinkableCode code, std::string name, Signature signature);

  enum class Kind { builtin, device_function, cuda_source, foreign };
  Kind kind() const noexcept { return kind_; }
  const std::string& name() const noexcept { return name_; }
  std::optional<Builtin> builtin_op() const noexcept { return builtin_; }
  // For messages: "sum", "device function min_i32", "foreign ltoir min_i32"...
  std::string describe() const;

 private:
  friend struct Access;
  Kind kind_ = Kind::builtin;
  std::string name_;
  std::optional<Builtin> builtin_;
  std::optional<abi::DeviceFunction> function_;
  std::optional<LinkableCode> code_;
  std::optional<Signature> signature_;
};

struct BuildConfig {
  // For the generated kernel and for a CUDA C++ operator alike.
  std::vector<std::string> nvrtc_options;
  std::vector<std::string> include_dirs;
  // NVRTC's automatic precompiled header for CUB: the first build in a process creates it
  // (slower), later builds reuse it. Changes nothing in the generated code.
  bool precompiled_header = true;
};

struct ReduceSpec {
  Type input = Type::parse("int32");
  Type output = Type::parse("int32");
  Type accumulator = Type::parse("int32");  // the init value's type
  Operator op = Operator::builtin(Builtin::sum);
  Arch arch;
  BuildConfig config;
};

struct ReduceBuild {
  LinkableCode code;  // the linked cubin
  std::string tiles_kernel;
  std::string final_kernel;
  std::size_t accumulator_size = 0;
  std::size_t input_size = 0;
  std::size_t output_size = 0;
  unsigned block_size = 0;
  unsigned items_per_thread = 0;
  // Where the cubin came from, and the link key's digest (the link key covers the
  // compiled kernel and operator by content, so it names the whole build).
  CacheSource source = CacheSource::built;
  std::string key;
  // Loaded when a device is present (Error(cuda) from reduce_into otherwise).
  std::shared_ptr<Module> module;
  std::optional<Kernel> tiles;
  std::optional<Kernel> final;
};

// Builds (or takes from the cache) the reduction. Works without a GPU up to the cubin.
// Throws Error(usage) for unsupported types or an operator whose signature is not
// acc(acc, acc), Error(compile/link) with logs otherwise.
ReduceBuild build_reduce(const ReduceSpec& spec, BuildCache& cache = BuildCache::global());

// The generated kernel of a spec as a program and its compile options (pure): what
// build_reduce compiles (to LTO-IR, through compile_cached) before it links the operator.
struct KernelCompile {
  Program program;
  CompileOptions options;
};
KernelCompile kernel_compile(const ReduceSpec& spec);
// The link options of a spec's build (nvJitLink, LTO; a CUDA C++ operator compiled with
// the spec's options and include directories).
LinkOptions link_options(const ReduceSpec& spec);

// Temporary storage reduce_into needs for n items on the current device.
std::size_t temp_bytes(const ReduceBuild& build, std::uint64_t n);

// out[0] = op(init, in[0], ..., in[n-1]) (in unspecified order and grouping), for any n
// from 0 (the result is init) to 2^31-1 and beyond. Temporary storage: pass temp with at
// least temp_bytes(build, n), or 0 to have it allocated (and freed after the stream
// synchronises). `init` must have the accumulator's size.
void reduce_into(const ReduceBuild& build, DevicePtr in, DevicePtr out, std::uint64_t n,
                 const ArgValue& init, StreamHandle stream = nullptr, DevicePtr temp = 0,
                 std::size_t temp_size = 0);

template <class T>
void reduce_into(const ReduceBuild& build, DevicePtr in, DevicePtr out, std::uint64_t n, T init,
                 StreamHandle stream = nullptr) {
  reduce_into(build, in, out, n, arg_value(init), stream);
}

}  // namespace cujit::reduce
