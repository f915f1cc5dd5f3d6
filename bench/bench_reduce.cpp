// The reduce: its build and its cache, and reduce_into throughput.
//
// reduce_build (host time, no GPU needed): cold (a fresh NVRTC program without the
// precompiled header, cache off), pch_warm (a second type, float64, in a process that has
// built int32 with the precompiled header on; cache off: the generated kernel includes no
// header, so this is the second build's own cost), memory_hit, disk_hit (a fresh cache object
// over a prepared directory, in this process) and disk_hit_new_process (the executable
// spawned again, which creates its CUDA context, then times one build from the disk tier).
//
// reduce_into (needs a device): sums of every type the reduce supports (items, accumulator
// and result of one type), an argmin over a user-defined {float, int} pair, int32 and float64 at n = 1 .. 2^28, the other eight at the sizes
// the goal is judged at (register_type says which), against their floors, CUB's
// DeviceReduce compiled ahead of time by nvcc for the same types and the GPU's
// measured copy bandwidth (a device-to-device copy, bytes read plus written). GPU time from the CUPTI activity records (kernels, memcpy) each
// iteration's own calls issued, correlated by id and flushed once per repetition
// (support/cupti_timer.hpp), set with UseManualTime; GB/s in the counters. Warm-up: one
// untimed run per benchmark. CUPTI is attached from the first reduce_into benchmark on,
// for cujit and both floors alike; the reduce_build families run before it.
//
// pair/reduce_loop/graph_over_stream (needs a device; runs before CUPTI is attached): 100
// reduce_into calls in a row (int32 sum into one output, caller temporary storage) launched
// as one captured graph against the same 100 calls on the stream, host wall time of each
// side up to its synchronisation and the result read back (which must be byte-identical),
// interleaved round by round (support/paired.hpp): the ratio graph / stream with its 95%
// interval, n = 2^10 (one kernel per call) and 2^18 (two).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "aot/cub_reduce.hpp"
#include "cujit/device.hpp"
#include "cujit/graph.hpp"
#include "cujit/reduce.hpp"
#include "support/bench_main.hpp"
#include "support/cupti_timer.hpp"
#include "support/jit_scenarios.hpp"
#include "support/paired.hpp"

