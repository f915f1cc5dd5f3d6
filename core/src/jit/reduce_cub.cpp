#include "jit/reduce_cub.hpp"

#include <algorithm>

#include "cujit/error.hpp"
#include "cujit/toolkit.hpp"
#include "driver/driver_api.hpp"

namespace cujit::reduce::cub_backend {

namespace {

constexpr const char* component = "reduce";
// CUB's DispatchReduce::InvokePasses: at most occupancy x multiprocessors x this many blocks
// (cub::detail::subscription_factor, CUB_PTX_SUBSCRIPTION_FACTOR).
constexpr std::uint64_t subscription_factor = 5;

// The kernels, as the name expressions NVRTC instantiates and lowers. They are the three
// DispatchReduce launches: the single tile over the input, the first pass, the single tile
// over the partials (CUB's second pass takes int offsets). Offsets are 64-bit: reduce_into
// takes any n.
constexpr const char* single_expression =
    "cub::detail::reduce::DeviceReduceSingleTileKernel<cujit_policy, const cujit_in_t*, cujit_out_t*, "
    "cujit_offset_t, cujit_op, cujit_acc_t, cujit_acc_t>";
constexpr const char* tiles_expression =
    "cub::detail::reduce::DeviceReduceKernel<cujit_policy, const cujit_in_t*, cujit_offset_t, cujit_op, "
    "cujit_acc_t, ::cuda::std::__identity>";
constexpr const char* final_expression =
    "cub::detail::reduce::DeviceReduceSingleTileKernel<cujit_policy, cujit_acc_t*, cujit_out_t*, int, "
    "cujit_op, cujit_acc_t, cujit_acc_t>";
// The policy CUB selected for the compile's architecture (ChainedPolicy::ActivePolicy under
// __CUDA_ARCH__, what the kernels' __launch_bounds__ and agents use), carried to the host in
// the lowered name of an empty kernel template: its arguments are mangled as Li<value>E.
constexpr const char* shape_expression =
    "cujit_cub_shape<cujit_active::ReducePolicy::BLOCK_THREADS, cujit_active::ReducePolicy::ITEMS_PER_THREAD, "
    "cujit_active::SingleTilePolicy::BLOCK_THREADS, cujit_active::SingleTilePolicy::ITEMS_PER_THREAD, "
    "sizeof(cub::GridEvenShare<cujit_offset_t>)>";

// CCCL 3.0's tuning_reduce.cuh does not compile under NVRTC as it stands: its
// ReducePolicyWrapper's sub-policy getters name cub::detail::PolicyWrapper, which util_device.cuh
// declares only outside NVRTC (host dispatch, which this source has no use for). The macro is
// CUB's own customisation point (#ifndef); defined empty, the wrapper loses the getters only
// host dispatch calls. Its constexpr helpers carry no execution space: -default-device (options).
constexpr const char* cub_source = R"(
#define CUB_DEFINE_SUB_POLICY_GETTER(name)
#include <cub/device/dispatch/kernels/reduce.cuh>
#include <cub/device/dispatch/tuning/tuning_reduce.cuh>

// The user's operator as CUB's reduction functor (an empty struct: one byte of argument).
struct cujit_op {
  __device__ __forceinline__ cujit_acc_t operator()(const cujit_acc_t& a, const cujit_acc_t& b) const {
    return cujit_apply(a, b);
  }
};
typedef unsigned long long cujit_offset_t;
// The policy CUB's DeviceReduce dispatch uses for these types and this operator.
typedef cub::detail::reduce::policy_hub<cujit_acc_t, cujit_offset_t, cujit_op>::MaxPolicy cujit_policy;
typedef cujit_policy::ActivePolicy cujit_active;
template <int ReduceThreads, int ReduceItems, int SingleThreads, int SingleItems, int EvenShareBytes>
__global__ void cujit_cub_shape() {}
)";

// The host's copy of cub::GridEvenShare<unsigned long long> (grid/grid_even_share.cuh), the
// first pass's argument, filled as its DispatchInit does. set_shape checks its size against
// the compile's sizeof, so a CCCL that changes the layout is refused, not misread.
struct GridEvenShare {
  int total_tiles = 0;
  int big_shares = 0;
  std::uint64_t big_share_items = 0;
  std::uint64_t normal_share_items = 0;
  std::uint64_t normal_base_offset = 0;
  std::uint64_t num_items = 0;
  int grid_size = 0;
  std::uint64_t block_offset = 0;
  std::uint64_t block_end = 0;
  std::uint64_t block_stride = 0;
};

GridEvenShare even_share(std::uint64_t n, std::uint64_t blocks, std::uint64_t tile_items) {
  GridEvenShare share;
  share.block_offset = n;
  share.block_end = n;
  share.num_items = n;
  share.total_tiles = static_cast<int>((n + tile_items - 1) / tile_items);
  share.grid_size = static_cast<int>(blocks);
  if (blocks == 0) return share;
  const std::uint64_t average = static_cast<std::uint64_t>(share.total_tiles) / blocks;
  share.big_shares = static_cast<int>(static_cast<std::uint64_t>(share.total_tiles) - average * blocks);
  share.normal_share_items = average * tile_items;
  share.normal_base_offset = static_cast<std::uint64_t>(share.big_shares) * tile_items;
  share.big_share_items = share.normal_share_items + tile_items;
  return share;
}

const detail::DriverApi& context_api() {
  const auto& api = detail::driver();
  detail::ensure_context();
  return api;
}

std::uint64_t multiprocessors() {
  const auto& api = context_api();
  CUdevice device = 0;
  detail::check(api.cuCtxGetDevice(&device), "cuCtxGetDevice", "reading the current device");
  int count = 0;
  detail::check(api.cuDeviceGetAttribute(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                "cuDeviceGetAttribute", "reading the multiprocessor count");
  return static_cast<std::uint64_t>(count);
}

const ArgValue empty_functor = ArgValue{{0}};

}  // namespace

KernelCompile kernel_compile(const ReduceSpec& spec, const std::string& value_types,
                             const std::string& types_and_operator, const std::string& op_symbol) {
  std::string s = "// Generated by cujit::reduce (CUB backend): " + value_types + ", operator " +
                  spec.op.describe() + "\n";
  s += types_and_operator;
  s += "__device__ __forceinline__ cujit_acc_t cujit_apply(cujit_acc_t a, cujit_acc_t b) { return " +
       op_symbol + "(a, b); }\n";
  s += cub_source;
  CompileOptions options;
  options.arch = spec.arch;
  options.target = CompileTarget::ltoir;
  // The user's directories first (a CCCL placed there is the one included), then the
  // toolkit's CCCL and CUDA headers. Every header the compile reads is in the key by content
  // (compile_cached's hermetic recipe).
  options.include_paths = spec.config.include_dirs;
  options.include_paths.push_back(toolkit::cccl_dir().string());
  options.include_paths.push_back(toolkit::include_dir().string());
  options.options.push_back("-std=c++17");
  // CUB's tuning headers define unannotated constexpr functions (classify_accum_size...),
  // host functions to NVRTC unless unannotated means __device__.
  options.options.push_back("-default-device");
  options.options.insert(options.options.end(), spec.config.nvrtc_options.begin(),
                         spec.config.nvrtc_options.end());
  options.name_expressions = {single_expression, tiles_expression, final_expression, shape_expression};
  return KernelCompile{Program(std::move(s), "cujit_reduce_cub.cu"), std::move(options)};
}

void set_shape(ReduceBuild& build, const CompileResult& compiled, const std::string& program) {
  const auto& lowered = compiled.code.lowered_names();
  auto name_of = [&](const char* expression) {
    const auto found = lowered.find(expression);
    if (found == lowered.end() || found->second.empty()) {
      throw Error(ErrorKind::compile, component,
                  program + ": the compile has no lowered name for '" + std::string(expression) + "'");
    }
    return found->second;
  };
  build.single_kernel = name_of(single_expression);
  build.tiles_kernel = name_of(tiles_expression);
  build.final_kernel = name_of(final_expression);
  const std::string shape = name_of(shape_expression);
  std::vector<std::uint64_t> values;
  // Each template argument is mangled as Li<digits>E.
  for (std::size_t at = shape.find("Li"); at != std::string::npos; at = shape.find("Li", at + 2)) {
    std::size_t end = at + 2;
    while (end < shape.size() && shape[end] >= '0' && shape[end] <= '9' && end - at < 12) ++end;
    if (end == at + 2 || end >= shape.size() || shape[end] != 'E') continue;
    values.push_back(std::stoull(shape.substr(at + 2, end - at - 2)));
  }
  if (values.size() != 5 || std::find(values.begin(), values.end(), 0) != values.end()) {
    throw Error(ErrorKind::compile, component,
                program + ": CUB's policy could not be read from the lowered name '" + shape + "'");
  }
  if (values[4] != sizeof(GridEvenShare)) {
    throw Error(ErrorKind::compile, component,
                program + ": this CCCL's cub::GridEvenShare<unsigned long long> is " + std::to_string(values[4]) +
                    " bytes; cujit fills the " + std::to_string(sizeof(GridEvenShare)) +
                    "-byte layout of CCCL 2.x-3.x and cannot launch DeviceReduceKernel with it");
  }
  build.block_size = static_cast<unsigned>(values[0]);
  build.items_per_thread = static_cast<unsigned>(values[1]);
  build.tile_items = values[0] * values[1];
  build.final_block_size = static_cast<unsigned>(values[2]);
  build.single_pass_limit = values[2] * values[3];
}

std::uint64_t max_blocks(const ReduceBuild& build) {
  const auto& api = context_api();
  int occupancy = 0;
  detail::check(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    &occupancy, static_cast<CUfunction>(build.tiles->handle()), static_cast<int>(build.block_size), 0),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor", "reduce: the occupancy of " + build.tiles_kernel);
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(occupancy) * multiprocessors() * subscription_factor);
}

