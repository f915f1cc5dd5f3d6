#pragma once
// The reduce build: a device-wide reduction specialised on input, output and accumulator
// types and a user operator, generated as CUDA C++ that includes no header (the block
// reduction is written out in the source: CUB's headers cost NVRTC about a second per
// build, the kernels a few milliseconds), compiled by NVRTC to LTO-IR, linked with the
// operator through nvJitLink with LTO into a cubin, and cached. reduce_into() runs it:
// one kernel for small n, two passes above (docs/reduce.md). Backend::cub builds CUB's own
// DeviceReduce kernels instead (CUB's headers, keyed by content); UserType reduces a
// user-defined value type on either backend.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cujit/abi.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/linker.hpp"
#include "cujit/graph.hpp"
#include "cujit/graph_node.hpp"
#include "cujit/module.hpp"
#include "cujit/signature.hpp"

/// The reduce build (build_reduce), reduce_into and its graph forms (ReduceNodes).
namespace cujit::reduce {

/// Which kernels a reduce build compiles.
enum class Backend {
  /// cujit's own two-kernel reduction (no header; the default).
  handwritten,
  /// CUB's own DeviceReduce kernels (DeviceReduceSingleTileKernel, DeviceReduceKernel) from
  /// the toolkit's CCCL (or a CCCL placed first on the include path), instantiated with the
  /// tuning policy CUB selects for the architecture: what CCCL's c/parallel builds
  /// (docs/reduce.md).
  cub,
};
/// "handwritten", "cub".
std::string_view to_string(Backend backend) noexcept;

/// The operators defined in the generated source.
enum class Builtin {
  sum,  ///< a + b
  min,  ///< the smaller
  max,  ///< the larger
};
/// "sum", "min", "max".
std::string_view to_string(Builtin op) noexcept;

/// The binary operator, acc(acc, acc) with the C ABI, in one of four forms.
class Operator {
 public:
  /// A built-in operator, defined in the generated source.
  static Operator builtin(Builtin op);
  /// A cujit C-ABI device function (compiled here to LTO-IR).
  static Operator device_function(abi::DeviceFunction function);
  /// CUDA C++ source defining `extern "C" __device__ acc name(acc, acc)`; Error(usage) if
  /// `name` is not an identifier.
  static Operator cuda_source(std::string source, std::string name);
  /// Foreign LTO-IR or PTX defining `name` with the C ABI and this signature (numba-cuda's
  /// min_i32_c_abi.ltoir is `int32(int32, int32)`); Error(usage) for other formats.
  static Operator foreign(LinkableCode code, std::string name, Signature signature);