namespace cujit::bench {
namespace {

// ---- the reduce build and its cache -------------------------------------------------------

// The device's architecture where there is one (with a device, build_reduce also loads
// the module), else sm_90.
Arch build_arch() { return has_device() ? Arch::of_device(0) : Arch::parse("sm_90"); }

reduce::ReduceSpec build_spec(const char* type, bool pch, reduce::Backend backend = reduce::Backend::handwritten) {
  reduce::ReduceSpec spec;
  spec.input = spec.output = spec.accumulator = Type::parse(type);
  spec.arch = build_arch();
  spec.config.precompiled_header = pch;
  spec.backend = backend;
  return spec;
}

std::filesystem::path cache_dir() {
  return std::filesystem::temp_directory_path() / ("cujit-bench-reduce-cache-" + std::to_string(::getpid()));
}

// ---- the CUB backend's build (issue 28): CUB's own DeviceReduce kernels, JIT-built --------

// Cold: no cache, no precompiled header; NVRTC's own cache as the file's state says.
void reduce_cub_cold(benchmark::State& state) {
  BuildCache off(cache_config(CacheMode::off));
  for (auto _ : state) {
    benchmark::DoNotOptimize(reduce::build_reduce(build_spec("int32", false, reduce::Backend::cub), off));
  }
}

// A second type in the same process, after an int32 build (headers read, NVRTC warm).
void reduce_cub_second_type(benchmark::State& state) {
  BuildCache off(cache_config(CacheMode::off));
  (void)reduce::build_reduce(build_spec("int32", false, reduce::Backend::cub), off);  // untimed
  for (auto _ : state) {
    benchmark::DoNotOptimize(reduce::build_reduce(build_spec("float64", false, reduce::Backend::cub), off));
  }
}

void reduce_cub_memory_hit(benchmark::State& state) {
  BuildCache cache(cache_config(CacheMode::memory));
  const reduce::ReduceSpec spec = build_spec("int32", false, reduce::Backend::cub);
  const auto first = reduce::build_reduce_shared(spec, cache);
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(reduce::build_reduce_shared(spec, cache));
  share.finish(state);
  if (reduce::build_reduce_shared(spec, cache) != first) state.SkipWithError("the memory hit did not return the memorized object");
}

std::string prepared_cub_cache_dir() {
  static const std::string dir = [] {
    const std::string path = cache_dir().string() + "-cub";
    BuildCache cache(cache_config(CacheMode::disk, path));
    (void)reduce::build_reduce(build_spec("int32", false, reduce::Backend::cub), cache);
    return path;
  }();
  return dir;
}

void reduce_cub_disk_hit_new_process(benchmark::State& state) {
  const std::string dir = prepared_cub_cache_dir();
  for (auto _ : state) state.SetIterationTime(std::stod(run_self({"reduce_disk_hit", dir, "cub"})));
}

void reduce_cold(benchmark::State& state) {
  BuildCache off(cache_config(CacheMode::off));
  for (auto _ : state) benchmark::DoNotOptimize(reduce::build_reduce(build_spec("int32", false), off));
}

void reduce_pch_warm(benchmark::State& state) {
  BuildCache off(cache_config(CacheMode::off));
  (void)reduce::build_reduce(build_spec("int32", true), off);  // creates the header: untimed
  for (auto _ : state) benchmark::DoNotOptimize(reduce::build_reduce(build_spec("float64", true), off));
}

// A disk cache holding the int32 build, made once per process.
std::string prepared_cache_dir() {
  static const std::string dir = [] {
    BuildCache cache(cache_config(CacheMode::disk, cache_dir().string()));
    (void)reduce::build_reduce(build_spec("int32", true), cache);
    return cache_dir().string();
  }();
  return dir;
}

// The spec is made once, as a caller holding its spec (cuda.compute's reducer object) asks
// again; the memo answers with the very build (build_reduce_shared).
void reduce_memory_hit(benchmark::State& state) {
  BuildCache cache(cache_config(CacheMode::memory));
  const reduce::ReduceSpec spec = build_spec("int32", true);
  const auto first = reduce::build_reduce_shared(spec, cache);
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(reduce::build_reduce_shared(spec, cache));
  share.finish(state);
  if (reduce::build_reduce_shared(spec, cache) != first) state.SkipWithError("the memory hit did not return the memorized object");
}

void reduce_disk_hit(benchmark::State& state) {
  const std::string dir = prepared_cache_dir();
  for (auto _ : state) {
    BuildCache cache(cache_config(CacheMode::disk, dir));  // fresh object: nothing in memory
    benchmark::DoNotOptimize(reduce::build_reduce(build_spec("int32", true), cache));
  }
}

void reduce_disk_hit_new_process(benchmark::State& state) {
  const std::string dir = prepared_cache_dir();
  for (auto _ : state) state.SetIterationTime(std::stod(run_self({"reduce_disk_hit", dir})));
}

void register_build() {
  const int reps = repetitions(5);
  benchmark::RegisterBenchmark("cujit/reduce_build/cold", reduce_cold)
      ->Unit(benchmark::kMillisecond)->Iterations(quick() ? 1 : 2)->Repetitions(repetitions(3));
  benchmark::RegisterBenchmark("cujit/reduce_build/pch_warm", reduce_pch_warm)
      ->Unit(benchmark::kMillisecond)->Iterations(quick() ? 1 : 3)->Repetitions(repetitions(3));
  benchmark::RegisterBenchmark("cujit/reduce_build/memory_hit", reduce_memory_hit)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/reduce_build/disk_hit", reduce_disk_hit)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/reduce_build/disk_hit_new_process", reduce_disk_hit_new_process)
      ->Unit(benchmark::kMillisecond)->Iterations(quick() ? 1 : 3)->Repetitions(reps)->UseManualTime();
  // The CUB backend: seconds per cold build, full mode only.
  if (quick()) return;
  benchmark::RegisterBenchmark("cujit/reduce_build_cub/cold", reduce_cub_cold)
      ->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(repetitions(3));
  benchmark::RegisterBenchmark("cujit/reduce_build_cub/second_type", reduce_cub_second_type)
      ->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(repetitions(3));
  benchmark::RegisterBenchmark("cujit/reduce_build_cub/memory_hit", reduce_cub_memory_hit)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/reduce_build_cub/disk_hit_new_process", reduce_cub_disk_hit_new_process)
      ->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(reps)->UseManualTime();
}

// The child: one build from the disk cache at DIR in this new process; prints seconds.
// The context is created first, as any CUDA program does, so the figure is the cache's
// and not the driver's start-up.
int child(const ChildArguments& arguments) {
  // reduce_disk_hit DIR [cub]
  if (arguments.size() < 2 || arguments.size() > 3 || arguments[0] != "reduce_disk_hit") return 2;
  const bool cub = arguments.size() == 3 && arguments[2] == "cub";
  if (has_device()) use_device(0);
  const auto start = Clock::now();
  BuildCache cache(cache_config(CacheMode::disk, arguments[1]));
  const reduce::ReduceBuild build =
      reduce::build_reduce(cub ? build_spec("int32", false, reduce::Backend::cub) : build_spec("int32", true), cache);
  const double seconds = seconds_since(start);
  if (build.source != CacheSource::disk) return 1;
  std::printf("%.9f\n", seconds);
  return 0;
}

// ---- reduce_into throughput ---------------------------------------------------------------

// Times each iteration's GPU work by its busy time (kernel and copy durations of its own
// records): the gaps between a reduction's two kernels are host submission, not the
// device's work. Every launch must have its one kernel record, every copy its record.
void timed(benchmark::State& state, const std::function<void()>& work, WindowExpectation expected = {}) {
  time_on_gpu(state, GpuMetric::busy, expected, work);
}

// A device input of n items (at least one allocated), every byte 1: a finite value of
// every type, so float sums time like any other data.
struct Input {
  std::uint64_t n;
  DeviceBuffer in;
  DeviceBuffer out{16};
  Input(std::uint64_t count, std::size_t item_size)
      : n(count), in(std::max<std::uint64_t>(count, 1) * item_size) {
    in.fill_bytes(1);
  }
};

void report(benchmark::State& state, std::uint64_t bytes) {
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["GB_per_s"] = benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9,
                                                  benchmark::Counter::kIsRate);
}

