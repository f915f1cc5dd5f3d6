#include "link/failure_capture.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "support/spawner.hpp"
#include "support/unique_fd.hpp"

namespace cujit::detail {
namespace {

thread_local int suppressed = 0;
std::atomic<int> captures{0};

using Fd = UniqueFd;

struct CaptureFailed {
  std::string why;
};

[[noreturn]] void fail(const std::string& what) {
  throw CaptureFailed{what + ": " + std::strerror(errno)};
}

// Creates `name` in `dir` (never an existing file, never through a symlink), 0600.
void write_new_file(int dir, const std::string& name, std::string_view bytes) {
  const Fd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) fail("cannot create " + name);
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write " + name);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The capture directory itself, opened without following a symlink in its last part, and
// created (0700) when it does not exist.
int open_capture_root(const std::string& root) {
  // The rule of `cujit repro --capture` and every --out: no link or directory of another
  // user's on the way as written, and the directory itself owned by root or this user and
  // writable by no one else; otherwise another user could take the scenario, or plant one
  // where the message says to run it (red-team finding, 2026-11-28).
  if (const auto refused = check_path_as_written(root)) fail(root + " " + refused->why);
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) fail("cannot create " + root);
  if (const auto refused = check_trusted_directory(root)) fail(refused->path + " " + refused->why);
  const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail("cannot open the directory " + root);
  return fd;
}

// A new directory of this capture's own in `root`: "<builder>-<pid>-<time>-<n>".
std::string make_capture_dir(int root, const std::string& builder, int number) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto stamp = std::chrono::duration_cast<std::chrono::microseconds>(now).count();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = "cujit-" + builder + "-" + std::to_string(::getpid()) + "-" +
                             std::to_string(stamp) + "-" + std::to_string(number) +
                             (attempt ? "-" + std::to_string(attempt) : "");
    if (::mkdirat(root, name.c_str(), 0700) == 0) return name;
    if (errno != EEXIST) fail("cannot create a directory in the capture directory");
  }
  fail("no unused directory name in the capture directory");
}

std::string first_line(const std::string& text, std::size_t limit) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > limit) line.resize(limit);
  return line;
}

nlohmann::json scenario_of(const FailedBuild& build, const Error& error,
                           const std::vector<std::string>& files) {
  using nlohmann::json;
  const LinkOptions& options = *build.options;
  json doc;
  doc["schema"] = 1;
  doc["name"] = build.name.empty() ? "captured-" + build.builder : build.name;
  std::string reported = "captured by " + std::string(capture_dir_variable) + " (pid " +
                         std::to_string(::getpid()) + "): " + first_line(error.what(), 400);
  if (!build.not_captured.empty()) {
    reported += ". Not captured:";
    for (const std::string& what : build.not_captured) reported += " " + what + ";";
  }
  doc["reported"] = reported;
  doc["cujit"] = "a failure captured as it happened; expect says what should have happened";
  doc["builder"] = build.builder;
  doc["backend"] = std::string(to_string(build.backend));
  json inputs = json::array();
  std::size_t i = 0;
  auto add = [&](const LinkableCode* code, bool source) {
    json input = {{"path", files[i++]},
                  {"format", std::string(to_string(code->format()))},
                  {"name", code->name()},
                  {"origin", "bytes"}};
    if (code->nrt()) input["nrt"] = true;
    if (source) input["role"] = "source";
    inputs.push_back(std::move(input));
  };
  for (const LinkableCode* code : build.sources) add(code, true);
  for (const LinkableCode* code : build.inputs) add(code, false);
  doc["inputs"] = std::move(inputs);
  json opts = {{"arch", options.arch.sm()}, {"lto", options.lto}};
  const LinkFlags& flags = options.flags;
  if (flags.debug) opts["debug"] = true;
  if (flags.line_info) opts["lineinfo"] = true;
  if (flags.max_registers) opts["max_registers"] = *flags.max_registers;
  if (flags.optimization_level) opts["optimization_level"] = *flags.optimization_level;
  if (flags.ftz) opts["ftz"] = *flags.ftz;
  if (flags.prec_div) opts["prec_div"] = *flags.prec_div;
  if (flags.prec_sqrt) opts["prec_sqrt"] = *flags.prec_sqrt;
  if (flags.fma) opts["fma"] = *flags.fma;
  if (build.builder == "kernel") {
    opts["nrt"] = build.nrt ? json(*build.nrt) : json(nullptr);
  }
  doc["options"] = std::move(opts);
  doc["expect"] = {{"outcome", "success"}};
  doc["reported_failure"] = {{"kind", std::string(to_string(error.kind()))},
                             {"message", first_line(error.message(), 160)}};
  return doc;
}

