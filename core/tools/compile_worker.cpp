// cujit-compile-worker: one NVRTC compile per process, so that several sources compile
// side by side (NVRTC runs one compile at a time per process), or one isolated nvJitLink
// link (LinkOptions::isolation), so that a vendor crash on hostile input ends this process
// and not the caller. libcujit starts it with the one spawner (support/spawner.hpp); the
// request arrives on stdin, the result or error leaves on stdout
// (core/src/compile/compile_worker.hpp, core/src/link/link_worker.hpp).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "compile/compile_worker.hpp"
#include "link/link_worker.hpp"

int main() {
  const auto request = cujit::detail::read_worker_request(STDIN_FILENO);
  int status = 2;
  if (!request) {
    std::fprintf(stderr, "cujit-compile-worker: the request on stdin is over the limit\n");
  } else if (cujit::detail::is_link_request(*request)) {
    status = cujit::detail::serve_link_request(*request, STDOUT_FILENO);
  } else {
    status = cujit::detail::serve_compile_request(*request, STDOUT_FILENO);
  }
  // The reply is written and the process has nothing else to do: leave without unloading
  // NVRTC and running static destructors, time the caller would wait for. (Leak checks of
  // the compile itself run in-process, in the conformance suites.)
  std::_Exit(status);
}
