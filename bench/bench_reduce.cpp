// reduce_into throughput against its floors: CUB's DeviceReduce compiled ahead of time by
// nvcc, and the GPU's measured copy bandwidth (cuMemcpyDtoD, bytes read plus written).
// GPU time from CUPTI activity records (kernels, memcpy), set with UseManualTime; GB/s in
// the counters. Warm-up: one untimed run per benchmark.
#include <cuda.h>

#include "aot/cub_reduce.hpp"
#include "cujit/reduce.hpp"
#include "support/bench_main.hpp"
#include "support/cupti_timer.hpp"

namespace cujit::bench {
namespace {

CuptiTimer& timer() { return CuptiTimer::instance(); }

// Times each iteration's GPU work by its busy time (kernel and copy durations): the gaps
// between a reduction's two kernels are host submission, not the device's work.
template <class Work>
void timed(benchmark::State& state, Work work) {
  timer().enable();
  work();  // warm-up, traced like the rest so tracing costs nothing extra in the loop
  for (auto _ : state) {
    timer().mark();
    work();
    state.SetIterationTime(timer().read().busy_ns() * 1e-9);
  }
  timer().disable();
}

struct Input {
  std::uint64_t n;
  DeviceBuffer in;
  DeviceBuffer out{16};
  explicit Input(std::uint64_t count) : n(count), in(count * sizeof(int)) { in.fill_bytes(1); }
};

void report(benchmark::State& state, std::uint64_t bytes) {
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["GB_per_s"] = benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9,
                                                  benchmark::Counter::kIsRate);
}

void cujit_reduce(benchmark::State& state) {
  Input input(static_cast<std::uint64_t>(state.range(0)));
  reduce::ReduceSpec spec;
  spec.arch = Arch::of_device(0);
  const reduce::ReduceBuild build = reduce::build_reduce(spec);
  DeviceBuffer temp(reduce::temp_bytes(build, input.n));
  timed(state, [&] {
    reduce::reduce_into(build, input.in.ptr(), input.out.ptr(), input.n, arg_value(0), nullptr,
                        temp.ptr(), temp.size());
    synchronize(nullptr);
  });
  report(state, input.n * sizeof(int));
}

void aot_cub(benchmark::State& state) {
  Input input(static_cast<std::uint64_t>(state.range(0)));
  DeviceBuffer temp(aot_cub_sum_temp_bytes(input.n) + 16);
  auto run = [&] {
    const int status = aot_cub_sum(reinterpret_cast<void*>(temp.ptr()), temp.size(),
                                   reinterpret_cast<const int*>(input.in.ptr()),
                                   reinterpret_cast<int*>(input.out.ptr()), input.n, nullptr);
    if (status != 0) state.SkipWithError("cub::DeviceReduce::Sum failed");
    synchronize(nullptr);
  };
  timed(state, run);
  report(state, input.n * sizeof(int));
}

void copy_bandwidth(benchmark::State& state) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(state.range(0)) * sizeof(int);
  DeviceBuffer from(bytes), to(bytes);
  from.fill_bytes(1);
  timed(state, [&] {
    cuMemcpyDtoD(to.ptr(), from.ptr(), bytes);
    synchronize(nullptr);
  });
  report(state, 2 * bytes);  // read and written
}

void register_all() {
  if (skip_without_device("reduce")) return;
  const int reps = repetitions(5);
  for (int64_t log2n : {10, 14, 18, 22, 26, 28}) {
    const int64_t n = int64_t{1} << log2n;
    // Fixed iterations: manual (GPU) time of microseconds would otherwise make Google
    // Benchmark run CUPTI flush cycles until half a second of GPU time adds up.
    const int iterations = quick() ? 5 : 30;
    benchmark::RegisterBenchmark("cujit/reduce_into/int32_sum", cujit_reduce)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("aot/cub_device_reduce/int32_sum", aot_cub)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("raw/copy_bandwidth/int32", copy_bandwidth)
        ->Arg(n)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  }
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) { return cujit::bench::run_main(argc, argv, cujit::bench::register_all); }
