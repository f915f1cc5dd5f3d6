#include "spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace cujit::cli {
namespace {

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const noexcept { return fd_; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe whose write end sits at 10 or above, so that placing it at 1, 2 or the report
// descriptor in the child can never overwrite another end first.
struct Pipe {
  Fd read, write;
  Stream stream = Stream::out;
};

std::string make_pipe(Pipe& pipe, Stream stream) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  pipe.read = Fd(fds[0]);
  Fd low(fds[1]);
  const int high = ::fcntl(low.get(), F_DUPFD_CLOEXEC, 10);
  if (high < 0) return std::string("fcntl: ") + std::strerror(errno);
  pipe.write = Fd(high);
  pipe.stream = stream;
  return {};
}

std::vector<std::string> child_environment(const ChildSpec& spec) {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [set_name, value] : spec.environment) replaced = replaced || set_name == name;
    for (const std::string& unset : spec.unset) replaced = replaced || unset == name;
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [name, value] : spec.environment) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& text : strings) out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

// File actions owned for the length of one spawn.
class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() noexcept { return &actions_; }

  void to_null(int fd) { ::posix_spawn_file_actions_addopen(&actions_, fd, "/dev/null", O_WRONLY, 0); }
  void dup(int from, int to) { ::posix_spawn_file_actions_adddup2(&actions_, from, to); }

 private:
  posix_spawn_file_actions_t actions_;
};

// Reads every captured pipe to its end, handing each chunk to the handler.
void drain(std::vector<Pipe>& pipes, const OutputHandler& on_output, int tick_ms) {
  std::array<char, 65536> buffer{};
  using Clock = std::chrono::steady_clock;
  auto next_tick = Clock::now() + std::chrono::milliseconds(tick_ms);
  for (;;) {
    int timeout = -1;
    if (tick_ms > 0 && on_output) {
      const auto now = Clock::now();
      if (now >= next_tick) {
        on_output(Stream::tick, {});
        next_tick = now + std::chrono::milliseconds(tick_ms);
      }
      timeout = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - now).count()) + 1;
    }
    std::vector<pollfd> polled;
    std::vector<Pipe*> owners;
    for (Pipe& pipe : pipes) {
      if (pipe.read.get() < 0) continue;
      polled.push_back(pollfd{pipe.read.get(), POLLIN, 0});
      owners.push_back(&pipe);
    }
    if (polled.empty()) return;
    if (::poll(polled.data(), polled.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (polled[i].revents == 0) continue;
      const ssize_t got = ::read(polled[i].fd, buffer.data(), buffer.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        owners[i]->read.reset();
        continue;
      }
      if (on_output) on_output(owners[i]->stream, std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    }
  }
}

}  // namespace

ChildExit run_child(const ChildSpec& spec, const OutputHandler& on_output) {
  ChildExit result;
  if (spec.argv.empty()) {
    result.start_error = "no program given";
    return result;
  }
  std::vector<Pipe> pipes;
  FileActions actions;
  ::posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  auto capture = [&](Stream stream, int target) -> bool {
    Pipe pipe;
    if (std::string why = make_pipe(pipe, stream); !why.empty()) {
      result.start_error = why;
      return false;
    }
    actions.dup(pipe.write.get(), target);
    pipes.push_back(std::move(pipe));
    return true;
  };
  if (spec.out == Sink::null) actions.to_null(STDOUT_FILENO);
  if (spec.out == Sink::capture && !capture(Stream::out, STDOUT_FILENO)) return result;
  if (spec.err_to_out) {
    actions.dup(STDOUT_FILENO, STDERR_FILENO);
  } else {
    if (spec.err == Sink::null) actions.to_null(STDERR_FILENO);
    if (spec.err == Sink::capture && !capture(Stream::err, STDERR_FILENO)) return result;
  }
  if (spec.report_fd >= 3 && spec.report_fd <= 9 && !capture(Stream::report, spec.report_fd)) return result;

  std::vector<std::string> args(spec.argv), environment = child_environment(spec);
  std::vector<char*> argv = pointers(args), envp = pointers(environment);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, argv[0], actions.get(), nullptr, argv.data(), envp.data());
  for (Pipe& pipe : pipes) pipe.write.reset();  // the child holds them now
  if (spawned != 0) {
    result.start_error = "cannot start '" + spec.argv.front() + "': " + std::strerror(spawned);
    return result;
  }
  drain(pipes, on_output, spec.tick_ms);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      result.start_error = std::string("waitpid: ") + std::strerror(errno);
      return result;
    }
  }
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

namespace {
constexpr std::array<std::pair<int, const char*>, 15> signal_names{{
    {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGFPE, "SIGFPE"}, {SIGBUS, "SIGBUS"},
    {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
    {SIGPIPE, "SIGPIPE"}, {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"},
    {SIGXFSZ, "SIGXFSZ"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"},
}};
}  // namespace

std::string signal_name(int signal) {
  for (const auto& [number, name] : signal_names) {
    if (number == signal) return name;
  }
  return "signal " + std::to_string(signal);
}

int signal_number(std::string_view name) {
  for (const auto& [number, full] : signal_names) {
    const std::string_view text(full);
    if (name == text || name == text.substr(3)) return number;
  }
  return 0;
}

std::string describe(const ChildExit& exit) {
  if (!exit.started()) return "could not start: " + exit.start_error;
  if (exit.signal != 0) return "crashed: " + signal_name(exit.signal);
  return "exit status " + std::to_string(exit.exit_code);
}

std::string self_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("cannot find this program's executable (/proc/self/exe): " + error.message());
  return self.string();
}

void Tail::append(std::string_view text) {
  text_.append(text);
  if (text_.size() > limit_) text_.erase(0, text_.size() - limit_);
}

std::string Tail::last_line() const {
  std::size_t end = text_.size();
  while (end > 0 && (text_[end - 1] == '\n' || text_[end - 1] == '\r')) --end;
  const std::size_t start = text_.rfind('\n', end == 0 ? 0 : end - 1);
  const std::size_t from = start == std::string::npos ? 0 : start + 1;
  return from < end ? text_.substr(from, end - from) : std::string();
}

std::string Tail::last_line_starting(std::string_view prefix) const {
  std::size_t at = text_.size();
  while (at != std::string::npos && at > 0) {
    const std::size_t found = text_.rfind(prefix, at - 1);
    if (found == std::string::npos) return {};
    if (found == 0 || text_[found - 1] == '\n') {
      const std::size_t from = found + prefix.size();
      const std::size_t end = text_.find('\n', from);
      return text_.substr(from, end == std::string::npos ? std::string::npos : end - from);
    }
    at = found;
  }
  return {};
}

}  // namespace cujit::cli
