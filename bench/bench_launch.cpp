// Launch costs on a GPU: chains of N kernels (empty and small) as stream launches and as
// one graph launch, fan-out/fan-in with copies, graph instantiate and update costs, the
// launches needed to pay back an instantiation, and the raw floors (cuLaunchKernel,
// cuGraphLaunch through the Driver API directly). Host times by the steady clock around
// submission and synchronisation; GPU times from CUPTI in the *_gpu_time benchmarks.
// Warm-up: one untimed chain per benchmark before the timed iterations.
//
// CUPTI and the order of families: host-time families run first, with CUPTI never
// attached to the process; the GPU-time families (cujit and raw alike) and
// cupti/overhead/tracing_on run after them, with CUPTI attached for the rest of the
// process. A host-time benchmark that finds CUPTI attached (a reordered run) is an error,
// not a figure (support/cupti_timer.hpp).
#include <cuda.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include "cujit/graph.hpp"
#include "cujit/linker.hpp"
#include "support/bench_main.hpp"
#include "support/cupti_timer.hpp"

namespace cujit::bench {
namespace {

struct Kernels {
  std::shared_ptr<Module> module;
  std::optional<Kernel> empty;
  std::optional<Kernel> small;  // fill_segment over 256 ints
  DeviceBuffer buffer{4096 * sizeof(int)};
};

Kernels& kernels() {
  static Kernels k = [] {
    Kernels out;
    LinkOptions options;
    options.arch = Arch::of_device(0);
    Linker linker(options);
    linker.add_file(scenario_dir() + "/fixtures/graphs/graph_kernels.cu");
    out.module = Module::load(LinkableCode::cubin(linker.link().code.bytes(), "graph_kernels"));
    out.empty.emplace(out.module->kernel("empty_kernel"));
    out.small.emplace(out.module->kernel("fill_segment"));
    return out;
  }();
  return k;
}

bool is_small(const std::string& kind) { return kind == "small"; }

void launch_one(const std::string& kind, StreamHandle stream) {
  Kernels& k = kernels();
  LaunchConfig config;
  config.stream = stream;
  if (is_small(kind)) {
    config.block.x = 256;
    (*k.small)(config, k.buffer.ptr(), 0, 7, 256);
  } else {
    (*k.empty)(config);
  }
}

KernelNode node_for(const std::string& kind) {
  Kernels& k = kernels();
  if (is_small(kind)) {
    KernelNode node(*k.small, {arg_value(k.buffer.ptr()), arg_value(0), arg_value(7), arg_value(256)});
    node.launch({1}, {256});
    return node;
  }
  return KernelNode(*k.empty);
}

Graph chain_graph(const std::string& kind, int n) {
  Node last = node_for(kind);
  for (int i = 1; i < n; ++i) {
    KernelNode next = node_for(kind);
    next.after(last);
    last = next;
  }
  return last.build();
}

// Seconds per kernel: the chain's time over its length.
void per_kernel(benchmark::State& state, int n) {
  state.counters["kernels"] = n;
  state.counters["per_kernel_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ---- cujit ---------------------------------------------------------------------------------

void cujit_stream_chain(benchmark::State& state, std::string kind) {
  if (host_time_refused(state)) return;
  const int n = static_cast<int>(state.range(0));
  Stream stream;
  for (int i = 0; i < n; ++i) launch_one(kind, stream.handle());
  stream.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) launch_one(kind, stream.handle());
    stream.synchronize();
  }
  per_kernel(state, n);
}

void cujit_graph_chain(benchmark::State& state, std::string kind) {
  if (host_time_refused(state)) return;
  const int n = static_cast<int>(state.range(0));
  Stream stream;
  GraphExec exec = chain_graph(kind, n).instantiate();
  exec.launch(stream.handle());
  exec.synchronize();
  for (auto _ : state) {
    exec.launch(stream.handle());
    exec.synchronize();
  }
  per_kernel(state, n);
}

// GPU timeline of one chain, first kernel start to last kernel end (gaps included: they
// are what graphs remove), from the chain's own CUPTI records, which must be exactly n
// kernels (support/cupti_timer.hpp).
void chain_span(benchmark::State& state, int n, const std::function<void()>& work) {
  time_on_gpu(state, GpuMetric::span, {.kernels = static_cast<std::uint64_t>(n)}, work);
  state.counters["kernels"] = n;
}

void cujit_graph_chain_gpu_time(benchmark::State& state, std::string kind) {
  const int n = static_cast<int>(state.range(0));
  Stream stream;
  GraphExec exec = chain_graph(kind, n).instantiate();
  chain_span(state, n, [&] {
    exec.launch(stream.handle());
    exec.synchronize();
  });
}

void cujit_stream_chain_gpu_time(benchmark::State& state, std::string kind) {
  const int n = static_cast<int>(state.range(0));
  Stream stream;
  chain_span(state, n, [&] {
    for (int i = 0; i < n; ++i) launch_one(kind, stream.handle());
    stream.synchronize();
  });
}

void cujit_graph_instantiate(benchmark::State& state) {
  if (host_time_refused(state)) return;
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Graph graph = chain_graph("empty", n);
    benchmark::DoNotOptimize(graph.instantiate());
  }
  state.counters["kernels"] = n;
}

void cujit_graph_update(benchmark::State& state) {
  if (host_time_refused(state)) return;
  Kernels& k = kernels();
  KernelNode node(*k.small, {arg_value(k.buffer.ptr()), arg_value(0), arg_value(7), arg_value(256)});
  node.launch({1}, {256});
  GraphExec exec = node.build().instantiate();
  int value = 0;
  for (auto _ : state) {
    node.args()[2] = arg_value(++value);
    exec.update(node);
  }
}

// Launches of the graph needed before instantiating it beats launching the same chain on
// a stream: instantiate / (stream chain - graph launch), all measured here.
void cujit_graph_payback(benchmark::State& state) {
  if (host_time_refused(state)) return;
  const int n = static_cast<int>(state.range(0));
  Stream stream;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double payback = 0;
  for (auto _ : state) {
    std::vector<double> stream_s, graph_s, instantiate_s;
    for (int rep = 0; rep < 7; ++rep) {
      auto start = Clock::now();
      for (int i = 0; i < n; ++i) launch_one("empty", stream.handle());
      stream.synchronize();
      stream_s.push_back(seconds_since(start));
      start = Clock::now();
      Graph graph = chain_graph("empty", n);
      GraphExec exec = graph.instantiate();
      instantiate_s.push_back(seconds_since(start));
      start = Clock::now();
      exec.launch(stream.handle());
      exec.synchronize();
      graph_s.push_back(seconds_since(start));
    }
    const double saved = median(stream_s) - median(graph_s);
    payback = saved > 0 ? median(instantiate_s) / saved : -1;
  }
  state.counters["launches_to_pay_back"] = payback;
  state.counters["kernels"] = n;
}

// memcpy HtoD -> 8 kernels -> DtoH, as a graph and on a stream.
void cujit_fan(benchmark::State& state, bool graph) {
  if (host_time_refused(state)) return;
  Kernels& k = kernels();
  std::vector<int> host(4096, 1);
  Stream stream;
  MemcpyHtoDNode in(k.buffer.ptr(), host.data(), host.size() * sizeof(int));
  std::vector<Node> fills;
  for (int s = 0; s < 8; ++s) {
    KernelNode fill(*k.small, {arg_value(k.buffer.ptr()), arg_value(s * 512), arg_value(s), arg_value(512)}, {in});
    fill.launch({2}, {256});
    fills.push_back(fill);
  }
  MemcpyDtoHNode out(host.data(), k.buffer.ptr(), host.size() * sizeof(int), fills);
  GraphExec exec = out.build().instantiate();
  for (auto _ : state) {
    if (graph) {
      exec.launch(stream.handle());
      exec.synchronize();
    } else {
      copy_to_device_async(k.buffer.ptr(), host.data(), host.size() * sizeof(int), stream.handle());
      LaunchConfig config;
      config.stream = stream.handle();
      config.grid.x = 2;
      config.block.x = 256;
      for (int s = 0; s < 8; ++s) (*k.small)(config, k.buffer.ptr(), s * 512, s, 512);
      copy_to_host_async(host.data(), k.buffer.ptr(), host.size() * sizeof(int), stream.handle());
      stream.synchronize();
    }
  }
}

// ---- raw floors: the Driver API directly ------------------------------------------------

CUfunction raw_empty() { return static_cast<CUfunction>(kernels().empty->handle()); }

// A non-blocking stream of the Driver API's own, destroyed with its owner.
class RawStream {
 public:
  RawStream() { cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING); }
  ~RawStream() { cuStreamDestroy(stream_); }
  RawStream(const RawStream&) = delete;
  RawStream& operator=(const RawStream&) = delete;
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
};

