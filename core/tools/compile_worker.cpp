// cujit-compile-worker: one NVRTC compile per process, so that several sources compile
// side by side (NVRTC runs one compile at a time per process). libcujit starts it with
// the one spawner (support/spawner.hpp) for each source of a multi-source build; the request arrives on stdin, the
// result or error leaves on stdout (core/src/compile/compile_worker.hpp).
#include <unistd.h>

#include <cstdlib>

#include "compile/compile_worker.hpp"

int main() {
  const int status = cujit::detail::serve_compile_request(STDIN_FILENO, STDOUT_FILENO);
  // The reply is written and the process has nothing else to do: leave without unloading
  // NVRTC and running static destructors, time the caller would wait for. (Leak checks of
  // the compile itself run in-process, in the conformance suites.)
  std::_Exit(status);
}
