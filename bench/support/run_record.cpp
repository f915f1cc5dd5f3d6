#include "support/run_record.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <vector>

#include <benchmark/benchmark.h>

#include "cujit/device.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "cujit/toolkit.hpp"
#include "support/bench_main.hpp"

namespace cujit::bench {
namespace {

// At most `limit` bytes of a regular file (procfs files say size 0, so the size is not
// trusted: reading stops at the limit). nullopt when it is missing, not a regular file or
// unreadable.
std::optional<std::string> read_small_file(const char* path, std::size_t limit) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat info {};
  std::optional<std::string> text;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    text.emplace();
    std::array<char, 4096> buffer{};
    while (text->size() < limit) {
      const ssize_t n = ::read(fd, buffer.data(), std::min(buffer.size(), limit - text->size()));
      if (n > 0) text->append(buffer.data(), static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR) break;
    }
  }
  ::close(fd);
  return text;
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

bool is_release(const std::string& word) {
  bool dot = false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    const char c = word[i];
    if (c == '.') {
      if (i == 0 || i + 1 == word.size() || word[i - 1] == '.') return false;
      dot = true;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dot;
}

// NVML's answer, for machines whose /proc has no NVIDIA entry (some containers): the
// library is opened at run time, so the benchmarks need no NVML to build or start.
std::optional<std::string> driver_release_from_nvml() {
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return std::nullopt;
  using Init = int (*)();
  using GetDriverVersion = int (*)(char*, unsigned int);
  using Shutdown = int (*)();
  const auto init = reinterpret_cast<Init>(::dlsym(nvml, "nvmlInit_v2"));
  const auto get = reinterpret_cast<GetDriverVersion>(::dlsym(nvml, "nvmlSystemGetDriverVersion"));
  const auto shutdown = reinterpret_cast<Shutdown>(::dlsym(nvml, "nvmlShutdown"));
  std::optional<std::string> release;
  if (init != nullptr && get != nullptr && shutdown != nullptr && init() == 0) {
    std::array<char, 96> buffer{};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80
    if (get(buffer.data(), static_cast<unsigned int>(buffer.size() - 1)) == 0) {
      const std::string text = trim(buffer.data());
      if (is_release(text)) release = text;
    }
    shutdown();
  }
  ::dlclose(nvml);
  return release;
}

std::string driver_release() {
  if (const auto text = read_small_file("/proc/driver/nvidia/version", 4096)) {
    if (auto release = driver_release_from_proc(*text)) return *release;
  }
  if (auto release = driver_release_from_nvml()) return *release;
  // A driver that neither source describes is still a driver: "none" only without one.
  return has_device() ? "unknown" : "none";
}

bool is_commit(const std::string& text) {
  if (text.size() < 7 || text.size() > 64) return false;
  for (const char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// git's stdout for `git [global...] -C SOURCE ARGS...`, spawned with an argument vector;
// nullopt when git is not on PATH, the source is no work tree (a copy without .git) or git
// refuses it (another owner's repository).
std::optional<std::string> git(std::vector<std::string> global, const std::vector<std::string>& args) {
  std::vector<std::string> words{"git"};
  words.insert(words.end(), global.begin(), global.end());
  words.insert(words.end(), {"-C", CUJIT_BENCH_SOURCE_DIR});
  words.insert(words.end(), args.begin(), args.end());
  return capture_stdout(words, {.search_path = true, .quiet_stderr = true});
}

// CUJIT_SOURCE_DIGEST, which ci/bench.sh sets from ci/source_digest.py: the digest of the
// measured code's files, right even where the commit is not (a copied tree); "unknown" when
// unset or not 16 lower-case hex digits.
std::string source_digest() {
  const char* env = std::getenv("CUJIT_SOURCE_DIGEST");
  if (env == nullptr || *env == '\0') return "unknown";
  const std::string digest(env);
  bool hex = digest.size() == 16;
  for (const char c : digest) {
    hex = hex && std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c));
  }
  if (hex) return digest;
  std::fprintf(stderr, "cujit bench: CUJIT_SOURCE_DIGEST is not 16 lower-case hex digits; recorded as unknown\n");
  return "unknown";
}

struct Commit {
  std::string hash;
  std::string tree;  // clean / modified / unknown
};

// CUJIT_GIT_COMMIT from the environment when it is set: the GPU machine's copy of the tree
// is a repository of its own whose commit is not the project's, so whoever copies a tree
// says which commit it is. Else the commit of the source tree now (a build configured
// earlier may have been committed since), else what git said at configure time, else
// "unknown".
Commit git_commit() {
  if (const char* env = std::getenv("CUJIT_GIT_COMMIT"); env != nullptr && *env != '\0') {
    if (is_commit(env)) return {env, "unknown"};
    std::fprintf(stderr, "cujit bench: CUJIT_GIT_COMMIT is not a lower-case hex commit hash; ignored\n");
  }
  if (const auto head = git({}, {"rev-parse", "--verify", "HEAD"}); head && is_commit(trim(*head))) {
    // --no-optional-locks: never take index.lock, which would fail a concurrent commit.
    const auto status = git({"--no-optional-locks"}, {"status", "--porcelain", "--untracked-files=no"});
    return {trim(*head), status ? (trim(*status).empty() ? "clean" : "modified") : "unknown"};
  }
  if (is_commit(CUJIT_GIT_COMMIT)) return {CUJIT_GIT_COMMIT, "unknown"};
  return {"unknown", "unknown"};
}

std::string cpu_model() {
  if (const auto text = read_small_file("/proc/cpuinfo", 64 * 1024)) {
    if (auto model = cpu_model_from_cpuinfo(*text)) return *model;
  }
  return "unknown";
}

std::string load_average() {
  std::array<double, 3> load{};
  if (::getloadavg(load.data(), 3) != 3) return "unknown";
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return text.data();
}

// An environment variable's value as recorded: `otherwise` when unset; a value that is not
// short printable text without quotes or backslashes (which Google Benchmark's JSON writer
// might not escape) is recorded as "invalid", never as itself.
std::string environment_or(const char* name, const char* otherwise) {
  const char* value = std::getenv(name);
  if (value == nullptr) return otherwise;
  const std::string text = value;
  const bool plain = text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  return plain ? text : "invalid";
}

void add(const char* key, const std::string& value) { benchmark::AddCustomContext(key, value); }

}  // namespace

std::optional<std::string> driver_release_from_proc(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("NVRM version:", 0) != 0) continue;
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      if (is_release(word)) return word;
    }
  }
  return std::nullopt;
}