Launch launch_for(const ReduceBuild& build, std::uint64_t n) {
  if (n <= build.single_pass_limit) return Launch{true, 1};
  const std::uint64_t tiles = (n + build.tile_items - 1) / build.tile_items;
  return Launch{false, std::min(tiles, max_blocks(build))};
}

std::uint64_t graph_blocks(const ReduceBuild& build, std::uint64_t n) {
  if (n <= build.tile_items) return 1;
  const std::uint64_t tiles = (n + build.tile_items - 1) / build.tile_items;
  return std::min(tiles, max_blocks(build));
}

std::vector<ArgValue> single_args(DevicePtr in, DevicePtr out, std::uint64_t n, const ArgValue& init) {
  const unsigned long long count = n;
  return {arg_value(in), arg_value(out), arg_value(count), empty_functor, init, empty_functor};
}

std::vector<ArgValue> tiles_args(const ReduceBuild& build, DevicePtr in, DevicePtr partials, std::uint64_t n,
                                 std::uint64_t blocks) {
  const unsigned long long count = n;
  return {arg_value(in), arg_value(partials), arg_value(count),
          arg_value(even_share(n, blocks, build.tile_items)), empty_functor, empty_functor};
}

std::vector<ArgValue> final_args(DevicePtr partials, DevicePtr out, std::uint64_t count, const ArgValue& init) {
  const int items = static_cast<int>(count);
  return {arg_value(partials), arg_value(out), arg_value(items), empty_functor, init, empty_functor};
}

}  // namespace cujit::reduce::cub_backend
