#pragma once
// NVRTC compiles in worker processes. NVRTC 13.0 runs one compile at a time per process
// however many threads call it (measured: two threads compiling CUB sources take 1.69 s
// where one after the other take 1.53 s; the NVRTC guide neither documents the lock nor
// names an option that lifts it: -split-compile splits only one compile's optimizer), so
// k sources compiled side by side overlap only when each compiles in a process of its own.
//
// The worker (`cujit-compile-worker`, core/tools/) runs Program::compile on a request read
// from stdin and writes the result or the error on stdout; the caller rebuilds exactly what
// an in-process compile returns or throws (same bytes, log, lowered names; the same Error
// kind, component, message and log). Cache keys never see where a compile ran: compile_cached
// computes them in the caller either way. A worker that cannot start, crashes, hangs past
// its timeout, floods its output or answers nonsense is Error(compile) naming the input,
// the worker and what happened, with the tail of its stderr as the log.
//
// Environment: CUJIT_COMPILE_IN_PROCESS=1 keeps every compile in the calling process;
// CUJIT_COMPILE_WORKER (an absolute path) names the worker; without it, a program inside
// the build tree that built this libcujit uses that tree's worker, and any other program
// the installed one: <its own directory>/../libexec/cujit/cujit-compile-worker, else the
// configured <prefix>/libexec/cujit. Never a build-tree path from an installed program.
// The worker is run only when it passes the executable check (support/spawner.hpp);
// CUJIT_COMPILE_WORKER_TIMEOUT (seconds, default 600) bounds one compile.

#include <optional>
#include <string>
#include <vector>

#include "compile/compile_batch.hpp"
#include "compile/worker_process.hpp"
#include "cujit/program.hpp"

namespace cujit::detail {

// The worker to use for side-by-side compiles: nullopt when CUJIT_COMPILE_IN_PROCESS is set
// or no worker executable is there (then compiles stay in-process, with identical results).
// A worker that is there but fails the executable check (owned by another user, writable
// by group or others, in such a directory) is Error(io) naming it and why.
std::optional<std::string> compile_worker_path();

// The worker compile_worker_path would check: CUJIT_COMPILE_WORKER, the build tree's (for a
// program inside the build tree) or the installed one. Empty when there is none to try.
std::string compile_worker_candidate();

// Program::compile, in a worker process when the calling thread compiles an item of a
// CompileBatch that runs NVRTC beside another (compile/compile_batch.hpp), a worker is
// available and the options do not ask for NVRTC's automatic precompiled header (-pch: it
// lives in the process that made it), else in this process. Same result, same errors
// either way.
CompileResult compile_program(const Program& program, const CompileOptions& options);

// Program::compile in the worker started as `worker_argv` (argv[0] an absolute path).
CompileResult compile_in_worker(const Program& program, const CompileOptions& options,
                                const std::vector<std::string>& worker_argv, const WorkerLimits& limits);

// The worker's side: reads one request from `in`, compiles it, writes the reply to `out`.
// Returns the process exit status (0 when a reply, success or compile error, was written).
int serve_compile_request(int in, int out);
// The same for a request already read (the worker reads once, then serves a compile or a
// link, link/link_worker.hpp).
int serve_compile_request(std::string_view request, int out);

// The worker's stdin read to its end; nullopt past the request limit (1 GiB).
std::optional<std::string> read_worker_request(int in);
// Writes all of `reply` to `out`; false when it could not.
bool write_worker_reply(int out, std::string_view reply);

// The request and reply encodings (support/record.hpp), exposed for tests.
std::string encode_compile_request(const Program& program, const CompileOptions& options);
std::optional<std::pair<Program, CompileOptions>> decode_compile_request(std::string_view bytes);

}  // namespace cujit::detail