// The element types compared with CUB: T on the AOT side, its cujit name on the JIT side.
template <class T>
struct Element;
#define CUJIT_ELEMENT(T, cujit_name)                    \
  template <>                                          \
  struct Element<T> {                                  \
    static constexpr const char* name = cujit_name;    \
  };
CUJIT_ELEMENT(std::int8_t, "int8")
CUJIT_ELEMENT(std::int16_t, "int16")
CUJIT_ELEMENT(int, "int32")
CUJIT_ELEMENT(std::int64_t, "int64")
CUJIT_ELEMENT(std::uint8_t, "uint8")
CUJIT_ELEMENT(std::uint16_t, "uint16")
CUJIT_ELEMENT(std::uint32_t, "uint32")
CUJIT_ELEMENT(std::uint64_t, "uint64")
CUJIT_ELEMENT(float, "float32")
CUJIT_ELEMENT(double, "float64")
#undef CUJIT_ELEMENT

template <class T, reduce::Backend backend = reduce::Backend::handwritten>
void cujit_reduce(benchmark::State& state) {
  Input input(static_cast<std::uint64_t>(state.range(0)), sizeof(T));
  reduce::ReduceSpec spec;
  spec.input = spec.output = spec.accumulator = Type::parse(Element<T>::name);
  spec.arch = Arch::of_device(0);
  spec.backend = backend;
  const reduce::ReduceBuild build = reduce::build_reduce(spec);
  // A single pass needs none; at least one byte so that the buffer exists.
  DeviceBuffer temp(std::max<std::size_t>(reduce::temp_bytes(build, input.n), 1));
  const ArgValue zero = arg_value(T{0});
  timed(state, [&] {
    reduce::reduce_into(build, input.in.ptr(), input.out.ptr(), input.n, zero, nullptr, temp.ptr(),
                        temp.size());
    synchronize(nullptr);
  });
  report(state, input.n * sizeof(T));
}

template <class T>
void aot_cub(benchmark::State& state) {
  Input input(static_cast<std::uint64_t>(state.range(0)), sizeof(T));
  DeviceBuffer temp(aot_cub_sum_temp_bytes<T>(input.n) + 16);
  auto run = [&] {
    const int status = aot_cub_sum<T>(reinterpret_cast<void*>(temp.ptr()), temp.size(),
                                      reinterpret_cast<const T*>(input.in.ptr()),
                                      reinterpret_cast<T*>(input.out.ptr()), input.n, nullptr);
    if (status != 0) state.SkipWithError("cub::DeviceReduce::Sum failed");
    synchronize(nullptr);
  };
  timed(state, run);
  report(state, input.n * sizeof(T));
}

// The argmin over a user-defined {float value; int index} pair (aot/cub_reduce.hpp): the
// same type, operator and init on both sides.
const ArgminPair argmin_init{3.0e38f, 0x7fffffff};

