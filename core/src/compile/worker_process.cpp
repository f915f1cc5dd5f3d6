#include "compile/worker_process.hpp"

#include <cstring>
#include <utility>

namespace cujit::detail {
namespace {

void keep_tail(std::string& tail, std::string_view chunk, std::size_t limit) {
  tail.append(chunk);
  if (tail.size() > limit) tail.erase(0, tail.size() - limit);
}

}  // namespace

std::string WorkerRun::describe(const WorkerLimits& limits) const {
  if (!start_error.empty()) return "could not start: " + start_error;
  if (timed_out) {
    return "timed out after " + std::to_string(limits.timeout.count()) + " ms and was killed";
  }
  if (reply_too_long) {
    return "wrote a reply over " + std::to_string(limits.max_reply_bytes) + " bytes and was killed";
  }
  if (signal != 0) {
    const char* name = ::strsignal(signal);
    return "crashed: signal " + std::to_string(signal) + (name != nullptr ? std::string(" (") + name + ")" : "");
  }
  return "exit status " + std::to_string(exit_code);
}

WorkerRun run_worker(const std::vector<std::string>& argv, std::string_view request,
                     const WorkerLimits& limits) {
  WorkerRun run;
  if (argv.empty() || argv.front().empty() || argv.front().front() != '/') {
    run.start_error = "the worker is not an absolute path";
    return run;
  }
  ChildOptions options;
  options.argv = argv;
  options.input = std::string(request);
  options.out = ChildSink::capture;
  options.err = ChildSink::capture;
  options.timeout = limits.timeout;
  options.max_output_bytes = limits.max_reply_bytes;
  options.memory_limit_bytes = limits.memory_limit_bytes;
  const ChildResult child = run_child_process(options, [&](ChildStream stream, std::string_view chunk) {
    if (stream == ChildStream::out) {
      run.reply.append(chunk);
    } else if (stream == ChildStream::err) {
      keep_tail(run.stderr_tail, chunk, limits.stderr_tail_bytes);
    }
  });
  run.start_error = child.start_error;
  run.refused = child.refused;
  run.exit_code = child.exit_code;
  run.signal = child.signal;
  run.timed_out = child.timed_out;
  run.reply_too_long = child.output_too_long;
  return run;
}

}  // namespace cujit::detail
