#include "cujit/reduce.hpp"

#include "cache/content_digest.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/error.hpp"
#include "cujit/program.hpp"
#include "cujit/toolkit.hpp"
#include "compile/hermetic_inputs.hpp"
#include "driver/driver_api.hpp"
#include "jit/reduce_cub.hpp"
#include "support/planted_slowdown.hpp"

namespace cujit::reduce {

struct Access {
  static const Operator& of(const Operator& op) { return op; }
  static const std::optional<abi::DeviceFunction>& function(const Operator& op) { return op.function_; }
  static const std::optional<LinkableCode>& code(const Operator& op) { return op.code_; }
  static const std::optional<Signature>& signature(const Operator& op) { return op.signature_; }
};

namespace {

constexpr const char* component = "reduce";
constexpr unsigned block_size = 256;
constexpr unsigned items_per_thread = 16;
constexpr std::uint64_t tile_items = std::uint64_t{block_size} * items_per_thread;
constexpr unsigned blocks_per_multiprocessor = 8;
// One block (the tiles kernel, single pass) takes n up to this many tiles (8192 items); two
// passes above. Why two tiles, on the H100 (132 SMs): a kernel costs about 1.3-1.4 us of
// GPU time before it reads anything (reduce_into's two kernels at n = 1024 took 2.76 us
// against CUB's single-tile 1.61 us), and one block pays about one memory round trip per
// tile it folds (its loads of a tile are issued together: 0.3 us from L2, where a small
// input usually is, up to 0.7 us from HBM). The second tile in one block costs 0.3-0.7 us,
// the second kernel of two passes 1.3 us: one block wins at two tiles even from HBM. At
// three or four tiles from HBM one block (2.8-3.5 us) would fall behind two passes
// (about 2.8 us at any n up to a wave), so the limit stays at two. CUB switches at one of
// its tiles (4096 int32 items, 2048 for 8-byte types), so up to 8192 items cujit runs one
// kernel wherever CUB does and for 4097..8192 one kernel where CUB runs two.
constexpr std::uint64_t single_pass_tiles = 2;
constexpr const char* tiles_kernel_name = "cujit_reduce_tiles";
constexpr const char* final_kernel_name = "cujit_reduce_final";
// A device variable no device code reads is dropped (link_options in reduce.hpp says why).
constexpr const char* drop_unread_variables = "-optimize-unused-variables";

// The kernels, after the type aliases, the operator, its wrapper cujit_apply and the
// shape (cujit_block, cujit_items, cujit_warps). No header: a block reduction is a few
// lines, while CUB's headers cost NVRTC about a second per build. Constants are
// enumerators, not constexpr variables: NVRTC emits those as device variables.
constexpr const char* kernels_source = R"(
enum : unsigned long long { cujit_tile = static_cast<unsigned long long>(cujit_block) * cujit_items };

// A thread's running fold: empty until its first item.
struct cujit_fold {
  cujit_acc_t acc;
  bool have;
  __device__ __forceinline__ void add(cujit_acc_t x) {
    acc = have ? cujit_apply(acc, x) : x;
    have = true;
  }
};

// 16 bytes of items, loaded by one instruction.
template <class T>
struct alignas(16) cujit_vector {
  T item[16 / sizeof(T)];
};

// Whole tiles a thread reads per step: enough for 64 bytes of loads in flight, what one tile
// of a 4-byte type gives (4 vectors; CUB's int32 tiles load as much). A tile of a 1-byte
// type is one vector per thread and of a 2-byte type two: folding each before loading the
// next would keep a quarter or half of that in flight, short of what HBM needs to stream.
template <class T>
__device__ constexpr unsigned cujit_tiles_per_step() {
  return cujit_items * sizeof(T) >= 64 ? 1 : 64 / (cujit_items * sizeof(T));
}

// This thread's items of the whole tiles first, first + stride, ... (Tiles of them; `in`
// 16-byte aligned), folded: thread x reads vectors x, x + block, ... of each (coalesced),
// every load issued before the first fold.
template <class T, unsigned Tiles>
__device__ __forceinline__ cujit_acc_t cujit_fold_whole_tiles(const T* __restrict__ in,
                                                              unsigned long long first,
                                                              unsigned long long stride) {
  constexpr unsigned per_vector = 16 / sizeof(T);
  constexpr unsigned vectors = Tiles * (cujit_items / per_vector);
  cujit_vector<T> v[vectors];
#pragma unroll
  for (unsigned k = 0; k < Tiles; ++k) {
    const cujit_vector<T>* from =
        reinterpret_cast<const cujit_vector<T>*>(in + (first + k * stride) * cujit_tile) + threadIdx.x;
#pragma unroll
    for (unsigned i = 0; i < vectors / Tiles; ++i) v[k * (vectors / Tiles) + i] = from[i * cujit_block];
  }
  cujit_acc_t acc = static_cast<cujit_acc_t>(v[0].item[0]);
#pragma unroll
  for (unsigned j = 1; j < per_vector; ++j) acc = cujit_apply(acc, static_cast<cujit_acc_t>(v[0].item[j]));
#pragma unroll
  for (unsigned i = 1; i < vectors; ++i) {
#pragma unroll
    for (unsigned j = 0; j < per_vector; ++j) acc = cujit_apply(acc, static_cast<cujit_acc_t>(v[i].item[j]));
  }
  return acc;
}

// Folds tiles first, first + stride, ... of items[0, n) into this thread's fold: whole tiles
// of 16-byte aligned input as vectors (where Vectors: code the final pass does not need),
// cujit_tiles_per_step of them per step while the block has that many left, the rest one
// item per load in groups of four: the group's guarded loads are issued before its first
// fold (a fold right after each load would wait for each load in turn, which the final
// pass's 1024 partials at n = 2^22 paid four times), and a group past the end stops the
// tile (block-uniform). Thread x takes items x, x + block, ... of a tile, so in the partial
// last tile the threads holding values are the first ones.
template <class T, bool Vectors>
__device__ __forceinline__ void cujit_fold_tiles(const T* __restrict__ items, unsigned long long n,
                                                 unsigned long long first, unsigned long long stride,
                                                 cujit_fold& fold) {
  unsigned long long t = first;
  // Whole tiles as 16-byte vectors where the items tile 16 bytes (every scalar; a
  // user-defined type of 1, 2, 4, 8 or 16 bytes).
  if constexpr (Vectors && sizeof(T) <= 16 && 16 % sizeof(T) == 0) {
   if (reinterpret_cast<unsigned long long>(items) % 16 == 0) {
    const unsigned long long whole = n / cujit_tile;
    constexpr unsigned together = cujit_tiles_per_step<T>();
    if (together > 1) {
      for (; t + (together - 1) * stride < whole; t += together * stride) {
        fold.add(cujit_fold_whole_tiles<T, together>(items, t, stride));
      }
    }
    for (; t < whole; t += stride) fold.add(cujit_fold_whole_tiles<T, 1>(items, t, stride));
   }
  }
  enum : unsigned { group = 4 };
  for (; t * cujit_tile < n; t += stride) {
#pragma unroll 1
    for (unsigned i = 0; i < cujit_items; i += group) {
      const unsigned long long base = t * cujit_tile + i * cujit_block;
      if (base >= n) break;
      T v[group];
#pragma unroll
      for (unsigned j = 0; j < group; ++j) {
        const unsigned long long at = base + j * cujit_block + threadIdx.x;
        v[j] = at < n ? items[at] : T{};
      }
#pragma unroll
      for (unsigned j = 0; j < group; ++j) {
        if (base + j * cujit_block + threadIdx.x < n) fold.add(static_cast<cujit_acc_t>(v[j]));
      }
    }
  }
}

// x of the lane `offset` above: a scalar in one shuffle, a user-defined type (cujit_user_type)
// as 4-byte words.
// (A template, so that the branch not taken is not instantiated.)
template <class T>
__device__ __forceinline__ T cujit_shfl_down(T x, unsigned offset) {
  if constexpr (!cujit_user_type) {
    return __shfl_down_sync(0xffffffffu, x, offset);
  } else {
    enum : unsigned { words = (sizeof(T) + 3) / 4 };
    unsigned w[words] = {};
    unsigned char* bytes = reinterpret_cast<unsigned char*>(w);
#pragma unroll
    for (unsigned i = 0; i < sizeof(T); ++i) bytes[i] = reinterpret_cast<const unsigned char*>(&x)[i];
#pragma unroll
    for (unsigned i = 0; i < words; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], offset);
    T out;
#pragma unroll
    for (unsigned i = 0; i < sizeof(T); ++i) reinterpret_cast<unsigned char*>(&out)[i] = bytes[i];
    return out;
  }
}

// The fold of the values of threads [0, valid), 1 <= valid, in thread 0: shuffles within
// each warp, then thread 0 folds the warps' totals. Every thread of the block calls it.
__device__ __forceinline__ cujit_acc_t cujit_block_fold(cujit_acc_t x, unsigned valid,
                                                        cujit_acc_t* warp_totals) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned in_warp = valid <= warp * 32 ? 0 : valid - warp * 32 < 32 ? valid - warp * 32 : 32;
#pragma unroll
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    const cujit_acc_t other = cujit_shfl_down(x, offset);
    if (lane + offset < in_warp) x = cujit_apply(x, other);
  }
  if (lane == 0 && in_warp > 0) warp_totals[warp] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned warps = (valid + 31) / 32;
    for (unsigned w = 1; w < warps; ++w) x = cujit_apply(x, warp_totals[w]);
  }
  return x;
}

