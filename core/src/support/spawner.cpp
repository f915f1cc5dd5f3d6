#include "support/spawner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <algorithm>
#include <deque>
#include <thread>

extern char** environ;

namespace cujit::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(const char* call, int error) { return std::string(call) + ": " + std::strerror(error); }

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

bool trusted_owner(uid_t owner) { return owner == 0 || owner == ::geteuid(); }

// The ownership and write-permission rules, for a file or a directory already lstat'd.
std::optional<std::string> ownership_problem(const struct stat& info, bool is_directory) {
  if (!trusted_owner(info.st_uid)) {
    return "is owned by uid " + std::to_string(info.st_uid) + ", neither root nor this user (uid " +
           std::to_string(::geteuid()) + ")";
  }
  // A sticky directory (/tmp) lets others add entries but not rename or remove ours.
  const bool sticky = is_directory && (info.st_mode & S_ISVTX) != 0;
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky) {
    return "is writable by " + std::string((info.st_mode & S_IWOTH) != 0 ? "others" : "its group") + " (mode " +
           octal_mode(info.st_mode) + ")";
  }
  return std::nullopt;
}

ExecutableRefusal refusal(ExecutableProblem problem, std::string path, std::string why) {
  return ExecutableRefusal{problem, std::move(path), std::move(why)};
}

// Every directory from `real`'s parent up to "/" (real: a path realpath returned).
std::optional<ExecutableRefusal> check_ancestors(const std::string& given, const std::filesystem::path& real) {
  for (std::filesystem::path dir = real.parent_path();; dir = dir.parent_path()) {
    struct stat info {};
    if (::lstat(dir.c_str(), &info) != 0) {
      return refusal(ExecutableProblem::unreadable, given,
                     "its directory '" + dir.string() + "' cannot be examined: " + std::strerror(errno));
    }
    if (const auto why = ownership_problem(info, true)) {
      return refusal(ExecutableProblem::untrusted_directory, given, "its directory '" + dir.string() + "' " + *why);
    }
    if (dir == dir.root_path() || dir.empty()) return std::nullopt;
  }
}

std::optional<std::string> real_path(const std::string& path, int& error) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) {
    error = errno;
    return std::nullopt;
  }
  std::string text(resolved);
  std::free(resolved);
  return text;
}

enum class Want { executable, file, directory };

std::optional<ExecutableRefusal> check_path(const std::string& given, Want want, TrustedExecutable* out) {
  int error = 0;
  const auto real = real_path(given, error);
  if (!real) {
    if (error == ENOENT || error == ENOTDIR) return refusal(ExecutableProblem::missing, given, "does not exist");
    return refusal(ExecutableProblem::unreadable, given, "cannot be resolved: " + std::string(std::strerror(error)));
  }
  if (auto bad = check_ancestors(given, *real)) return bad;
  // O_PATH: no read permission needed and nothing of the file runs; O_NOFOLLOW: the real
  // path has no link left, so one planted since is refused rather than followed.
  UniqueFd fd(::open(real->c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    error = errno;
    if (error == ENOENT) return refusal(ExecutableProblem::missing, given, "does not exist");
    return refusal(ExecutableProblem::unreadable, given, "cannot be opened: " + std::string(std::strerror(error)));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return refusal(ExecutableProblem::unreadable, given, "cannot be examined: " + std::string(std::strerror(errno)));
  }
  const bool directory = want == Want::directory;
  if (directory ? !S_ISDIR(info.st_mode) : !S_ISREG(info.st_mode)) {
    return refusal(ExecutableProblem::not_regular, given,
                   directory ? "is not a directory" : "is not a regular file (mode " + octal_mode(info.st_mode) + ")");
  }
  if (const auto why = ownership_problem(info, directory)) {
    const bool owner = !trusted_owner(info.st_uid);
    return refusal(owner ? ExecutableProblem::foreign_owner : ExecutableProblem::writable_by_others, given, *why);
  }
  if (want == Want::executable && (info.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0) {
    return refusal(ExecutableProblem::not_executable, given, "is not executable (mode " + octal_mode(info.st_mode) + ")");
  }
  if (out != nullptr) {
    out->path = *real;
    out->fd = std::move(fd);
  }
  return std::nullopt;
}

// PATH lookup as execvp does it, except that an empty entry (the working directory) is
// skipped: a name never runs a file from wherever the caller happens to be.
std::string find_on_path(const std::string& name) {
  const char* value = std::getenv("PATH");
  const std::string path = value != nullptr ? value : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::string dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir.front() != '/') continue;
    const std::string candidate = dir + "/" + name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return {};
}

// A descriptor at 10 or above, close-on-exec, so that placing it at 0..9 in the child can
// never overwrite another one first.
std::string raise_fd(UniqueFd& fd) {
  if (fd.get() >= 10) return {};
  const int high = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 10);
  if (high < 0) return errno_text("fcntl", errno);
  fd.reset(high);
  return {};
}