  /// Which of the four forms.
  enum class Kind {
    builtin,          ///< Operator::builtin
    device_function,  ///< Operator::device_function
    cuda_source,      ///< Operator::cuda_source
    foreign,          ///< Operator::foreign
  };
  /// The operator's form.
  Kind kind() const noexcept { return kind_; }
  /// The operator's symbol (a built-in's name for built-ins).
  const std::string& name() const noexcept { return name_; }
  /// The built-in, for Kind::builtin.
  std::optional<Builtin> builtin_op() const noexcept { return builtin_; }
  /// For messages: "sum", "device function min_i32", "foreign ltoir min_i32"...
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

/// Compile settings of a reduce build.
struct BuildConfig {
  /// Extra NVRTC options, for the generated kernel and for a CUDA C++ operator alike.
  std::vector<std::string> nvrtc_options;
  /// Include directories, for both compiles.
  std::vector<std::string> include_dirs;
  /// NVRTC's automatic precompiled header (-pch) for the headers a CUDA C++ operator
  /// includes. Off by default and dropped from every hermetic compile (every cached one):
  /// NVRTC 13.0 serves a PCH made earlier in the process after its headers changed, and the
  /// PCH is no input a cache key can name (docs/cache.md). It applies only to a compile
  /// cujit cannot make hermetic, which is never cached.
  bool precompiled_header = false;
};

/// A user-defined value type (cuda.parallel's cccl_type_info): `size` bytes aligned to
/// `alignment`, named `name` in the generated source and in a CUDA C++ operator. With a
/// `definition` (C++ defining `name`, e.g. "struct pair { float value; int index; };") the
/// type is that definition, prepended to both the kernels' and the operator's source, and
/// checked there against size and alignment (Error(compile) naming both); without one it is
/// opaque storage, `struct alignas(alignment) name { unsigned char bytes[size]; }`. Only a
/// CUDA C++ operator can take it (a built-in, a C-ABI device function or a foreign operator
/// is Error(usage): their signatures name scalar types).
struct UserType {
  std::string name;        ///< an identifier, not cujit_*
  std::size_t size = 0;    ///< sizeof, at least 1
  std::size_t alignment = 1;  ///< alignof, a power of two up to 256
  std::string definition;  ///< C++ defining `name`; empty: opaque storage
};

/// What a reduce build is specialised on.
struct ReduceSpec {
  Type input = Type::parse("int32");        ///< the items' type
  Type output = Type::parse("int32");       ///< the result's type
  Type accumulator = Type::parse("int32");  ///< the init value's and the operator's type
  Operator op = Operator::builtin(Builtin::sum);  ///< the binary operator
  Arch arch;                                ///< the target architecture
  BuildConfig config;                       ///< compile settings
  Backend backend = Backend::handwritten;   ///< which kernels
  /// A user-defined value type: when set it is the input, output and accumulator type
  /// (input, output and accumulator above are ignored), and init is its bytes.
  std::optional<UserType> user_type;
};

/// A built reduction: its cubin, kernels and shape. With n <= single_pass_limit one block
/// of tiles_kernel reads the input and writes the output (single pass); above,
/// tiles_kernel writes one partial per block, then one block of final_kernel folds them
/// into the output.
struct ReduceBuild {
  LinkableCode code;                    ///< the linked cubin, holding both kernels
  std::string tiles_kernel;             ///< the first pass's (or the single pass's) kernel
  std::string final_kernel;             ///< the second pass's kernel
  /// Backend::cub: the single-tile kernel over the input (n <= single_pass_limit); empty for
  /// the hand-written backend, whose tiles kernel is also its single pass.
  std::string single_kernel;
  Backend backend = Backend::handwritten;  ///< which kernels
  /// Items per tile of the first pass (Backend::cub: its policy's threads x items).
  std::uint64_t tile_items = 0;
  /// Threads per block of the final kernel (and of the single-tile kernel).
  unsigned final_block_size = 0;
  std::uint64_t single_pass_limit = 0;  ///< the largest n run as a single pass
  std::size_t accumulator_size = 0;     ///< bytes of the accumulator (and of init)
  std::size_t input_size = 0;           ///< bytes of an input item
  std::size_t output_size = 0;          ///< bytes of the output
  unsigned block_size = 0;              ///< threads per block of both kernels
  unsigned items_per_thread = 0;        ///< items a thread folds per tile
  /// Where the cubin came from.
  CacheSource source = CacheSource::built;
  /// The link key's digest (the link key covers the compiled kernel and operator by
  /// content, so it names the whole build).
  std::string key;
  /// Loaded when a device is present (Error(cuda) from reduce_into otherwise).
  std::shared_ptr<Module> module;
  std::optional<Kernel> tiles;  ///< the loaded tiles kernel
  std::optional<Kernel> final;  ///< the loaded final kernel
  std::optional<Kernel> single; ///< Backend::cub: the loaded single-tile kernel
};

/// Builds (or takes from the cache) the reduction. Works without a GPU up to the cubin.
/// Throws Error(usage) for unsupported types or an operator whose signature is not
/// acc(acc, acc), Error(compile/link) with logs otherwise.
ReduceBuild build_reduce(const ReduceSpec& spec, BuildCache& cache = BuildCache::global());
/// The same, shared: a spec built before through the same cache (in the same context) is
/// recalled from the cache's memo, the very object, with no key hashed and nothing decoded
/// or copied. Specs with include directories or a CUDA C++ operator are not memorized (their
/// headers on disk can change); they still hit the cache's tiers. build_reduce() returns a
/// copy of it, with source CacheSource::memo when it was recalled. Throws as build_reduce.
std::shared_ptr<const ReduceBuild> build_reduce_shared(const ReduceSpec& spec,
                                                       BuildCache& cache = BuildCache::global());

/// The generated kernel of a spec as a program and its compile options (pure): what
/// build_reduce compiles (to LTO-IR, through compile_cached) before it links the operator.
struct KernelCompile {
  Program program;         ///< the generated source
  CompileOptions options;  ///< its compile options
};
/// The generated kernel of `spec` and its options (pure; no compile).
KernelCompile kernel_compile(const ReduceSpec& spec);
/// The link options of a spec's build (nvJitLink, LTO, -optimize-unused-variables; a CUDA
/// C++ operator compiled with the spec's options, include directories and the toolkit's
/// headers). -optimize-unused-variables lets nvJitLink drop device variables no device code
/// reads, and fold those it never writes: nothing on the host reads or writes a reduce
/// module's variables (so an operator's device variable that only device code reads is a
/// constant of its initialiser, absent from the module), and without it a CUDA C++
/// operator that includes CCCL headers carries their variables' symbol and relocation
/// tables into the cubin (60 KB instead of 13 KB with cuda/std/functional).
LinkOptions link_options(const ReduceSpec& spec);

/// How reduce_into runs n items: one block of the tiles kernel writing the output (n <=
/// build.single_pass_limit; no device query), or `blocks` blocks of it writing partials (at
/// most 8 per multiprocessor of the current device, at most one per tile of 4096 items),
/// then one block of the final kernel. Backend::cub: CUB's dispatch, the single-tile kernel
/// up to one of its single-tile policy's tiles, else DeviceReduceKernel on CUB's even-share
/// grid (one block per tile, at most occupancy x multiprocessors x CUB's subscription
/// factor 5), then the single-tile kernel over the partials.
struct Launch {
  bool single_pass = true;   ///< one kernel, no partials
  std::uint64_t blocks = 1;  ///< blocks of the tiles kernel
};
/// How reduce_into runs n items of `build` (above the single-pass limit it reads the
/// current device's multiprocessor count: Error(cuda) without a device).
Launch launch_for(const ReduceBuild& build, std::uint64_t n);

/// Temporary storage reduce_into needs for n items on the current device: one accumulator
/// per block of the tiles kernel, none for a single pass.
std::size_t temp_bytes(const ReduceBuild& build, std::uint64_t n);

/// Temporary storage that covers every n on the current device (one accumulator per block
/// of the largest grid reduce_into launches): what a graph whose n changes needs.
/// Throws Error(cuda) without a device.
std::size_t max_temp_bytes(const ReduceBuild& build);

/// out[0] = op(init, in[0], ..., in[n-1]) (in unspecified order and grouping), for any n
/// from 0 (the result is init) to 2^31-1 and beyond, `in` aligned to its type (16-byte
/// aligned input is read in 16-byte vectors). Temporary storage: pass temp with at least
/// temp_bytes(build, n), or 0 to have it allocated when one is needed (and freed after the
/// stream synchronises; a single pass needs none and does not synchronise). `init` must
/// have the accumulator's size (Error(usage)); a build not loaded is Error(cuda).
/// With temp given it allocates nothing, synchronises nothing and reads nothing back, so it
/// can be captured into a graph (capture()); a capture that would need temp allocated is
/// refused with Error(usage) before anything is enqueued.
void reduce_into(const ReduceBuild& build, DevicePtr in, DevicePtr out, std::uint64_t n,
                 const ArgValue& init, StreamHandle stream = nullptr, DevicePtr temp = 0,
                 std::size_t temp_size = 0);

/// reduce_into with a typed init (arg_value(init)) and storage allocated when needed.
template <class T>
void reduce_into(const ReduceBuild& build, DevicePtr in, DevicePtr out, std::uint64_t n, T init,
                 StreamHandle stream = nullptr) {
  reduce_into(build, in, out, n, arg_value(init), stream);
}

/// reduce_into as two kernel nodes of an explicit graph, whose n (and input) can change
/// after instantiation through GraphExec::update, without re-instantiating: the tiles
/// kernel (depending on `deps`), then the final kernel (depend on last()). For n up to
/// build->single_pass_limit the tiles kernel runs as the single pass and the final kernel
/// does nothing; above, two passes through `temp`, which must hold temp_bytes(*build, n)
/// for every n set (max_temp_bytes covers all). Throws Error(usage) for init of the wrong
/// size or too little temp (here and in set_input), Error(cuda) for a build not loaded.
class ReduceNodes {
 public:
  /// The two nodes of a reduction of `n` items at `in` into `out`, after `deps`.
  ReduceNodes(std::shared_ptr<const ReduceBuild> build, DevicePtr in, DevicePtr out, std::uint64_t n,
              ArgValue init, DevicePtr temp, std::size_t temp_size, std::vector<Node> deps = {});
  /// A new input and n for the nodes; GraphExec::update (update()) pushes them into an
  /// execution.
  void set_input(DevicePtr in, std::uint64_t n);
  /// The n the nodes hold.
  std::uint64_t n() const noexcept { return n_; }
  /// The tiles kernel node (it has the group's dependencies).
  const KernelNode& first() const noexcept { return tiles_; }
  /// The final kernel node: what depends on the reduction depends on it.
  const KernelNode& last() const noexcept { return final_; }
  /// Pushes both nodes' current parameters into `exec` (built from them).
  void update(GraphExec& exec) const;

 private:
  std::shared_ptr<const ReduceBuild> build_;
  DevicePtr in_ = 0;
  DevicePtr out_ = 0;
  std::uint64_t n_ = 0;
  ArgValue init_;
  DevicePtr temp_ = 0;
  std::size_t temp_size_ = 0;
  KernelNode tiles_;
  KernelNode final_;
};

}  // namespace cujit::reduce