void raw_launch_chain(CUfunction function, int n, CUstream stream) {
  for (int i = 0; i < n; ++i) cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr);
  cuStreamSynchronize(stream);
}

// A chain of n empty kernels built and instantiated through the Driver API.
class RawGraphChain {
 public:
  explicit RawGraphChain(int n) {
    cuGraphCreate(&graph_, 0);
    CUgraphNode last = nullptr;
    for (int i = 0; i < n; ++i) {
      CUDA_KERNEL_NODE_PARAMS params{};
      params.func = raw_empty();
      params.gridDimX = params.gridDimY = params.gridDimZ = 1;
      params.blockDimX = params.blockDimY = params.blockDimZ = 1;
      CUgraphNode node = nullptr;
      cuGraphAddKernelNode(&node, graph_, last ? &last : nullptr, last ? 1 : 0, &params);
      last = node;
    }
    cuGraphInstantiateWithFlags(&exec_, graph_, 0);
  }
  ~RawGraphChain() {
    cuGraphExecDestroy(exec_);
    cuGraphDestroy(graph_);
  }
  RawGraphChain(const RawGraphChain&) = delete;
  RawGraphChain& operator=(const RawGraphChain&) = delete;
  void launch(CUstream stream) const {
    cuGraphLaunch(exec_, stream);
    cuStreamSynchronize(stream);
  }

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

void raw_stream_chain(benchmark::State& state) {
  if (host_time_refused(state)) return;
  const int n = static_cast<int>(state.range(0));
  const CUfunction function = raw_empty();
  RawStream stream;
  for (auto _ : state) raw_launch_chain(function, n, stream.get());
  per_kernel(state, n);
}

void raw_graph_chain(benchmark::State& state) {
  if (host_time_refused(state)) return;
  const int n = static_cast<int>(state.range(0));
  RawGraphChain chain(n);
  RawStream stream;
  for (auto _ : state) chain.launch(stream.get());
  per_kernel(state, n);
}

void raw_stream_chain_gpu_time(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const CUfunction function = raw_empty();
  RawStream stream;
  chain_span(state, n, [&] { raw_launch_chain(function, n, stream.get()); });
}

void raw_graph_chain_gpu_time(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  RawGraphChain chain(n);
  RawStream stream;
  chain_span(state, n, [&] { chain.launch(stream.get()); });
}

// CUPTI's cost per launch: the raw stream chain on host time, with CUPTI never attached
// (tracing_off, a host-time family) or attached as the GPU-time families run it (tracing_on:
// activity records and the launch callbacks, no window open).
void cupti_overhead(benchmark::State& state, bool tracing) {
  if (!tracing) {
    raw_stream_chain(state);
    return;
  }
  const int n = static_cast<int>(state.range(0));
  const CUfunction function = raw_empty();
  RawStream stream;
  try {
    CuptiTimer::attach().discard();
    for (auto _ : state) raw_launch_chain(function, n, stream.get());
    CuptiTimer::attach().discard();  // its records are nobody's figure
  } catch (const std::exception& error) {
    state.SkipWithError((std::string("CUPTI: ") + error.what()).c_str());
    return;
  }
  per_kernel(state, n);
}

void register_all() {
  if (skip_without_device("launch")) return;
  const int reps = repetitions(5);
  const std::vector<int64_t> chain_lengths{1, 10, 100, 1000};
  const std::vector<std::string> kinds{"empty", "small"};

  // Host time, CUPTI never attached: everything here runs before the first GPU-time family.
  for (const std::string& kind : kinds) {
    for (int64_t n : chain_lengths) {
      benchmark::RegisterBenchmark(("cujit/stream_chain/" + kind).c_str(), cujit_stream_chain, kind)
          ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
      benchmark::RegisterBenchmark(("cujit/graph_chain/" + kind).c_str(), cujit_graph_chain, kind)
          ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    }
  }
  for (int64_t n : chain_lengths) {
    benchmark::RegisterBenchmark("raw/stream_chain/empty", raw_stream_chain)
        ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("raw/graph_chain/empty", raw_graph_chain)
        ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("cujit/graph_instantiate/empty", cujit_graph_instantiate)
        ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("cujit/graph_payback/empty", cujit_graph_payback)
        ->Arg(n)->Iterations(1)->Unit(benchmark::kMillisecond)->Repetitions(reps);
  }
  benchmark::RegisterBenchmark("cujit/graph_update/kernel_node", cujit_graph_update)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/fan_copy/graph", cujit_fan, true)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/fan_copy/stream", cujit_fan, false)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cupti/overhead/tracing_off", cupti_overhead, false)
      ->Arg(1000)->Unit(benchmark::kMicrosecond)->Repetitions(reps);

