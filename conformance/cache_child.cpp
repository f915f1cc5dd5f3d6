// Run by the compile-cache suite as a new process, so that a build can only come from the
// disk tier (or be made afresh): the stale-code regressions of the build cache.
//
//   cache_child kernel  CACHE_DIR|off INC_DIR OUT   KernelBuilder, source including "val.h"
//   cache_child reduce  CACHE_DIR|off INC_DIR OUT   reduce, CUDA C++ operator including "op.h"
//   cache_child reduce-foreign CACHE_DIR|off PTX OUT
//                                                   reduce, the foreign C-ABI PTX operator
//                                                   min_i32 read from the file PTX
//   cache_child compile CACHE_DIR|off OUT OPTION... compile_cached with these NVRTC options
//   cache_child compile-file CACHE_DIR|off OUT CWD SOURCE NAME OPTION...
//                                                   compile_cached of the file SOURCE as NAME,
//                                                   run in CWD (the stale-code fuzzer's new
//                                                   process); prints "failed <kind>" when the
//                                                   compile fails
//   cache_child counters CACHE_DIR THREADS LOOKUPS  each thread: LOOKUPS lookups of 8 keys
//                                                   (memo, then get_or_build); prints the
//                                                   counts, which it adds to the directory's
//                                                   persistent counters at exit
//
// Writes the cubin or PTX to OUT and prints where it came from (built, disk, ...).
// CACHE_CHILD_ARCH=sm_XX builds for another arch; CACHE_CHILD_NRT=1 (kernel) turns NRT on and
// marks the source as using it, so the link adds the device runtime; CACHE_CHILD_BACKEND=NAME
// (kernel) links through that backend, printing "failed <kind>" when it cannot.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "cujit/compile_cache.hpp"
#include "cujit/error.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/link_options.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/reduce.hpp"
#include "cujit/signature.hpp"
#include "support/child_cache_config.hpp"

