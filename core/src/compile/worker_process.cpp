#include "compile/worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "support/unique_fd.hpp"

extern char** environ;

namespace cujit::detail {
namespace {

using Clock = std::chrono::steady_clock;

using Fd = UniqueFd;

std::string errno_text(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// A pipe whose write end sits at 10 or above, so that placing it at 1 or 2 in the child can
// never overwrite another end first; both ends close-on-exec.
std::string make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_text("pipe2");
  read_end = Fd(fds[0]);
  Fd low(fds[1]);
  const int high = ::fcntl(low.get(), F_DUPFD_CLOEXEC, 10);
  if (high < 0) return errno_text("fcntl");
  write_end = Fd(high);
  return {};
}

// The request as an anonymous in-memory file, read from its start: the child reads it at
// its own pace, and a child that dies early cannot block or signal the writer.
std::string request_file(std::string_view request, Fd& file) {
  file = Fd(::memfd_create("cujit-worker-request", MFD_CLOEXEC));
  if (file.get() < 0) return errno_text("memfd_create");
  for (std::size_t done = 0; done < request.size();) {
    const ssize_t wrote = ::write(file.get(), request.data() + done, request.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return errno_text("write");
    done += static_cast<std::size_t>(wrote);
  }
  if (::lseek(file.get(), 0, SEEK_SET) != 0) return errno_text("lseek");
  // Keep it close-on-exec even at a descriptor below 10: dup2 onto 0 in the child clears
  // the flag only there.
  return {};
}

class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() noexcept { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60'000));
}

void keep_tail(std::string& tail, std::string_view chunk, std::size_t limit) {
  tail.append(chunk);
  if (tail.size() > limit) tail.erase(0, tail.size() - limit);
}

// Reads stdout and stderr to their ends, the deadline or the reply limit, whichever first.
void drain(Fd& out, Fd& err, WorkerRun& run, const WorkerLimits& limits, Clock::time_point deadline) {
  std::array<char, 65536> buffer{};
  while (out.get() >= 0 || err.get() >= 0) {
    std::array<pollfd, 2> polled{pollfd{out.get(), POLLIN, 0}, pollfd{err.get(), POLLIN, 0}};
    const int timeout = remaining_ms(deadline);
    if (timeout == 0) {
      run.timed_out = true;
      return;
    }
    const int ready = ::poll(polled.data(), polled.size(), timeout);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      run.start_error = errno_text("poll");
      return;
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (polled[i].fd < 0 || polled[i].revents == 0) continue;
      Fd& fd = i == 0 ? out : err;
      const ssize_t got = ::read(fd.get(), buffer.data(), buffer.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        fd.reset();
        continue;
      }
      const std::string_view chunk(buffer.data(), static_cast<std::size_t>(got));
      if (i == 1) {
        keep_tail(run.stderr_tail, chunk, limits.stderr_tail_bytes);
      } else if (run.reply.size() + chunk.size() > limits.max_reply_bytes) {
        run.reply_too_long = true;
        return;
      } else {
        run.reply.append(chunk);
      }
    }
  }
}

// Waits for the child until the deadline; kills it when it is not done by then or when
// `kill_now` (it overran or timed out while writing).
void reap(pid_t pid, WorkerRun& run, Clock::time_point deadline, bool kill_now) {
  int status = 0;
  if (!kill_now) {
    for (;;) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) {
        run.start_error = errno_text("waitpid");
        return;
      }
      if (Clock::now() >= deadline) {
        run.timed_out = true;
        kill_now = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (kill_now) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) {
        run.start_error = errno_text("waitpid");
        return;
      }
    }
  }
  if (WIFSIGNALED(status)) {
    run.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
  }
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
  Fd input, out_read, out_write, err_read, err_write;
  for (std::string why : {request_file(request, input), make_pipe(out_read, out_write),
                          make_pipe(err_read, err_write)}) {
    if (!why.empty()) {
      run.start_error = why;
      return run;
    }
  }
  FileActions actions;
  ::posix_spawn_file_actions_adddup2(actions.get(), input.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), out_write.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), err_write.get(), STDERR_FILENO);
  std::vector<std::string> args(argv);
  std::vector<char*> pointers;
  for (std::string& arg : args) pointers.push_back(arg.data());
  pointers.push_back(nullptr);

  const Clock::time_point deadline = Clock::now() + limits.timeout;
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, pointers[0], actions.get(), nullptr, pointers.data(), environ);
  input.reset();  // the child holds its own copies now
  out_write.reset();
  err_write.reset();
  if (spawned != 0) {
    run.start_error = "posix_spawn '" + argv.front() + "': " + std::strerror(spawned);
    return run;
  }
  drain(out_read, err_read, run, limits, deadline);
  out_read.reset();
  err_read.reset();
  reap(pid, run, deadline, run.timed_out || run.reply_too_long || !run.start_error.empty());
  return run;
}

}  // namespace cujit::detail
