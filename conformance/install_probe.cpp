// install_probe: a program that links libcujit.a, as an application does. The install tests
// (test_installed_paths.cpp) run it where it was built (inside the build tree) and as a copy
// under an install prefix, and read which compile worker it chose and what came of one
// compile in that worker:
//   candidate=<path or empty>
//   worker=<path> | worker=none | refused=<typed error>
//   compiled | compile-error=<message>
#include <cstdio>
#include <exception>
#include <string>

#include "compile/compile_worker.hpp"
#include "cujit/error.hpp"

int main() {
  using namespace cujit;
  std::printf("candidate=%s\n", detail::compile_worker_candidate().c_str());
  std::optional<std::string> worker;
  try {
    worker = detail::compile_worker_path();
  } catch (const Error& error) {
    std::printf("refused=%s (kind %s)\n", error.what(), std::string(to_string(error.kind())).c_str());
    return 0;
  }
  std::printf("worker=%s\n", worker ? worker->c_str() : "none");
  const Program program("extern \"C\" __global__ void probe() {}", "probe.cu");
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.target = CompileTarget::ptx;
  try {
    detail::WorkerLimits limits;
    limits.timeout = std::chrono::seconds(60);
    if (worker) {
      detail::compile_in_worker(program, options, {*worker}, limits);
    } else {
      program.compile(options);
    }
    std::printf("compiled\n");
  } catch (const std::exception& error) {
    std::printf("compile-error=%s\n", error.what());
  }
  return 0;
}