std::filesystem::path capture(const FailedBuild& build, const Error& error, const char* root) {
  if (build.inputs.empty() && build.sources.empty()) {
    errno = EINVAL;
    fail("nothing was linked");
  }
  std::uint64_t total = 0;
  for (const auto* list : {&build.sources, &build.inputs}) {
    for (const LinkableCode* code : *list) total += code->bytes().size();
  }
  if (total > max_capture_bytes) {
    errno = EFBIG;
    fail("the inputs are " + std::to_string(total) + " bytes, over the capture limit");
  }
  const Fd dir_root(open_capture_root(root));
  const std::string name = make_capture_dir(dir_root.get(), build.builder, captures.load());
  const Fd dir(::openat(dir_root.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) fail("cannot open " + name);
  std::vector<std::string> files;
  for (const auto* list : {&build.sources, &build.inputs}) {
    for (const LinkableCode* code : *list) {
      const std::string file =
          "input-" + std::to_string(files.size()) + "." + std::string(to_string(code->format()));
      write_new_file(dir.get(), file, code->bytes());
      files.push_back(file);
    }
  }
  write_new_file(dir.get(), "scenario.json", scenario_of(build, error, files).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return std::filesystem::path(root) / name / "scenario.json";
}

}  // namespace

bool capture_enabled() noexcept {
  const char* root = std::getenv(capture_dir_variable);
  return root != nullptr && *root != '\0' && suppressed == 0;
}

void not_captured_options(const LinkOptions& options, std::vector<std::string>& out) {
  // What a scenario's options cannot say: verbatim options and the rarer flags.
  for (const std::string& option : options.nvjitlink_options) out.push_back("nvJitLink option " + option);
  for (const std::string& option : options.compile.options) out.push_back("NVRTC option " + option);
  const LinkFlags& flags = options.flags;
  if (!flags.kernels_used.empty()) out.push_back("kernels_used");
  if (!flags.variables_used.empty()) out.push_back("variables_used");
  if (flags.split_compile) out.push_back("split_compile");
  if (!flags.ptxas_options.empty()) out.push_back("ptxas_options");
}

FailedBuild failed_link(const Linker& linker) {
  FailedBuild build;
  build.builder = "linker";
  build.name = "captured-link";
  build.options = &linker.options();
  build.backend = linker.backend();
  for (const LinkableCode& code : linker.inputs()) build.inputs.push_back(&code);
  not_captured_options(linker.options(), build.not_captured);
  return build;
}

CaptureSuppressed::CaptureSuppressed() noexcept { ++suppressed; }
CaptureSuppressed::~CaptureSuppressed() { --suppressed; }

std::optional<std::filesystem::path> capture_failure(const FailedBuild& build,
                                                     const Error& error) noexcept {
  if (!capture_enabled() || build.options == nullptr) return std::nullopt;
  const char* root = std::getenv(capture_dir_variable);
  if (captures.fetch_add(1) >= max_captures_per_process) return std::nullopt;
  try {
    const std::filesystem::path file = capture(build, error, root);
    std::fprintf(stderr, "cujit: captured this failure as %s (run it with: cujit repro FILE)\n",
                 file.c_str());
    return file;
  } catch (const CaptureFailed& failed) {
    std::fprintf(stderr, "cujit: %s is set but this failure was not captured: %s\n",
                 capture_dir_variable, failed.why.c_str());
  } catch (...) {
    std::fprintf(stderr, "cujit: %s is set but this failure was not captured\n",
                 capture_dir_variable);
  }
  return std::nullopt;
}

}  // namespace cujit::detail