template <reduce::Backend backend>
void cujit_reduce_argmin(benchmark::State& state) {
  Input input(static_cast<std::uint64_t>(state.range(0)), sizeof(ArgminPair));
  reduce::ReduceSpec spec;
  spec.user_type = reduce::UserType{"pair", sizeof(ArgminPair), alignof(ArgminPair), argmin_pair_definition};
  spec.op = reduce::Operator::cuda_source(argmin_pair_operator, "argmin");
  spec.arch = Arch::of_device(0);
  spec.backend = backend;
  const reduce::ReduceBuild build = reduce::build_reduce(spec);
  DeviceBuffer temp(std::max<std::size_t>(reduce::temp_bytes(build, input.n), 1));
  const ArgValue init = arg_value(argmin_init);
  timed(state, [&] {
    reduce::reduce_into(build, input.in.ptr(), input.out.ptr(), input.n, init, nullptr, temp.ptr(), temp.size());
    synchronize(nullptr);
  });
  report(state, input.n * sizeof(ArgminPair));
}

void aot_cub_argmin_bench(benchmark::State& state) {
  Input input(static_cast<std::uint64_t>(state.range(0)), sizeof(ArgminPair));
  DeviceBuffer temp(aot_cub_argmin_temp_bytes(input.n) + 16);
  timed(state, [&] {
    const int status = aot_cub_argmin(reinterpret_cast<void*>(temp.ptr()), temp.size(),
                                      reinterpret_cast<const ArgminPair*>(input.in.ptr()),
                                      reinterpret_cast<ArgminPair*>(input.out.ptr()), input.n, argmin_init, nullptr);
    if (status != 0) state.SkipWithError("cub::DeviceReduce::Reduce (argmin) failed");
    synchronize(nullptr);
  });
  report(state, input.n * sizeof(ArgminPair));
}

void register_argmin(int iterations, int reps) {
  const std::vector<int64_t> goal{0, 10, 16, 18, 22, 28};
  const std::vector<int64_t> brief{0, 10, 16, 22};
  for (int64_t log2n : quick() ? brief : goal) {
    const int64_t n = int64_t{1} << log2n;
    benchmark::RegisterBenchmark("cujit/reduce_into/pair_argmin", cujit_reduce_argmin<reduce::Backend::handwritten>)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("aot/cub_device_reduce/pair_argmin", aot_cub_argmin_bench)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("cujit/reduce_into_cub/pair_argmin", cujit_reduce_argmin<reduce::Backend::cub>)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  }
}

void copy_bandwidth(benchmark::State& state) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(state.range(0)) * sizeof(int);
  DeviceBuffer from(bytes), to(bytes);
  from.fill_bytes(1);
  timed(state, [&] {
    // Through cujit's driver table (cuMemcpyDtoDAsync), so that this executable does not
    // link libcuda; the time is the copy's GPU time either way.
    copy_device_async(to.ptr(), from.ptr(), bytes, nullptr);
    synchronize(nullptr);
  }, {.kernels = 0});
  report(state, 2 * bytes);  // read and written
}

// Sizes of int32 and float64 (the first two types, whose results earlier runs compare
// with): 1 and 2^10 (one kernel on both sides: launch cost), 2^13 (cujit's single-pass
// limit, where CUB already runs two passes), 2^16, 2^18 (two passes, part of a wave), and
// 2^22 .. 2^28 (bandwidth). The other eight types take the sizes the goal is judged at (at
// least 90% of CUB at every n, 98% from 2^22): 1 (launch cost), 2^10 (a single pass of less
// than a tile), 2^16 and 2^18 (two passes under a wave of blocks), 2^22 (the first size held
// to 98%: 4-32 MiB, within an H100's L2) and 2^28 (HBM bandwidth). Left out: 2^13 (one
// kernel against CUB's two, the case in cujit's favour) and 2^26 (bandwidth, as 2^28).
// The eight types add 96 benchmarks, each
// five repetitions of 30 reductions of at most 2 GiB, and eight builds: by that arithmetic
// 10-40 s more on an H100. The copy floor runs with int32, for the sizes whose bytes it can
// match. Quick mode (CI on a CPU, where these skip; a smoke run on a GPU) keeps four sizes.
enum class Sizes { full, goal };
enum class CopyFloor { with, without };

