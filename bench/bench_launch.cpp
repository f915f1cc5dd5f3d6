// Launch costs on a GPU: chains of N kernels (empty and small) as stream launches and as
// one graph launch, fan-out/fan-in with copies, graph instantiate and update costs, the
// launches needed to pay back an instantiation, and the raw floors (cuLaunchKernel,
// cuGraphLaunch through the Driver API directly). Host times by the steady clock around
// submission and synchronisation; GPU times from CUPTI in the */gpu_time benchmarks.
// Warm-up: one untimed chain per benchmark before the timed iterations.
#include <cuda.h>

#include <algorithm>
#include <optional>

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

// GPU timeline of a chain, first kernel start to last kernel end (gaps included: they are
// what graphs remove), from CUPTI with tracing enabled for the whole benchmark.
template <class Work>
void gpu_span(benchmark::State& state, int n, Work work) {
  CuptiTimer& timer = CuptiTimer::instance();
  timer.enable();
  work();
  for (auto _ : state) {
    timer.mark();
    work();
    state.SetIterationTime(timer.read().span_ns * 1e-9);
  }
  timer.disable();
  state.counters["kernels"] = n;
}

void cujit_graph_chain_gpu_time(benchmark::State& state, std::string kind) {
  const int n = static_cast<int>(state.range(0));
  Stream stream;
  GraphExec exec = chain_graph(kind, n).instantiate();
  gpu_span(state, n, [&] {
    exec.launch(stream.handle());
    exec.synchronize();
  });
}

void cujit_stream_chain_gpu_time(benchmark::State& state, std::string kind) {
  const int n = static_cast<int>(state.range(0));
  Stream stream;
  gpu_span(state, n, [&] {
    for (int i = 0; i < n; ++i) launch_one(kind, stream.handle());
    stream.synchronize();
  });
}

void cujit_graph_instantiate(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Graph graph = chain_graph("empty", n);
    benchmark::DoNotOptimize(graph.instantiate());
  }
  state.counters["kernels"] = n;
}

void cujit_graph_update(benchmark::State& state) {
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

void raw_stream_chain(benchmark::State& state, bool tracing) {
  const int n = static_cast<int>(state.range(0));
  const auto function = static_cast<CUfunction>(kernels().empty->handle());
  CUstream stream = nullptr;
  cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  if (tracing) CuptiTimer::instance().enable();
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr);
    cuStreamSynchronize(stream);
  }
  if (tracing) CuptiTimer::instance().disable();
  cuStreamDestroy(stream);
  per_kernel(state, n);
}

void raw_graph_chain(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto function = static_cast<CUfunction>(kernels().empty->handle());
  CUgraph graph = nullptr;
  cuGraphCreate(&graph, 0);
  CUgraphNode last = nullptr;
  for (int i = 0; i < n; ++i) {
    CUDA_KERNEL_NODE_PARAMS params{};
    params.func = function;
    params.gridDimX = params.gridDimY = params.gridDimZ = 1;
    params.blockDimX = params.blockDimY = params.blockDimZ = 1;
    CUgraphNode node = nullptr;
    cuGraphAddKernelNode(&node, graph, last ? &last : nullptr, last ? 1 : 0, &params);
    last = node;
  }
  CUgraphExec exec = nullptr;
  cuGraphInstantiateWithFlags(&exec, graph, 0);
  CUstream stream = nullptr;
  cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  for (auto _ : state) {
    cuGraphLaunch(exec, stream);
    cuStreamSynchronize(stream);
  }
  cuStreamDestroy(stream);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  per_kernel(state, n);
}

void register_all() {
  if (skip_without_device("launch")) return;
  const int reps = repetitions(5);
  const std::vector<int64_t> chain_lengths{1, 10, 100, 1000};
  for (const std::string kind : {"empty", "small"}) {
    for (int64_t n : chain_lengths) {
      benchmark::RegisterBenchmark(("cujit/stream_chain/" + kind).c_str(), cujit_stream_chain, kind)
          ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
      benchmark::RegisterBenchmark(("cujit/graph_chain/" + kind).c_str(), cujit_graph_chain, kind)
          ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
      // Fixed iterations for CUPTI-timed (manual) figures: see bench_reduce.cpp.
      benchmark::RegisterBenchmark(("cujit/stream_chain_gpu_time/" + kind).c_str(), cujit_stream_chain_gpu_time, kind)
          ->Arg(n)->Iterations(20)->Unit(benchmark::kMicrosecond)->Repetitions(reps)->UseManualTime();
      benchmark::RegisterBenchmark(("cujit/graph_chain_gpu_time/" + kind).c_str(), cujit_graph_chain_gpu_time, kind)
          ->Arg(n)->Iterations(20)->Unit(benchmark::kMicrosecond)->Repetitions(reps)->UseManualTime();
    }
  }
  for (int64_t n : chain_lengths) {
    benchmark::RegisterBenchmark("raw/stream_chain/empty", raw_stream_chain, false)
        ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("raw/graph_chain/empty", raw_graph_chain)
        ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("cujit/graph_instantiate/empty", cujit_graph_instantiate)
        ->Arg(n)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark("cujit/graph_payback/empty", cujit_graph_payback)
        ->Arg(n)->Iterations(1)->Unit(benchmark::kMillisecond)->Repetitions(reps);
  }
  // CUPTI's own overhead: the same raw launches with activity tracing on.
  benchmark::RegisterBenchmark("cupti/overhead/tracing_off", raw_stream_chain, false)
      ->Arg(1000)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cupti/overhead/tracing_on", raw_stream_chain, true)
      ->Arg(1000)->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/graph_update/kernel_node", cujit_graph_update)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/fan_copy/graph", cujit_fan, true)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  benchmark::RegisterBenchmark("cujit/fan_copy/stream", cujit_fan, false)
      ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) { return cujit::bench::run_main(argc, argv, cujit::bench::register_all); }