// Block b folds tiles b, b + grid, ... of in[0, n). The first pass (partials given, the
// grid at most the number of tiles, so every block has one) writes the block's fold to
// partials[b]. The single pass (no partials, one block) writes init and the fold to *out,
// or init alone for n = 0.
extern "C" __global__ void __launch_bounds__(cujit_block) cujit_reduce_tiles(
    const cujit_in_t* __restrict__ in, unsigned long long n, cujit_acc_t* partials, cujit_out_t* out,
    cujit_acc_t init) {
  __shared__ cujit_acc_t warp_totals[cujit_warps];
  if (n == 0) {
    if (threadIdx.x == 0) *out = static_cast<cujit_out_t>(init);
    return;
  }
  cujit_fold fold{cujit_acc_t{}, false};
  cujit_fold_tiles<cujit_in_t, true>(in, n, blockIdx.x, gridDim.x, fold);
  const unsigned long long from_first_tile = n - blockIdx.x * cujit_tile;
  const unsigned valid = from_first_tile < cujit_block ? static_cast<unsigned>(from_first_tile) : cujit_block;
  const cujit_acc_t total = cujit_block_fold(fold.acc, valid, warp_totals);
  if (threadIdx.x != 0) return;
  if (partials != nullptr) {
    partials[blockIdx.x] = total;
  } else {
    *out = static_cast<cujit_out_t>(cujit_apply(init, total));
  }
}

