#pragma once
// Isolated links (LinkOptions::isolation, CUJIT_LINK_ISOLATE=1): an nvJitLink link run in
// cujit's worker process, `cujit-compile-worker`, which serves a link request as well as a
// compile (compile/compile_worker.hpp). nvJitLink 13.0 can still die on hostile input that
// passes every structural check cujit makes (a damaged LTO-IR body: docs/reliability.md);
// run in the worker, that death, a runaway or a memory blow-up ends the worker, and the
// caller gets a LinkError naming its inputs, the worker and what happened.
//
// The request carries the inputs after Linker::add (CUDA C++ already compiled, in the
// caller) and the options that reach the link; the worker links them with a Linker of its
// own and no cache, so that cujit's checks run there too, and replies with the result or
// the error, which the caller rebuilds: the same cubin bytes, info log, dropped duplicates
// and arch, or the same Error kind, component, message, log and symbol lists.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compile/worker_process.hpp"
#include "cujit/linker.hpp"

namespace cujit::detail {

// Whether links of `options` run isolated: LinkOptions::isolation.enabled or
// CUJIT_LINK_ISOLATE=1, for the nvJitLink backend.
bool link_isolated(const LinkOptions& options, LinkerBackend backend);

// The worker an isolated link runs in: the compile worker (compile_worker_candidate), which
// must pass the executable check. Throws Error(io) naming why there is none: a caller that
// asked for isolation never gets an unisolated link instead.
std::string link_worker_path();

// What an isolated link returns: the parts of LinkResult the worker decides. The caller
// adds the lowered names of its own inputs.
struct IsolatedLink {
  Bytes cubin;
  std::string name;
  std::string info_log;
  std::vector<std::string> dropped_duplicates;
  Arch arch;
};

// Runs the link of `inputs` with `options` in the worker `argv`. Throws the link's own
// error, rebuilt, or a LinkError for a worker that failed (`what` says which link).
IsolatedLink link_in_worker(const std::vector<LinkableCode>& inputs, const LinkOptions& options,
                            const std::vector<std::string>& argv, const WorkerLimits& limits,
                            const std::string& what);

// The worker's side: whether `request` is a link request, and serving one (exit status 0
// when a reply, linked or error, was written to `out`).
bool is_link_request(std::string_view request);
int serve_link_request(std::string_view request, int out);

// The request encoding, exposed for tests.
std::string encode_link_request(const std::vector<LinkableCode>& inputs, const LinkOptions& options);

}  // namespace cujit::detail