std::optional<std::string> cpu_model_from_cpuinfo(const std::string& text) {
  std::istringstream lines(text);
  std::optional<std::string> fallback;
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (value.empty()) continue;
    if (key == "model name") return value;
    if (!fallback && (key == "Hardware" || key == "uarch")) fallback = value;
  }
  return fallback;
}

std::string vendor_cache_state(const char* cuda_cache_disable) {
  return cuda_cache_disable != nullptr && std::string(cuda_cache_disable) == "1" ? "cold" : "vendor-cache-warm";
}

std::string library_path_from_identity(const std::string& identity) {
  const auto start = identity.find("path=");
  if (start == std::string::npos) return "unknown";
  const auto end = identity.find(';', start);
  return identity.substr(start + 5, end == std::string::npos ? std::string::npos : end - start - 5);
}

void add_run_record(bool quick) {
  add("cujit_schema", std::to_string(schema_version));
  add("cujit_version", CUJIT_BENCH_VERSION);
  const Commit commit = git_commit();
  add("cujit_git_commit", commit.hash);
  add("cujit_git_tree", commit.tree);
  add("cujit_source_digest", source_digest());
  add("cujit_build_type", CUJIT_BUILD_TYPE);
  add("cujit_mode", quick ? "quick" : "full");
  add("nvrtc_version", nvrtc_version());
  add("nvrtc_library", library_path_from_identity(nvrtc_identity()));
  add("nvrtc_identity", nvrtc_identity());
  add("nvjitlink_version", nvjitlink_version());
  add("nvjitlink_library", library_path_from_identity(nvjitlink_identity()));
  add("nvjitlink_identity", nvjitlink_identity());
  try {
    add("cccl_version", toolkit::cccl_version());
  } catch (const std::exception&) {
    add("cccl_version", "unknown");
  }
  if (has_device()) {
    add("device", device_name(0));
    add("driver_version", driver_version());
  } else {
    add("device", "none (" + no_device_reason() + ")");
    add("driver_version", "none");
  }
  add("driver_release", driver_release());
  add("vendor_cache", vendor_cache_state(std::getenv("CUDA_CACHE_DISABLE")));
  add("cuda_module_loading", environment_or("CUDA_MODULE_LOADING", "unset"));
  add("host_cpu_model", cpu_model());
  add("host_load_avg", load_average());
}

}  // namespace cujit::bench