// Second pass: one block folds the partials (one per block of the first) and init into
// *out. Count 0 does nothing: a graph's node group keeps this node when its n falls to a
// single pass (ReduceNodes).
extern "C" __global__ void __launch_bounds__(cujit_block) cujit_reduce_final(
    const cujit_acc_t* __restrict__ partials, unsigned count, cujit_out_t* out, cujit_acc_t init) {
  __shared__ cujit_acc_t warp_totals[cujit_warps];
  if (count == 0) return;
  cujit_fold fold{cujit_acc_t{}, false};
  cujit_fold_tiles<cujit_acc_t, false>(partials, count, 0, 1, fold);
  const cujit_acc_t total = cujit_block_fold(fold.acc, count < cujit_block ? count : cujit_block, warp_totals);
  if (threadIdx.x == 0) *out = static_cast<cujit_out_t>(cujit_apply(init, total));
}
)";

void check_value_type(const Type& type, const char* role) {
  if (type.pointers != 0 || type.is_void() || type.scalar == Scalar::boolean) {
    throw Error(ErrorKind::usage, component,
                std::string(role) + " type " + type.str() +
                    " is not supported; expected int8..int64, uint8..uint64, float32 or float64");
  }
}

Signature operator_signature(const Type& acc) { return Signature{acc, {acc, acc}}; }

// The names a spec's value types go by in messages.
std::string value_types(const ReduceSpec& spec) {
  if (spec.user_type) return "user type " + spec.user_type->name;
  return spec.input.str() + " -> " + spec.output.str() + ", accumulator " + spec.accumulator.str();
}

// A user type's checks (Error(usage)): its name, size and alignment, and an operator that
// can take it.
void check_user_type(const ReduceSpec& spec) {
  const UserType& user = *spec.user_type;
  const std::string what = "user type '" + user.name + "'";
  if (!abi::is_identifier(user.name) || user.name.rfind("cujit_", 0) == 0) {
    throw Error(ErrorKind::usage, component, what + ": the name must be an identifier not starting with cujit_");
  }
  if (user.size == 0 || user.alignment == 0 || user.alignment > 256 || (user.alignment & (user.alignment - 1)) != 0 ||
      user.size % user.alignment != 0) {
    throw Error(ErrorKind::usage, component,
                what + " of " + std::to_string(user.size) + " bytes aligned to " + std::to_string(user.alignment) +
                    ": the size must be a positive multiple of the alignment, a power of two up to 256");
  }
  if (spec.op.kind() != Operator::Kind::cuda_source) {
    throw Error(ErrorKind::usage, component,
                what + " needs a CUDA C++ operator taking and returning " + user.name + "; the operator " +
                    spec.op.describe() + " has a signature of scalar types (" + std::string(to_string(spec.backend)) +
                    " backend)");
  }
}

// The user type's C++: its definition or opaque storage, and checks of its size and
// alignment (a static_assert naming both).
std::string user_type_definition(const UserType& user) {
  std::string s = user.definition.empty()
                      ? "struct alignas(" + std::to_string(user.alignment) + ") " + user.name +
                            " { unsigned char bytes[" + std::to_string(user.size) + "]; };\n"
                      : user.definition + "\n";
  s += "static_assert(sizeof(" + user.name + ") == " + std::to_string(user.size) + " && alignof(" + user.name +
       ") == " + std::to_string(user.alignment) + ", \"cujit reduce: user type " + user.name + " is not " +
       std::to_string(user.size) + " bytes aligned to " + std::to_string(user.alignment) + "\");\n";
  return s;
}

std::string builtin_body(Builtin op) {
  switch (op) {
    case Builtin::sum: return "return a + b;";
    case Builtin::min: return "return b < a ? b : a;";
    case Builtin::max: return "return a < b ? b : a;";
  }
  return "";
}

