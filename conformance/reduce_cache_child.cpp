// Run by the reduce conformance suite as a new process: builds the int32 sum reduction
// through the cache in argv[1] and runs it over argv[2] generated items. Prints
// "<cache source> <result>".
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cujit/error.hpp"
#include "cujit/reduce.hpp"
#include "support/cache_helpers.hpp"
#include "support/reduce_data.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CACHE_DIR N\n", argv[0]);
    return 2;
  }
  try {
    cujit::BuildCache cache(cujit::test::disk_cache_at(argv[1]));
    cujit::reduce::ReduceSpec spec;
    spec.arch = cujit::Arch::of_device(0);
    const cujit::reduce::ReduceBuild build = cujit::reduce::build_reduce(spec, cache);
    const std::uint64_t n = std::strtoull(argv[2], nullptr, 10);
    cujit::DeviceBuffer in(n * 4 + 4), out(4);
    cujit::test::fill_device(spec.input, in.ptr(), n);
    cujit::reduce::reduce_into(build, in.ptr(), out.ptr(), n, 3);
    std::printf("%s %.0Lf\n", std::string(cujit::to_string(build.source)).c_str(),
                cujit::test::read_result(spec.output, out.ptr()));
    return 0;
  } catch (const cujit::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
