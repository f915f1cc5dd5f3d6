// Run by CacheFleetGpu as one of several processes asking one cold cache directory for the
// same reduce build (int64 max, the case measured on the H100 as 8 builds for 8
// processes): prints where its build came from and its cache's counts.
//
//   reduce_fleet_child CACHE_DIR device|sm_XX
//
// Prints "reduce source=<built|disk|...> builds=B process_waits=W disk_hits=D".
#include <cstdio>
#include <string>

#include "cujit/error.hpp"
#include "cujit/reduce.hpp"
#include "support/cache_helpers.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CACHE_DIR device|sm_XX\n", argv[0]);
    return 2;
  }
  try {
    cujit::BuildCache cache(cujit::test::disk_cache_at(argv[1]));
    cujit::reduce::ReduceSpec spec;
    spec.input = spec.output = spec.accumulator = cujit::Type::parse("int64");
    spec.op = cujit::reduce::Operator::builtin(cujit::reduce::Builtin::max);
    spec.arch = std::string(argv[2]) == "device" ? cujit::Arch::of_device(0) : cujit::Arch::parse(argv[2]);
    const cujit::reduce::ReduceBuild build = cujit::reduce::build_reduce(spec, cache);
    const cujit::CacheStats stats = cache.stats();
    std::printf("reduce source=%s builds=%llu process_waits=%llu disk_hits=%llu\n",
                std::string(cujit::to_string(build.source)).c_str(), static_cast<unsigned long long>(stats.builds),
                static_cast<unsigned long long>(stats.process_waits), static_cast<unsigned long long>(stats.disk_hits));
    for (const std::string& warning : cache.warnings()) std::printf("warning: %s\n", warning.c_str());
    return 0;
  } catch (const cujit::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