// How the kernel source names the operator: its symbol and, for builtins, its definition
// (other operators are declared there and linked).
struct OperatorCode {
  std::string symbol;
  std::string inline_definition;
};

OperatorCode operator_declaration(const ReduceSpec& spec) {
  const Operator& op = spec.op;
  if (op.kind() != Operator::Kind::builtin) return {op.name(), {}};
  const std::string symbol = "cujit_reduce_" + std::string(to_string(*op.builtin_op()));
  return {symbol, "extern \"C\" __device__ cujit_acc_t " + symbol + "(cujit_acc_t a, cujit_acc_t b) { " +
                      builtin_body(*op.builtin_op()) + " }\n"};
}

// The operator's code to link, if it is not defined in the kernel source; its signature
// checked against the accumulator.
std::optional<LinkableCode> operator_link_code(const ReduceSpec& spec, BuildCache& cache) {
  const Operator& op = spec.op;
  if (const auto& user = spec.user_type) {
    // A CUDA C++ operator (check_user_type) sees the type's definition first.
    const LinkableCode& code = *Access::code(op);
    return LinkableCode::cuda_source(user_type_definition(*user) + code.bytes(), code.name());
  }
  const Type& acc = spec.accumulator;
  const Signature wanted = operator_signature(acc);
  switch (op.kind()) {
    case Operator::Kind::builtin: return std::nullopt;
    case Operator::Kind::device_function: {
      const abi::DeviceFunction& function = *Access::function(op);
      if (!(function.signature == wanted)) {
        throw Error(ErrorKind::usage, component,
                    "operator '" + function.name + "' is " + function.signature.str() +
                        "; a reduction with accumulator " + acc.str() + " needs " + wanted.str());
      }
      abi::CompileOptions options;
      options.abi = abi::Abi::c;
      options.output = CompileTarget::ltoir;
      options.arch = spec.arch;
      options.nvrtc_options = spec.config.nvrtc_options;
      return abi::compile(function, options, cache).code;
    }
    case Operator::Kind::cuda_source:
    case Operator::Kind::foreign: {
      if (op.kind() == Operator::Kind::foreign && !(*Access::signature(op) == wanted)) {
        throw Error(ErrorKind::usage, component,
                    "operator '" + op.name() + "' is " + Access::signature(op)->str() +
                        "; a reduction with accumulator " + acc.str() + " needs " + wanted.str());
      }
      return *Access::code(op);
    }
  }
  throw Error(ErrorKind::usage, component, "unknown operator kind");
}

// The type aliases and the operator's declaration (or a built-in's definition): the head of
// both backends' sources.
std::string types_and_operator(const ReduceSpec& spec, const OperatorCode& op) {
  std::string s;
  if (const auto& user = spec.user_type) {
    s += user_type_definition(*user);
    s += "typedef " + user->name + " cujit_in_t;\ntypedef " + user->name + " cujit_out_t;\ntypedef " + user->name +
         " cujit_acc_t;\nenum : bool { cujit_user_type = true };\n";
  } else {
    s += "typedef " + spec.input.cuda() + " cujit_in_t;\n";
    s += "typedef " + spec.output.cuda() + " cujit_out_t;\n";
    s += "typedef " + spec.accumulator.cuda() + " cujit_acc_t;\n";
    s += "enum : bool { cujit_user_type = false };\n";
  }
  s += op.inline_definition.empty()
           ? "extern \"C\" __device__ cujit_acc_t " + op.symbol + "(cujit_acc_t, cujit_acc_t);\n"
           : op.inline_definition;
  return s;
}

std::string generate_source(const ReduceSpec& spec, const OperatorCode& op) {
  std::string s = "// Generated by cujit::reduce: " + value_types(spec) + ", operator " + spec.op.describe() + "\n";
  s += types_and_operator(spec, op);
  s += "__device__ __forceinline__ cujit_acc_t cujit_apply(cujit_acc_t a, cujit_acc_t b) { return " +
       op.symbol + "(a, b); }\n";
  s += "enum : unsigned { cujit_block = " + std::to_string(block_size) + ", cujit_items = " +
       std::to_string(items_per_thread) + ", cujit_warps = cujit_block / 32 };\n";
  return s + kernels_source;
}

// The options of the generated kernel's compile: the user's include directories and
// options, C++17. No toolkit include directory: the source includes nothing, so its compile
// reads no file.
CompileOptions kernel_options(const ReduceSpec& spec) {
  CompileOptions options;
  options.arch = spec.arch;
  options.target = CompileTarget::ltoir;
  options.include_paths = spec.config.include_dirs;
  options.options.push_back("-std=c++17");
  options.options.insert(options.options.end(), spec.config.nvrtc_options.begin(),
                         spec.config.nvrtc_options.end());
  return options;
}