  // From here on CUPTI is attached, for cujit and the raw floors alike.
  benchmark::RegisterBenchmark("cupti/overhead/tracing_on", cupti_overhead, true)
      ->Arg(1000)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  // Fixed iterations for CUPTI-timed (manual) figures: see bench_reduce.cpp. The raw floors
  // exist for the empty kernel, the one they launch.
  for (const std::string& kind : kinds) {
    for (int64_t n : chain_lengths) {
      benchmark::RegisterBenchmark(("cujit/stream_chain_gpu_time/" + kind).c_str(), cujit_stream_chain_gpu_time, kind)
          ->Arg(n)->Iterations(20)->Unit(benchmark::kMicrosecond)->Repetitions(reps)->UseManualTime();
      if (kind == "empty") {
        benchmark::RegisterBenchmark("raw/stream_chain_gpu_time/empty", raw_stream_chain_gpu_time)
            ->Arg(n)->Iterations(20)->Unit(benchmark::kMicrosecond)->Repetitions(reps)->UseManualTime();
      }
      benchmark::RegisterBenchmark(("cujit/graph_chain_gpu_time/" + kind).c_str(), cujit_graph_chain_gpu_time, kind)
          ->Arg(n)->Iterations(20)->Unit(benchmark::kMicrosecond)->Repetitions(reps)->UseManualTime();
      if (kind == "empty") {
        benchmark::RegisterBenchmark("raw/graph_chain_gpu_time/empty", raw_graph_chain_gpu_time)
            ->Arg(n)->Iterations(20)->Unit(benchmark::kMicrosecond)->Repetitions(reps)->UseManualTime();
      }
    }
  }
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) { return cujit::bench::run_main(argc, argv, cujit::bench::register_all); }
