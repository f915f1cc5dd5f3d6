#include "spawn.hpp"

#include <array>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <stdexcept>

#include "support/spawner.hpp"

namespace cujit::cli {

ChildExit run_child(const ChildSpec& spec, const OutputHandler& on_output) {
  detail::ChildOptions options;
  options.argv = spec.argv;
  options.environment = spec.environment;
  options.unset = spec.unset;
  const auto sink = [](Sink where) {
    return where == Sink::null ? detail::ChildSink::null
           : where == Sink::capture ? detail::ChildSink::capture
                                    : detail::ChildSink::inherit;
  };
  options.out = sink(spec.out);
  options.err = sink(spec.err);
  options.err_to_out = spec.err_to_out;
  options.report_fd = spec.report_fd;
  options.tick_ms = on_output ? spec.tick_ms : 0;
  if (spec.timeout_ms > 0) options.timeout = std::chrono::milliseconds(spec.timeout_ms);
  options.memory_limit_bytes = spec.memory_limit_bytes;
  options.cpu_limit_seconds = spec.cpu_limit_seconds;
  const detail::ChildResult child =
      detail::run_child_process(options, [&](detail::ChildStream stream, std::string_view text) {
        if (!on_output) return;
        on_output(stream == detail::ChildStream::out      ? Stream::out
                  : stream == detail::ChildStream::err    ? Stream::err
                  : stream == detail::ChildStream::report ? Stream::report
                                                          : Stream::tick,
                  text);
      });
  ChildExit result;
  result.start_error = child.start_error;
  result.refused = child.refused.has_value();
  result.exit_code = child.exit_code;
  result.signal = child.signal;
  result.timed_out = child.timed_out;
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
  if (exit.timed_out) return "timed out and was killed";
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