// The options of a CUDA C++ operator's compile: the kernel's, the toolkit's CCCL and CUDA
// headers (an operator may include them) and, if configured, the precompiled header.
CompileOptions operator_options(const ReduceSpec& spec) {
  CompileOptions options = kernel_options(spec);
  options.include_paths.push_back(toolkit::cccl_dir().string());
  options.include_paths.push_back(toolkit::include_dir().string());
  if (spec.config.precompiled_header) options.options.insert(options.options.begin() + 1, "-pch");
  return options;
}

int multiprocessors() {
  const auto& api = detail::driver();
  detail::ensure_context();
  CUdevice device = 0;
  detail::check(api.cuCtxGetDevice(&device), "cuCtxGetDevice", "reading the current device");
  int count = 0;
  detail::check(api.cuDeviceGetAttribute(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                "cuDeviceGetAttribute", "reading the multiprocessor count");
  return count;
}

// Whole tiles a block folds per step (the device's cujit_tiles_per_step): 4 for 1-byte
// items, 2 for 2-byte ones, else 1.
std::uint64_t tiles_per_step(std::size_t item_size) {
  const std::uint64_t tile_bytes = std::uint64_t{items_per_thread} * item_size;
  return tile_bytes >= 64 ? 1 : 64 / tile_bytes;
}

// Blocks of the tiles kernel: a block per tile up to one per multiprocessor, then one per
// step's worth of tiles, at most a full wave. A block with a single tile of small items
// holds too few loads in flight to stream: at n = 2^22 (H100), int8 took 4.4 us in 1024
// blocks of one 4 KiB tile against CUB's 3.6 us, and 3.8 us in 256 blocks of one 4-tile
// step. Below a block per multiprocessor, more blocks win: grouping 2^16 and 2^18 int8 into
// steps took them from 94% of CUB's speed to 90%.
std::uint64_t tiles_grid(std::uint64_t n, std::size_t item_size) {
  const std::uint64_t tiles = (n + tile_items - 1) / tile_items;
  const std::uint64_t per_step = tiles_per_step(item_size);
  const std::uint64_t sms = static_cast<std::uint64_t>(multiprocessors());
  const std::uint64_t most = sms * blocks_per_multiprocessor;
  const std::uint64_t blocks = std::max(std::min(tiles, sms), (tiles + per_step - 1) / per_step);
  return std::min(blocks, most);
}

// The cubin's kernels, loaded where a device is present.
void load(ReduceBuild& build) {
  if (!has_device()) return;
  build.module = Module::shared(build.code, build.key);
  build.tiles.emplace(build.module->kernel(build.tiles_kernel));
  build.final.emplace(build.module->kernel(build.final_kernel));
  if (!build.single_kernel.empty()) build.single.emplace(build.module->kernel(build.single_kernel));
}

}  // namespace

std::string_view to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::handwritten: return "handwritten";
    case Backend::cub: return "cub";
  }
  return "unknown";
}

std::string_view to_string(Builtin op) noexcept {
  switch (op) {
    case Builtin::sum: return "sum";
    case Builtin::min: return "min";
    case Builtin::max: return "max";
  }
  return "unknown";
}

Operator Operator::builtin(Builtin op) {
  Operator out;
  out.kind_ = Kind::builtin;
  out.builtin_ = op;
  out.name_ = std::string(to_string(op));
  return out;
}

Operator Operator::device_function(abi::DeviceFunction function) {
  Operator out;
  out.kind_ = Kind::device_function;
  out.name_ = function.name;
  out.function_ = std::move(function);
  return out;
}

Operator Operator::cuda_source(std::string source, std::string name) {
  if (!abi::is_identifier(name)) {
    throw Error(ErrorKind::usage, component, "operator name '" + name + "' is not an identifier");
  }
  Operator out;
  out.kind_ = Kind::cuda_source;
  out.code_ = LinkableCode::cuda_source(std::move(source), name + ".cu");
  out.name_ = std::move(name);
  return out;
}

Operator Operator::foreign(LinkableCode code, std::string name, Signature signature) {
  if (code.format() != Format::ltoir && code.format() != Format::ptx) {
    throw Error(ErrorKind::usage, component,
                "operator code '" + code.name() + "' is " + std::string(to_string(code.format())) +
                    "; a foreign operator is LTO-IR or PTX");
  }
  Operator out;
  out.kind_ = Kind::foreign;
  out.code_ = std::move(code);
  out.name_ = std::move(name);
  out.signature_ = std::move(signature);
  return out;
}

std::string Operator::describe() const {
  switch (kind_) {
    case Kind::builtin: return name_;
    case Kind::device_function: return "device function " + name_;
    case Kind::cuda_source: return "CUDA C++ " + name_;
    case Kind::foreign: return "foreign " + std::string(to_string(code_->format())) + " " + name_;
  }
  return name_;
}