struct Pipe {
  UniqueFd read, write;
  ChildStream stream = ChildStream::out;
  int target = -1;  // the descriptor the child gets its write end at
};

std::string make_pipe(Pipe& pipe, ChildStream stream, int target) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_text("pipe2", errno);
  pipe.read = UniqueFd(fds[0]);
  pipe.write = UniqueFd(fds[1]);
  pipe.stream = stream;
  pipe.target = target;
  return raise_fd(pipe.write);
}

std::string input_file(const std::string& bytes, UniqueFd& file) {
  file = UniqueFd(::memfd_create("cujit-child-input", MFD_CLOEXEC));
  if (file.get() < 0) return errno_text("memfd_create", errno);
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t wrote = ::write(file.get(), bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return errno_text("write", errno);
    done += static_cast<std::size_t>(wrote);
  }
  if (::lseek(file.get(), 0, SEEK_SET) != 0) return errno_text("lseek", errno);
  return raise_fd(file);
}

std::vector<std::string> child_environment(const ChildOptions& options) {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [set_name, value] : options.environment) replaced = replaced || set_name == name;
    for (const std::string& unset : options.unset) replaced = replaced || unset == name;
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [name, value] : options.environment) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& text : strings) out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

// Everything the child does between vfork and exec, prepared by the parent: the child
// only makes system calls (it shares the parent's memory until it executes).
struct ChildPlan {
  std::array<std::pair<int, int>, 5> moves{};  // (from, to): dup2 in this order
  std::size_t move_count = 0;
  int executable = -1;
  const char* executable_path = nullptr;  // for a script, whose interpreter reopens it
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  rlim_t memory_limit = 0;
  rlim_t cpu_limit = 0;
  const sigset_t* mask = nullptr;  // the parent's mask, restored just before exec
  int report_error = -1;           // errno goes here when exec fails
};

[[noreturn]] __attribute__((noinline)) void exec_child(const ChildPlan& plan) {
  // Handlers of the parent must not run in the child (it shares their memory until exec).
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction action {};
    if (::sigaction(sig, nullptr, &action) != 0 || action.sa_handler == SIG_IGN || action.sa_handler == SIG_DFL) {
      continue;
    }
    action.sa_handler = SIG_DFL;
    action.sa_flags = 0;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
  }
  int error = 0;
  for (std::size_t i = 0; i < plan.move_count && error == 0; ++i) {
    if (::dup2(plan.moves[i].first, plan.moves[i].second) < 0) error = errno;
  }
  if (error == 0 && plan.memory_limit > 0) {
    const struct rlimit limit {plan.memory_limit, plan.memory_limit};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) error = errno;
  }
  if (error == 0 && plan.cpu_limit > 0) {
    // The hard limit a second above the soft one: at the soft limit the kernel sends
    // SIGXCPU, which names the cause; with both equal it sends SIGKILL instead, which reads
    // as a crash (and raced the caller's own wall-time kill). A child that catches SIGXCPU
    // still gets SIGKILL a second later.
    const struct rlimit limit {plan.cpu_limit, plan.cpu_limit + 1};
    if (::setrlimit(RLIMIT_CPU, &limit) != 0) error = errno;
  }
  if (error == 0) {
    ::sigprocmask(SIG_SETMASK, plan.mask, nullptr);
    ::syscall(SYS_execveat, plan.executable, "", plan.argv, plan.envp, AT_EMPTY_PATH);
    error = errno;
    // A script (#!) executed through a close-on-exec descriptor leaves its interpreter
    // nothing to open (ENOENT): run it by its checked real path, whose directories were
    // checked so that nobody else can have replaced it.
    if (error == ENOENT) {
      ::execve(plan.executable_path, plan.argv, plan.envp);
      error = errno;
    }
  }
  while (::write(plan.report_error, &error, sizeof error) < 0 && errno == EINTR) {
  }
  ::_exit(127);
}