template <class T>
void register_type(Sizes sizes, CopyFloor copy_floor, int iterations, int reps) {
  const std::vector<int64_t> full{0, 10, 13, 16, 18, 22, 26, 28};
  const std::vector<int64_t> goal{0, 10, 16, 18, 22, 28};
  const std::vector<int64_t> brief{0, 10, 16, 22};
  const std::string type = std::string(Element<T>::name) + "_sum";
  for (int64_t log2n : quick() ? brief : sizes == Sizes::full ? full : goal) {
    const int64_t n = int64_t{1} << log2n;
    benchmark::RegisterBenchmark(("cujit/reduce_into/" + type).c_str(), cujit_reduce<T>)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark(("aot/cub_device_reduce/" + type).c_str(), aot_cub<T>)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    // The CUB backend: CUB's kernels JIT-built, against the same kernels built ahead of time.
    benchmark::RegisterBenchmark(("cujit/reduce_into_cub/" + type).c_str(), cujit_reduce<T, reduce::Backend::cub>)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    if (copy_floor == CopyFloor::with && log2n >= 10) {
      benchmark::RegisterBenchmark("raw/copy_bandwidth/int32", copy_bandwidth)
          ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    }
  }
}

void register_throughput() {
  if (skip_without_device("reduce_into")) return;
  // Fixed iterations: manual (GPU) time of microseconds would otherwise make Google
  // Benchmark run CUPTI flush cycles until half a second of GPU time adds up.
  const int iterations = quick() ? 5 : 30;
  const int reps = repetitions(5);
  register_type<int>(Sizes::full, CopyFloor::with, iterations, reps);
  register_type<double>(Sizes::full, CopyFloor::without, iterations, reps);
  // The other types, in aot/cub_reduce.hpp's list, so that each floor built is measured.
#define CUJIT_REGISTER_GOAL_SIZES(T)                                         \
  if constexpr (!std::is_same_v<T, int> && !std::is_same_v<T, double>) {     \
    register_type<T>(Sizes::goal, CopyFloor::without, iterations, reps);   \
  }
  CUJIT_AOT_CUB_TYPES(CUJIT_REGISTER_GOAL_SIZES)
#undef CUJIT_REGISTER_GOAL_SIZES
  register_argmin(iterations, reps);
}

// ---- a reduce in a loop: one graph launch against the stream ------------------------------

constexpr int loop_reductions = 100;

// What both sides of the pair share: the input, the output, temporary storage, the stream,
// and the graph of the loop captured on it.
struct ReduceLoop {
  std::shared_ptr<const reduce::ReduceBuild> build;
  std::uint64_t n;
  DeviceBuffer in;
  DeviceBuffer out{sizeof(int)};
  DeviceBuffer temp;
  Stream stream;
  std::optional<GraphExec> exec;

  explicit ReduceLoop(std::uint64_t count)
      : build(reduce::build_reduce_shared(loop_spec())),
        n(count),
        in(count * sizeof(int)),
        temp(std::max<std::size_t>(reduce::max_temp_bytes(*build), 1)) {
    in.fill_bytes(1);
    Graph graph = capture(stream.handle(), [&](StreamHandle s) { enqueue(s); });
    graph.retain(build->module);
    exec.emplace(graph.instantiate());
  }

  static reduce::ReduceSpec loop_spec() {
    reduce::ReduceSpec spec;
    spec.arch = Arch::of_device(0);
    return spec;  // int32 sum
  }

  void enqueue(StreamHandle s) {
    for (int i = 0; i < loop_reductions; ++i) {
      reduce::reduce_into(*build, in.ptr(), out.ptr(), n, arg_value(i), s, temp.ptr(), temp.size());
    }
  }

  std::string read_back() {
    std::string bytes(sizeof(int), '\0');
    copy_to_host(bytes.data(), out.ptr(), bytes.size());
    return bytes;
  }
};

void register_reduce_loop() {
  if (skip_without_device("reduce_loop")) return;
  for (const int log2n : {10, 18}) {
    const std::string name = "reduce_loop/graph_over_stream/int32_sum_x" + std::to_string(loop_reductions) +
                             "/" + std::to_string(std::uint64_t{1} << log2n);
    register_pair(name, [log2n] {
      auto loop = std::make_shared<ReduceLoop>(std::uint64_t{1} << log2n);
      Pair pair;
      pair.cujit = [loop] {
        loop->exec->launch(loop->stream.handle());
        loop->stream.synchronize();
        return loop->read_back();
      };
      pair.floor = [loop] {
        loop->enqueue(loop->stream.handle());
        loop->stream.synchronize();
        return loop->read_back();
      };
      return pair;
    });
  }
}

void register_all() {
  register_build();
  register_reduce_loop();
  register_throughput();
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  const int status = cujit::bench::run_main(argc, argv, cujit::bench::register_all, cujit::bench::child);
  std::error_code ignored;
  std::filesystem::remove_all(cujit::bench::cache_dir(), ignored);
  return status;
}