KernelCompile kernel_compile(const ReduceSpec& spec) {
  if (spec.backend == Backend::cub) {
    const OperatorCode op = operator_declaration(spec);
    return cub_backend::kernel_compile(spec, value_types(spec), types_and_operator(spec, op), op.symbol);
  }
  return KernelCompile{Program(generate_source(spec, operator_declaration(spec)), "cujit_reduce.cu"),
                       kernel_options(spec)};
}

LinkOptions link_options(const ReduceSpec& spec) {
  LinkOptions link;
  link.arch = spec.arch;
  link.lto = true;
  link.backend = LinkerBackend::nvjitlink;
  link.compile = operator_options(spec);
  link.nvjitlink_options = {drop_unread_variables};
  return link;
}

namespace {

// The cubin of a spec (the link key names it), without a device.
ReduceBuild link_reduce(const ReduceSpec& spec, BuildCache& cache) {
  if (spec.user_type) {
    check_user_type(spec);
  } else {
    check_value_type(spec.input, "input");
    check_value_type(spec.output, "output");
    check_value_type(spec.accumulator, "accumulator");
  }
  const std::optional<LinkableCode> op = operator_link_code(spec, cache);
  const KernelCompile kernel = kernel_compile(spec);
  Linker linker(link_options(spec), cache);
  const CachedCompile compiled = compile_cached(kernel.program, kernel.options, cache);
  linker.add(compiled.result.code);
  if (op) linker.add(*op);
  CachedLink linked = linker.link_cached();
  ReduceBuild build{.code = std::move(linked.result.code),
                     .tiles_kernel = tiles_kernel_name,
                     .final_kernel = final_kernel_name,
                     .single_kernel = {},
                     .backend = spec.backend,
                     .tile_items = tile_items,
                     .final_block_size = block_size,
                     .single_pass_limit = single_pass_tiles * tile_items,
                     .accumulator_size = spec.user_type ? spec.user_type->size : spec.accumulator.size(),
                     .input_size = spec.user_type ? spec.user_type->size : spec.input.size(),
                     .output_size = spec.user_type ? spec.user_type->size : spec.output.size(),
                     .block_size = block_size,
                     .items_per_thread = items_per_thread,
                     .source = linked.source,
                     .key = std::move(linked.key),
                     .module = nullptr,
                     .tiles = std::nullopt,
                     .final = std::nullopt,
                     .single = std::nullopt};
  if (spec.backend == Backend::cub) cub_backend::set_shape(build, compiled.result, kernel.program.name());
  return build;
}

void add_field(std::string& key, std::string_view field) {
  key += std::to_string(field.size());
  key += ':';
  key += field;
}

// The memo's pre-key of a spec (BuildCache::recall): every field of the spec, by value, plus
// the context the kernels are loaded into; built from short strings, so a recall costs no
// digest (a foreign operator's code, given as bytes, is named by its SHA-256). Empty when
// the build reads files that can change while the process runs (include directories, a
// CUDA C++ operator's own includes): such specs go through the cache's keyed tiers.
std::string memo_key(const ReduceSpec& spec) {
  const Operator& op = spec.op;
  if (!spec.config.include_dirs.empty() || op.kind() == Operator::Kind::cuda_source ||
      detail::HermeticInputs::options_name_files(spec.config.nvrtc_options)) {
    return {};
  }
  std::string key = "reduce:";
  add_field(key, to_string(spec.backend));
  if (const auto& user = spec.user_type) {
    add_field(key, "user");
    add_field(key, user->name);
    add_field(key, std::to_string(user->size));
    add_field(key, std::to_string(user->alignment));
    add_field(key, user->definition);
  }
  add_field(key, spec.input.str());
  add_field(key, spec.output.str());
  add_field(key, spec.accumulator.str());
  add_field(key, spec.arch.sm());
  add_field(key, spec.config.precompiled_header ? "pch" : "no-pch");
  for (const std::string& option : spec.config.nvrtc_options) add_field(key, option);
  add_field(key, "op");
  add_field(key, std::to_string(static_cast<int>(op.kind())));
  add_field(key, op.name());
  if (const auto& function = Access::function(op)) {
    // A body is compiled into the kernel's source: one that can include files is keyed
    // by their content in the tiers, never here.
    if (function->body.find("include") != std::string::npos) return {};
    add_field(key, function->module);
    add_field(key, function->signature.str());
    for (const std::string& name : function->param_names) add_field(key, name);
    add_field(key, function->body);
    add_field(key, function->kernel ? "kernel" : "device");
  }
  if (const auto& code = Access::code(op)) {
    add_field(key, to_string(code->format()));
    add_field(key, code->name());
    add_field(key, detail::content_digest(code->bytes()));
  }
  if (const auto& signature = Access::signature(op)) add_field(key, signature->str());
  // Loaded kernels belong to a context.
  if (has_device()) {
    detail::ensure_context();
    CUcontext context = nullptr;
    detail::check(detail::driver().cuCtxGetCurrent(&context), "cuCtxGetCurrent", "querying the current context");
    add_field(key, std::to_string(reinterpret_cast<std::uintptr_t>(context)));
  }
  return key;
}

std::shared_ptr<const ReduceBuild> memorized_build(const ReduceSpec& spec, BuildCache& cache, CacheSource& from) {
  const std::string pre_key = memo_key(spec);
  if (!pre_key.empty()) {
    if (std::shared_ptr<const ReduceBuild> memorized = cache.recall<ReduceBuild>(pre_key)) {
      from = CacheSource::memo;
      // The planted slowdown repeats the whole hit (support/planted_slowdown.hpp).
      if (detail::planted_repeat()) return memorized_build(spec, cache, from);
      return memorized;
    }
  }
  const detail::PlantedDelay planted;
  auto build = std::make_shared<ReduceBuild>(link_reduce(spec, cache));
  load(*build);
  from = build->source;
  if (!pre_key.empty()) cache.memorize<ReduceBuild>(pre_key, build, build->code.bytes().size());
  return build;
}

}  // namespace

