// cujit-compile-worker: one NVRTC compile per process, so that several sources compile
// side by side (NVRTC runs one compile at a time per process). libcujit starts it with
// posix_spawn for each source of a multi-source build; the request arrives on stdin, the
// result or error leaves on stdout (core/src/compile/compile_worker.hpp).
#include <unistd.h>

#include "compile/compile_worker.hpp"

int main() { return cujit::detail::serve_compile_request(STDIN_FILENO, STDOUT_FILENO); }