int wait_ms(Clock::time_point now, std::optional<Clock::time_point> deadline,
            std::optional<Clock::time_point> next_tick) {
  long long ms = -1;
  for (const auto& until : {deadline, next_tick}) {
    if (!until) continue;
    const long long left = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(*until - now).count() + 1);
    ms = ms < 0 ? left : std::min(ms, left);
  }
  return static_cast<int>(std::min<long long>(ms, 60'000));
}

void kill_and_reap(pid_t pid, int& status) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::string_view to_string(ExecutableProblem problem) noexcept {
  switch (problem) {
    case ExecutableProblem::missing: return "missing";
    case ExecutableProblem::not_regular: return "not_regular";
    case ExecutableProblem::not_executable: return "not_executable";
    case ExecutableProblem::foreign_owner: return "foreign_owner";
    case ExecutableProblem::writable_by_others: return "writable_by_others";
    case ExecutableProblem::untrusted_directory: return "untrusted_directory";
    case ExecutableProblem::unreadable: return "unreadable";
    case ExecutableProblem::untrusted_interpreter: return "untrusted_interpreter";
  }
  return "unknown";
}

std::string ExecutableRefusal::message() const {
  // "it its directory ..." reads wrong (red-team note M2): a reason about its directory stands alone.
  return "refusing to run '" + path + "': " + (why.rfind("its ", 0) == 0 ? why : "it " + why);
}

namespace {

// What a #! line names: its interpreter (first word) and the one argument the kernel passes
// it (the rest of the line, trimmed); empty when the file is not a script. Read through the
// checked descriptor, so it is the file that was checked; a file this process cannot read
// is no script it could run either (the interpreter must read it).
struct Shebang {
  std::string interpreter, argument;
};
Shebang script_interpreter(const TrustedExecutable& checked) {
  const std::string reopen = "/proc/self/fd/" + std::to_string(checked.fd.get());
  UniqueFd file(::open(reopen.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (file.get() < 0) return {};
  // The kernel reads at most 256 bytes of the #! line (BINPRM_BUF_SIZE).
  char head[256];
  ssize_t got = 0;
  do {
    got = ::read(file.get(), head, sizeof head);
  } while (got < 0 && errno == EINTR);
  if (got < 2 || head[0] != '#' || head[1] != '!') return {};
  std::string_view line(head + 2, static_cast<std::size_t>(got) - 2);
  line = line.substr(0, line.find('\n'));
  const auto trim = [](std::string_view text) {
    const std::size_t start = text.find_first_not_of(" \t");
    if (start == std::string_view::npos) return std::string_view();
    return text.substr(start, text.find_last_not_of(" \t") - start + 1);
  };
  line = trim(line);
  const std::size_t end = line.find_first_of(" \t");
  if (end == std::string_view::npos) return {std::string(line), {}};
  return {std::string(line.substr(0, end)), std::string(trim(line.substr(end)))};
}

// Whether every PATH entry is an absolute directory: then env(1)'s lookup of a name is the
// one find_on_path makes (an empty or relative entry is the working directory to env).
bool path_entries_absolute() {
  const char* value = std::getenv("PATH");
  if (value == nullptr) return true;
  const std::string path = value;
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    if (end == start || path[start] != '/') return false;
    start = end + 1;
  }
  return true;
}

std::optional<ExecutableRefusal> check_interpreters(const std::string& given, const TrustedExecutable& checked,
                                                    int depth) {
  const Shebang line = script_interpreter(checked);
  const std::string& interpreter = line.interpreter;
  if (interpreter.empty()) return std::nullopt;
  auto refused_by = [&](const std::string& why) {
    return refusal(ExecutableProblem::untrusted_interpreter, given, "is a script whose #! interpreter '" +
                                                                       interpreter + "' " + why);
  };
  if (depth >= 4) return refused_by("is a script too (more than 4 levels)");
  if (interpreter.front() != '/') return refused_by("is not an absolute path");
  TrustedExecutable next;
  if (auto refused = check_path(interpreter, Want::executable, &next)) return refused_by("is refused: it " + refused->why);
  if (auto refused = check_interpreters(given, next, depth + 1)) return refused;
  if (std::filesystem::path(interpreter).filename() != "env") return std::nullopt;
  // #!/usr/bin/env NAME: env looks NAME up on PATH when it runs, so NAME is looked up here
  // the same way and checked; what cujit cannot tell env's lookup from is refused.
  const std::string& name = line.argument;
  if (name.empty() || name.front() == '-' || name.find_first_of(" \t") != std::string::npos) {
    return refused_by("is given '" + name + "', not one program name (env's options are not followed)");
  }
  std::string program = name;
  if (name.find('/') == std::string::npos) {
    if (!path_entries_absolute()) {
      return refused_by("looks '" + name + "' up on a PATH with an empty or relative entry (the working directory)");
    }
    program = find_on_path(name);
    if (program.empty()) return refused_by("finds no '" + name + "' on PATH");
  } else if (name.front() != '/') {
    return refused_by("is given the relative path '" + name + "'");
  }
  TrustedExecutable found;
  if (auto refused = check_path(program, Want::executable, &found)) {
    return refused_by("runs '" + program + "', which is refused: it " + refused->why);
  }
  return check_interpreters(given, found, depth + 1);
}

}  // namespace

std::optional<ExecutableRefusal> open_trusted_executable(const std::string& program, TrustedExecutable& out) {
  if (program.empty()) return refusal(ExecutableProblem::missing, program, "is an empty name");
  std::string path = program;
  if (program.find('/') == std::string::npos) {
    path = find_on_path(program);
    if (path.empty()) return refusal(ExecutableProblem::missing, program, "is not found on PATH");
  } else if (program.front() != '/') {
    std::error_code error;
    path = std::filesystem::absolute(program, error).string();
  }
  if (auto refused = check_path(path, Want::executable, &out)) return refused;
  if (auto refused = check_interpreters(program, out, 0)) {
    out = TrustedExecutable{};
    return refused;
  }
  return std::nullopt;
}

std::optional<ExecutableRefusal> check_trusted_file(const std::string& path) {
  return check_path(path, Want::file, nullptr);
}

std::optional<ExecutableRefusal> check_trusted_directory(const std::string& path) {
  return check_path(path, Want::directory, nullptr);
}

std::optional<ExecutableRefusal> check_trusted_descriptor(int fd, const std::string& path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return refusal(ExecutableProblem::unreadable, path, "cannot be examined: " + std::string(std::strerror(errno)));
  }
  if (!S_ISREG(info.st_mode)) {
    return refusal(ExecutableProblem::not_regular, path, "is not a regular file (mode " + octal_mode(info.st_mode) + ")");
  }
  if (const auto why = ownership_problem(info, false)) {
    const bool owner = !trusted_owner(info.st_uid);
    return refusal(owner ? ExecutableProblem::foreign_owner : ExecutableProblem::writable_by_others, path, *why);
  }
  return std::nullopt;
}

namespace {

// The walk of the check_trusted_*_as_written checks, the way the kernel walks the path:
// component by component from the root (a relative path from the working directory), each
// link followed where it stands (its owner judged first), and ".." taken from the directory
// actually reached, never dropped lexically beforehand (a link of another user's followed
// by ".." was skipped that way: red-team finding, 2026-11-28). Every directory passed
// through follows the ownership rules (a sticky one such as /tmp allowed, except as the last
// of a `whole` path), every link is owned by root or the caller. `whole`: the path must exist
// to its end, and its end be a directory and no link; otherwise the walk stops, content, at
// the first part that does not exist yet (what the caller is about to create), and the last
// part, when it is no link, is the caller's to check (an O_NOFOLLOW open, a key file's rules).
std::optional<ExecutableRefusal> walk_as_written(const std::string& path, bool whole) {
  std::error_code error;
  const std::filesystem::path given(path);
  if (whole && !given.is_absolute()) return refusal(ExecutableProblem::unreadable, path, "is not an absolute path");
  const std::filesystem::path written = given.is_absolute() ? given : std::filesystem::current_path(error) / given;
  if (error) return refusal(ExecutableProblem::unreadable, path, "cannot be made absolute: " + error.message());
  std::deque<std::filesystem::path> remaining;
  const auto prepend = [&](const std::filesystem::path& parts) {
    std::vector<std::filesystem::path> list;
    for (const std::filesystem::path& part : parts.relative_path()) list.push_back(part);
    remaining.insert(remaining.begin(), list.begin(), list.end());
  };
  prepend(written);
  std::filesystem::path current = "/";  // a real directory: no link in it, no ".."
  int links = 0;
  while (!remaining.empty()) {
    const std::filesystem::path part = remaining.front();
    remaining.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      current = current.parent_path();
      continue;
    }
    const std::filesystem::path next = current / part;
    const bool last = std::all_of(remaining.begin(), remaining.end(),
                                  [](const std::filesystem::path& p) { return p.empty() || p == "."; });
    struct stat info {};
    if (::lstat(next.c_str(), &info) != 0) {
      if (!whole && errno == ENOENT) return std::nullopt;
      return refusal(errno == ENOENT ? ExecutableProblem::missing : ExecutableProblem::unreadable, path,
                     "has a part '" + next.string() + "' that cannot be examined: " + std::strerror(errno));
    }
    if (S_ISLNK(info.st_mode)) {
      // The build tree itself is a directory CMake made, never a link; one there now was
      // put in its place (as a stand-in for a gone tree, red-team finding F4).
      if (whole && last) {
        return refusal(ExecutableProblem::untrusted_directory, path, "is a link, not the directory it was built as");
      }
      if (!trusted_owner(info.st_uid)) {
        return refusal(ExecutableProblem::untrusted_directory, path,
                       "has a part '" + next.string() + "' that is a link owned by uid " +
                           std::to_string(info.st_uid) + ", neither root nor this user");
      }
      if (++links > 40) return refusal(ExecutableProblem::unreadable, path, "goes through more than 40 links");
      std::array<char, 4096> target{};
      const ssize_t size = ::readlink(next.c_str(), target.data(), target.size() - 1);
      if (size < 0) {
        return refusal(ExecutableProblem::unreadable, path,
                       "has a link '" + next.string() + "' that cannot be read: " + std::strerror(errno));
      }
      const std::filesystem::path points_to(std::string(target.data(), static_cast<std::size_t>(size)));
      if (points_to.is_absolute()) current = "/";
      prepend(points_to);
      continue;
    }
    if (!whole && last) return std::nullopt;
    if (const auto why = ownership_problem(info, S_ISDIR(info.st_mode) && !(whole && last))) {
      // The tree itself may not be sticky-writable either: others could add files to it.
      return refusal(ExecutableProblem::untrusted_directory, path, "has a part '" + next.string() + "' that " + *why);
    }
    if (!S_ISDIR(info.st_mode) && !last) {
      return refusal(ExecutableProblem::unreadable, path, "has a part '" + next.string() + "' that is not a directory");
    }
    current = next;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ExecutableRefusal> check_trusted_directory_as_written(const std::string& path) {
  if (auto refused = walk_as_written(path, true)) return refused;
  return check_path(path, Want::directory, nullptr);
}

std::optional<ExecutableRefusal> check_path_as_written(const std::string& path) {
  return walk_as_written(path, false);
}

namespace {

// check_trusted_tree's walk: `budget` counts entries over the whole tree (a tree that large
// is not an installed script's), `depth` the directories and links to directories followed
// (a link cycle ends there).
std::optional<ExecutableRefusal> check_tree(const std::string& path, std::size_t& budget, int depth) {
  if (auto refused = check_path(path, Want::directory, nullptr)) return refused;
  if (depth > 32) return refusal(ExecutableProblem::unreadable, path, "is more than 32 directories deep");
  std::error_code error;
  std::filesystem::directory_iterator it(path, error), end;
  if (error) return refusal(ExecutableProblem::unreadable, path, "cannot be listed: " + error.message());
  for (; it != end; it.increment(error)) {
    if (error) return refusal(ExecutableProblem::unreadable, path, "cannot be listed: " + error.message());
    if (budget-- == 0) return refusal(ExecutableProblem::unreadable, path, "holds too many entries");
    const std::string entry = it->path().string();
    // Links are judged by what they name: check_path follows them and checks the target and
    // the directories above it.
    std::error_code kind_error;
    const auto refused = it->is_directory(kind_error) ? check_tree(entry, budget, depth + 1)
                                                      : check_path(entry, Want::file, nullptr);
    if (refused) return refused;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ExecutableRefusal> check_trusted_tree(const std::string& path) {
  // Every entry, as an interpreter may read any of them (a module beside the script, a
  // package's files, their bytecode): files and directories by the same rules.
  std::size_t budget = 100000;
  return check_tree(path, budget, 0);
}

ChildResult run_child_process(const ChildOptions& options, const ChildOutput& on_output) {
  ChildResult result;
  const auto fail = [&](std::string why) {
    result.start_error = std::move(why);
    return result;
  };
  if (options.argv.empty()) return fail("no program given");
  TrustedExecutable program;
  if (auto refused = open_trusted_executable(options.argv.front(), program)) {
    result.start_error = refused->message();
    result.refused = std::move(refused);
    return result;
  }
  if (std::string why = raise_fd(program.fd); !why.empty()) return fail(why);

  // Every descriptor the child gets, opened here close-on-exec at 10 or above.
  UniqueFd input, null_out;
  std::vector<Pipe> pipes;
  ChildPlan plan;
  const auto move = [&](int from, int to) { plan.moves[plan.move_count++] = {from, to}; };
  if (options.input) {
    if (std::string why = input_file(*options.input, input); !why.empty()) return fail(why);
  } else {
    input = UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (input.get() < 0) return fail(errno_text("open /dev/null", errno));
    if (std::string why = raise_fd(input); !why.empty()) return fail(why);
  }
  move(input.get(), STDIN_FILENO);
  const int null_fd = options.input ? -1 : input.get();
  const auto need_null = [&]() -> int {
    if (null_fd >= 0) return null_fd;
    if (null_out.get() < 0) {
      null_out = UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
      if (null_out.get() >= 0) raise_fd(null_out);
    }
    return null_out.get();
  };
  const auto sink = [&](ChildSink where, ChildStream stream, int target) -> std::string {
    if (where == ChildSink::inherit) return {};
    if (where == ChildSink::null) {
      const int fd = need_null();
      if (fd < 0) return errno_text("open /dev/null", errno);
      move(fd, target);
      return {};
    }
    Pipe pipe;
    if (std::string why = make_pipe(pipe, stream, target); !why.empty()) return why;
    move(pipe.write.get(), target);
    pipes.push_back(std::move(pipe));
    return {};
  };
  pipes.reserve(3);
  if (std::string why = sink(options.out, ChildStream::out, STDOUT_FILENO); !why.empty()) return fail(why);
  if (options.err_to_out) {
    move(STDOUT_FILENO, STDERR_FILENO);
  } else if (std::string why = sink(options.err, ChildStream::err, STDERR_FILENO); !why.empty()) {
    return fail(why);
  }
  if (options.report_fd >= 3 && options.report_fd <= 9) {
    if (std::string why = sink(ChildSink::capture, ChildStream::report, options.report_fd); !why.empty()) {
      return fail(why);
    }
  }
  int exec_error_pipe[2];
  if (::pipe2(exec_error_pipe, O_CLOEXEC) != 0) return fail(errno_text("pipe2", errno));
  UniqueFd exec_error_read(exec_error_pipe[0]), exec_error_write(exec_error_pipe[1]);

  std::vector<std::string> args(options.argv), environment = child_environment(options);
  std::vector<char*> argv = pointers(args), envp = pointers(environment);
  plan.executable = program.fd.get();
  plan.executable_path = program.path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.memory_limit = static_cast<rlim_t>(options.memory_limit_bytes);
  plan.cpu_limit = static_cast<rlim_t>(options.cpu_limit_seconds);
  plan.report_error = exec_error_write.get();

  // All signals blocked across vfork, so that no handler of ours runs in the child before
  // it has reset them; the child restores this mask just before exec.
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  plan.mask = &previous;
  const std::optional<Clock::time_point> deadline =
      options.timeout ? std::optional<Clock::time_point>(Clock::now() + *options.timeout) : std::nullopt;
  const pid_t pid = ::vfork();
  if (pid == 0) exec_child(plan);
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  exec_error_write.reset();
  input.reset();  // the child holds its own copies now
  null_out.reset();
  for (Pipe& pipe : pipes) pipe.write.reset();
  if (pid < 0) return fail(errno_text("vfork", fork_error));
  int exec_error = 0;
  ssize_t got_error = 0;
  while ((got_error = ::read(exec_error_read.get(), &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  if (got_error == static_cast<ssize_t>(sizeof exec_error)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return fail("cannot start '" + program.path + "': " + std::strerror(exec_error));
  }

  // Reads every captured pipe to its end, the deadline or the output cap, whichever first.
  std::array<char, 65536> buffer{};
  std::optional<Clock::time_point> next_tick;
  if (options.tick_ms > 0 && on_output) next_tick = Clock::now() + std::chrono::milliseconds(options.tick_ms);
  std::size_t output_bytes = 0;
  int status = 0;
  try {
    for (;;) {
      std::vector<pollfd> polled;
      std::vector<Pipe*> owners;
      for (Pipe& pipe : pipes) {
        if (pipe.read.get() < 0) continue;
        polled.push_back(pollfd{pipe.read.get(), POLLIN, 0});
        owners.push_back(&pipe);
      }
      if (polled.empty()) break;
      const Clock::time_point now = Clock::now();
      if (deadline && now >= *deadline) {
        result.timed_out = true;
        break;
      }
      if (next_tick && now >= *next_tick) {
        on_output(ChildStream::tick, {});
        next_tick = now + std::chrono::milliseconds(options.tick_ms);
      }
      const int ready = ::poll(polled.data(), polled.size(), wait_ms(now, deadline, next_tick));
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) break;
      for (std::size_t i = 0; i < polled.size() && !result.output_too_long; ++i) {
        if (polled[i].revents == 0) continue;
        const ssize_t got = ::read(polled[i].fd, buffer.data(), buffer.size());
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) {
          owners[i]->read.reset();
          continue;
        }
        const std::string_view chunk(buffer.data(), static_cast<std::size_t>(got));
        if (owners[i]->stream == ChildStream::out && options.max_output_bytes > 0) {
          output_bytes += chunk.size();
          if (output_bytes > options.max_output_bytes) {
            result.output_too_long = true;
            break;
          }
        }
        if (on_output) on_output(owners[i]->stream, chunk);
      }
      if (result.output_too_long) break;
    }
  } catch (...) {
    kill_and_reap(pid, status);
    throw;
  }
  for (Pipe& pipe : pipes) pipe.read.reset();
  if (result.timed_out || result.output_too_long) {
    kill_and_reap(pid, status);
  } else if (deadline) {
    for (;;) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) return fail(errno_text("waitpid", errno));
      if (Clock::now() >= *deadline) {
        result.timed_out = true;
        kill_and_reap(pid, status);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } else {
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return fail(errno_text("waitpid", errno));
    }
  }
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace cujit::detail