std::shared_ptr<const ReduceBuild> build_reduce_shared(const ReduceSpec& spec, BuildCache& cache) {
  CacheSource from = CacheSource::built;
  return memorized_build(spec, cache, from);
}

ReduceBuild build_reduce(const ReduceSpec& spec, BuildCache& cache) {
  CacheSource from = CacheSource::built;
  ReduceBuild copy = *memorized_build(spec, cache, from);
  copy.source = from;
  return copy;
}

Launch launch_for(const ReduceBuild& build, std::uint64_t n) {
  if (build.backend == Backend::cub) return cub_backend::launch_for(build, n);
  if (n <= build.single_pass_limit) return Launch{true, 1};
  return Launch{false, tiles_grid(n, build.input_size)};
}

namespace {
void check_loaded(const ReduceBuild& build) {
  if (!build.tiles || !build.final || (build.backend == Backend::cub && !build.single)) {
    throw Error(ErrorKind::cuda, component,
                "the reduce build " + build.key + " was not loaded: " +
                    (has_device() ? std::string("build it with a device present") : no_device_reason()));
  }
}

std::vector<KernelArg> kernel_args(const std::vector<ArgValue>& values) {
  std::vector<KernelArg> args;
  args.reserve(values.size());
  for (const ArgValue& value : values) args.push_back(KernelArg{value.bytes.data(), value.bytes.size()});
  return args;
}
}  // namespace

std::size_t temp_bytes(const ReduceBuild& build, std::uint64_t n) {
  const Launch launch = launch_for(build, n);
  return launch.single_pass ? 0 : static_cast<std::size_t>(launch.blocks) * build.accumulator_size;
}

std::size_t max_temp_bytes(const ReduceBuild& build) {
  if (build.backend == Backend::cub) {
    check_loaded(build);
    return static_cast<std::size_t>(cub_backend::max_blocks(build)) * build.accumulator_size;
  }
  return static_cast<std::size_t>(multiprocessors()) * blocks_per_multiprocessor * build.accumulator_size;
}

namespace {
void check_runnable(const ReduceBuild& build, const ArgValue& init) {
  check_loaded(build);
  if (init.bytes.size() != build.accumulator_size) {
    throw Error(ErrorKind::usage, component,
                "init is " + std::to_string(init.bytes.size()) + " bytes; the accumulator is " +
                    std::to_string(build.accumulator_size));
  }
}

const ReduceBuild& loaded(const std::shared_ptr<const ReduceBuild>& build, const ArgValue& init) {
  if (!build) throw Error(ErrorKind::usage, component, "ReduceNodes: no build");
  check_runnable(*build, init);
  return *build;
}
}  // namespace