namespace {

cujit::CacheConfig cache_at(const std::string& directory) { return cujit::test::child_cache_config(directory); }

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The counters mode: lookups from several threads, so that flushes of this process race
// with each other and with other processes'. Prints this process's counts on one line.
int count_lookups(cujit::BuildCache& cache, int threads, int lookups) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&cache, lookups, t] {
      for (int i = 0; i < lookups; ++i) {
        const std::string name = "key-" + std::to_string((i * 7 + t) % 8);
        if (i % 3 == 0 && cache.recall<std::string>("memo-" + name)) continue;
        const std::string payload = cache.get_or_build(cujit::CacheKey("counters-child").add("name", name),
                                                       [&] { return "payload of " + name; });
        cache.memorize("memo-" + name, std::make_shared<const std::string>(payload), payload.size());
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  const cujit::CacheStats s = cache.stats();
  std::printf("%llu %llu %llu %llu %llu %llu %llu %llu %llu\n", static_cast<unsigned long long>(s.memo_hits),
              static_cast<unsigned long long>(s.memo_misses), static_cast<unsigned long long>(s.memory_hits),
              static_cast<unsigned long long>(s.memory_misses), static_cast<unsigned long long>(s.disk_hits),
              static_cast<unsigned long long>(s.disk_misses), static_cast<unsigned long long>(s.builds),
              static_cast<unsigned long long>(s.disk_stores), static_cast<unsigned long long>(s.waits));
  return 0;
}

int run(const std::vector<std::string>& args) {
  if (args.size() < 4) return 2;
  cujit::BuildCache cache(cache_at(args[1]));
  if (args[0] == "counters" && args.size() == 4) return count_lookups(cache, std::stoi(args[2]), std::stoi(args[3]));
  // CACHE_CHILD_ARCH: another arch for the miss explanation tests (test_cache_explain.cpp).
  const char* const arch_name = std::getenv("CACHE_CHILD_ARCH");
  const cujit::Arch arch = cujit::Arch::parse(arch_name != nullptr ? arch_name : "sm_90");
  if (args[0] == "kernel" && args.size() == 4) {
    cujit::KernelOptions options;
    options.link.arch = arch;
    options.link.compile.include_paths = {args[2]};
    const bool nrt = std::getenv("CACHE_CHILD_NRT") != nullptr;
    if (nrt) options.nrt = true;
    const char* const backend = std::getenv("CACHE_CHILD_BACKEND");
    if (backend != nullptr) {
      const std::optional<cujit::LinkerBackend> parsed = cujit::parse_linker_backend(backend);
      if (!parsed) return 2;
      options.link.backend = *parsed;
    }
    cujit::KernelBuilder builder("k", options, cache);
    builder.source(cujit::LinkableCode::cuda_source(
                       "#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = VAL; }\n", "k.cu")
                       .set_nrt(nrt));
    std::optional<cujit::LinkedKernel> linked;
    try {
      linked.emplace(builder.link_cubin());
    } catch (const cujit::Error& error) {
      // Another backend may need what this machine lacks (the driver linker needs a GPU):
      // the miss is logged before the link, and the failure is said, not fatal.
      if (backend == nullptr) throw;
      std::printf("failed %s\n", std::string(cujit::to_string(error.kind())).c_str());
      return 0;
    }
    write(args[3], linked->link.code.bytes());
    std::printf("%s\n", std::string(cujit::to_string(linked->source)).c_str());
    return 0;
  }
  if (args[0] == "reduce" && args.size() == 4) {
    cujit::reduce::ReduceSpec spec;
    spec.arch = arch;
    spec.op = cujit::reduce::Operator::cuda_source(
        "#include \"op.h\"\nextern \"C\" __device__ int op(int a, int b) { return OP(a, b); }\n", "op");
    spec.config.nvrtc_options = {"-I" + args[2]};
    const cujit::reduce::ReduceBuild build = cujit::reduce::build_reduce(spec, cache);
    write(args[3], build.code.bytes());
    std::printf("%s\n", std::string(cujit::to_string(build.source)).c_str());
    return 0;
  }
  if (args[0] == "reduce-foreign" && args.size() == 4) {
    cujit::reduce::ReduceSpec spec;
    spec.arch = arch;
    spec.op = cujit::reduce::Operator::foreign(cujit::LinkableCode::from_path(args[2]), "min_i32",
                                               cujit::Signature::parse("int32(int32, int32)"));
    const cujit::reduce::ReduceBuild build = cujit::reduce::build_reduce(spec, cache);
    write(args[3], build.code.bytes());
    std::printf("%s\n", std::string(cujit::to_string(build.source)).c_str());
    return 0;
  }
  if (args[0] == "compile-file" && args.size() >= 6) {
    if (::chdir(args[3].c_str()) != 0) return 2;
    cujit::CompileOptions options;
    options.arch = arch;
    options.options.assign(args.begin() + 6, args.end());
    std::ifstream in(args[4], std::ios::binary);
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      const cujit::CachedCompile compiled = cujit::compile_cached(cujit::Program(source, args[5]), options, cache);
      write(args[2], compiled.result.code.bytes());
      std::printf("%s\n", std::string(cujit::to_string(compiled.source)).c_str());
    } catch (const cujit::Error& error) {
      write(args[2], "");
      std::printf("failed %s\n", std::string(cujit::to_string(error.kind())).c_str());
    }
    return 0;
  }
  if (args[0] == "compile") {
    cujit::CompileOptions options;
    options.arch = arch;
    options.options.assign(args.begin() + 3, args.end());
    const cujit::CachedCompile compiled = cujit::compile_cached(
        cujit::Program("extern \"C\" __global__ void k(int* p) { *p = V; }\n", "k.cu"), options, cache);
    write(args[2], compiled.result.code.bytes());
    std::printf("%s\n", std::string(cujit::to_string(compiled.source)).c_str());
    return 0;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int status = run(std::vector<std::string>(argv + 1, argv + argc));
    if (status == 2) std::fprintf(stderr, "usage: see the comment at the top of cache_child.cpp\n");
    return status;
  } catch (const cujit::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