void reduce_into(const ReduceBuild& build, DevicePtr in, DevicePtr out, std::uint64_t n,
                 const ArgValue& init, StreamHandle stream, DevicePtr temp, std::size_t temp_size) {
  check_runnable(build, init);
  const KernelArg init_arg{init.bytes.data(), init.bytes.size()};
  const unsigned long long count = n;
  LaunchConfig one_block;
  one_block.block.x = build.block_size;
  one_block.stream = stream;
  const Launch launch = launch_for(build, n);
  const bool cub = build.backend == Backend::cub;
  if (launch.single_pass && cub) {
    one_block.block.x = build.final_block_size;
    build.single->launch(one_block, kernel_args(cub_backend::single_args(in, out, n, init)));
    return;
  }
  if (launch.single_pass) {
    const DevicePtr no_partials = 0;
    const std::vector<KernelArg> args{arg(in), arg(count), arg(no_partials), arg(out), init_arg};
    build.tiles->launch(one_block, args);
    return;
  }
  const std::size_t needed = static_cast<std::size_t>(launch.blocks) * build.accumulator_size;
  std::optional<DeviceBuffer> owned;
  if (temp == 0) {
    // An allocation and a synchronisation cannot be captured: refuse before enqueuing.
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    detail::check(detail::driver().cuStreamIsCapturing(static_cast<CUstream>(stream), &capturing),
                  "cuStreamIsCapturing", "reduce_into: checking for a stream capture");
    if (capturing != CU_STREAM_CAPTURE_STATUS_NONE) {
      throw Error(ErrorKind::usage, component,
                  "reduce_into of " + std::to_string(n) + " items is being captured and needs " +
                      std::to_string(needed) + " bytes of temporary storage: pass temp (temp_bytes or max_temp_bytes)");
    }
    owned.emplace(needed);
    temp = owned->ptr();
  } else if (temp_size < needed) {
    throw Error(ErrorKind::usage, component,
                "temporary storage of " + std::to_string(temp_size) + " bytes; " +
                    std::to_string(n) + " items need " + std::to_string(needed));
  }
  LaunchConfig grid = one_block;
  grid.grid.x = static_cast<unsigned>(launch.blocks);
  if (cub) {
    build.tiles->launch(grid, kernel_args(cub_backend::tiles_args(build, in, temp, n, launch.blocks)));
    one_block.block.x = build.final_block_size;
    build.final->launch(one_block, kernel_args(cub_backend::final_args(temp, out, launch.blocks, init)));
    if (owned) synchronize(stream);
    return;
  }
  build.tiles->launch(grid, std::vector<KernelArg>{arg(in), arg(count), arg(temp), arg(out), init_arg});
  const auto partials = static_cast<unsigned>(launch.blocks);
  build.final->launch(one_block, std::vector<KernelArg>{arg(temp), arg(partials), arg(out), init_arg});
  // Owned storage is freed when this returns: the work using it must be done by then.
  if (owned) synchronize(stream);
}

// ---- ReduceNodes -------------------------------------------------------------------------

ReduceNodes::ReduceNodes(std::shared_ptr<const ReduceBuild> build, DevicePtr in, DevicePtr out,
                         std::uint64_t n, ArgValue init, DevicePtr temp, std::size_t temp_size,
                         std::vector<Node> deps)
    : build_(std::move(build)),
      in_(in),
      out_(out),
      init_(std::move(init)),
      temp_(temp),
      temp_size_(temp_size),
      tiles_(*loaded(build_, init_).tiles, {}, std::move(deps)),
      final_(*build_->final, {}, {tiles_}) {
  tiles_.set_label("reduce tiles");
  final_.set_label("reduce final");
  set_input(in, n);
}

void ReduceNodes::set_input(DevicePtr in, std::uint64_t n) {
  const ReduceBuild& build = *build_;
  if (build.backend == Backend::cub) {
    // Two passes at every n (a kernel node keeps its kernel): DeviceReduceKernel on at least
    // one block, then the single tile over its partials, or over none for n = 0, which
    // writes init (the first pass's one block then folds no item into a partial nobody reads).
    const std::uint64_t blocks = cub_backend::graph_blocks(build, n);
    const std::size_t needed = static_cast<std::size_t>(blocks) * build.accumulator_size;
    if (temp_ == 0 || temp_size_ < needed) {
      throw Error(ErrorKind::usage, component,
                  "ReduceNodes (CUB backend): temporary storage of " + std::to_string(temp_size_) + " bytes; " +
                      std::to_string(n) + " items need " + std::to_string(needed) +
                      " (max_temp_bytes covers every n)");
    }
    in_ = in;
    n_ = n;
    tiles_.args() = cub_backend::tiles_args(build, in_, temp_, n, blocks);
    tiles_.launch({static_cast<unsigned>(blocks)}, {build.block_size});
    final_.args() = cub_backend::final_args(temp_, out_, n == 0 ? 0 : blocks, init_);
    final_.launch({1}, {build.final_block_size});
    return;
  }
  const Launch launch = launch_for(build, n);
  const std::size_t needed = temp_bytes(build, n);
  if (!launch.single_pass && (temp_ == 0 || temp_size_ < needed)) {
    throw Error(ErrorKind::usage, component,
                "ReduceNodes: temporary storage of " + std::to_string(temp_size_) + " bytes; " +
                    std::to_string(n) + " items need " + std::to_string(needed) + " (max_temp_bytes covers every n)");
  }
  in_ = in;
  n_ = n;
  const unsigned long long count = n;
  const DevicePtr partials = launch.single_pass ? 0 : temp_;
  const auto blocks = static_cast<unsigned>(launch.blocks);
  tiles_.args() = {arg_value(in_), arg_value(count), arg_value(partials), arg_value(out_), init_};
  tiles_.launch({blocks}, {build.block_size});
  const unsigned final_count = launch.single_pass ? 0u : blocks;
  final_.args() = {arg_value(partials), arg_value(final_count), arg_value(out_), init_};
  final_.launch({1}, {build.block_size});
}

void ReduceNodes::update(GraphExec& exec) const {
  exec.update(tiles_);
  exec.update(final_);
}

}  // namespace cujit::reduce
