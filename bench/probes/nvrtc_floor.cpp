// probe_nvrtc_floor: the raw NVRTC floor of bench_jit's pair/nvrtc/<scenario>/ptx, alone in
// a process whose state is chosen on the command line, so that a floor measured inside
// bench_jit can be compared with the same compile in a bare process (docs/benchmarks.md,
// "Process state of the floors").
//
// It links NVRTC's library file and nothing else of CUDA (not FindCUDAToolkit's
// CUDA::nvrtc, which drags the libcuda stub in and would load libcuda at start); libcuda
// is reached only through dlopen under --load-libcuda / --context.
//
//   probe_nvrtc_floor SOURCE [--runs N] [--first-only] [--name NAME]
//       [--header INCLUDE_NAME=FILE]... [--option OPT]... [--no-default-options]
//       [--load-libcuda] [--context] [--threads K] [--busy-threads K] [--ptx-out FILE]
//
// Default options: -arch=compute_90 -rdc=true, what cujit's nvrtc_options() gives for
// CompileOptions{arch sm_90, target ptx} (core/src/compile/program.cpp). Each run is what
// bench_jit's floor times (bench/support/raw_jit.cpp): nvrtcCreateProgram with the
// in-memory headers, nvrtcCompileProgram, nvrtcGetPTX, nvrtcDestroyProgram. One untimed
// run precedes the timed ones unless --first-only, which times the first compile of the
// process and nothing else. Output: one JSON line on stdout; exit 0 when every compile
// succeeded (a libcuda that cannot be loaded is reported in the line, not an exit), 1 when
// a compile failed, 2 for a wrong command line.
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Arguments {
  std::string source_path;
  std::string name;  // the program's name; default: the source path as given
  int runs = 20;
  bool first_only = false;
  std::vector<std::pair<std::string, std::string>> headers;  // include name, file
  std::vector<std::string> options{"-arch=compute_90", "-rdc=true"};
  bool load_libcuda = false;
  bool context = false;
  int idle_threads = 0;
  int busy_threads = 0;
  std::string ptx_out;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "probe_nvrtc_floor: %s\nusage: probe_nvrtc_floor SOURCE [--runs N] [--first-only] "
               "[--name NAME] [--header INCLUDE_NAME=FILE]... [--option OPT]... "
               "[--no-default-options] [--load-libcuda] [--context] [--threads K] "
               "[--busy-threads K] [--ptx-out FILE]\n",
               why.c_str());
  std::exit(2);
}

int whole_number(const std::string& text, const char* what, int low, int high) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    usage(std::string(what) + " wants a whole number from " + std::to_string(low) + " to " +
          std::to_string(high) + ", not '" + text + "'");
  }
  return value;
}

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  bool default_options = true;
  std::vector<std::string> extra;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--runs") arguments.runs = whole_number(value(), "--runs", 1, 10000);
    else if (arg == "--first-only") arguments.first_only = true;
    else if (arg == "--name") arguments.name = value();
    else if (arg == "--header") {
      const std::string pair = value();
      const auto equals = pair.find('=');
      if (equals == std::string::npos || equals == 0) usage("--header wants INCLUDE_NAME=FILE");
      arguments.headers.emplace_back(pair.substr(0, equals), pair.substr(equals + 1));
    } else if (arg == "--option") extra.push_back(value());
    else if (arg == "--no-default-options") default_options = false;
    else if (arg == "--load-libcuda") arguments.load_libcuda = true;
    else if (arg == "--context") arguments.load_libcuda = arguments.context = true;
    else if (arg == "--threads") arguments.idle_threads = whole_number(value(), "--threads", 0, 256);
    else if (arg == "--busy-threads") arguments.busy_threads = whole_number(value(), "--busy-threads", 0, 256);
    else if (arg == "--ptx-out") arguments.ptx_out = value();
    else if (!arg.empty() && arg[0] == '-') usage("unknown option " + arg);
    else if (arguments.source_path.empty()) arguments.source_path = arg;
    else usage("one source only");
  }
  if (arguments.source_path.empty()) usage("no source given");
  if (!default_options) arguments.options.clear();
  arguments.options.insert(arguments.options.end(), extra.begin(), extra.end());
  if (arguments.name.empty()) arguments.name = arguments.source_path;
  if (arguments.first_only) arguments.runs = 1;
  return arguments;
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw std::runtime_error(path + " is not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (16u << 20)) throw std::runtime_error(path + ": cannot size it, or over 16 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// ---- process state --------------------------------------------------------------------------

// What became of --load-libcuda / --context, as the JSON line reports it.
struct DriverState {
  std::string libcuda = "not requested";  // "loaded" or "not loaded: <dlerror>"
  std::string cu_init = "not called";     // "CUDA_SUCCESS" or the error's name
  std::string context = "not requested";  // "primary context of device 0 current" or why not
};

std::string cu_error_name(void* library, CUresult result) {
  const auto get_name = reinterpret_cast<decltype(&cuGetErrorName)>(dlsym(library, "cuGetErrorName"));
  const char* name = nullptr;
  if (get_name != nullptr) get_name(result, &name);
  return name != nullptr ? name : "CUresult " + std::to_string(static_cast<int>(result));
}

// Loads libcuda as cujit does (core/src/driver/driver_api.cpp: dlopen + cuInit(0)) and,
// under --context, makes device 0's primary context current, as bench_jit_gpu and
// cuda.core's Device().set_current() do. Never unloaded.
DriverState enter_driver_state(const Arguments& arguments) {
  DriverState state;
  if (!arguments.load_libcuda) return state;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    state.libcuda = std::string("not loaded: ") + (why != nullptr ? why : "no reason given");
    if (arguments.context) state.context = "no libcuda";
    return state;
  }
  state.libcuda = "loaded";
  const auto init = reinterpret_cast<decltype(&cuInit)>(dlsym(library, "cuInit"));
  if (init == nullptr) {
    state.cu_init = "libcuda.so.1 has no cuInit";
    return state;
  }
  const CUresult initialised = init(0);
  state.cu_init = cu_error_name(library, initialised);
  if (!arguments.context) return state;
  if (initialised != CUDA_SUCCESS) {
    state.context = "cuInit failed";
    return state;
  }
  const auto device_get = reinterpret_cast<decltype(&cuDeviceGet)>(dlsym(library, "cuDeviceGet"));
  const auto retain = reinterpret_cast<decltype(&cuDevicePrimaryCtxRetain)>(dlsym(library, "cuDevicePrimaryCtxRetain"));
  const auto set_current = reinterpret_cast<decltype(&cuCtxSetCurrent)>(dlsym(library, "cuCtxSetCurrent"));
  if (device_get == nullptr || retain == nullptr || set_current == nullptr) {
    state.context = "libcuda.so.1 lacks cuDeviceGet, cuDevicePrimaryCtxRetain or cuCtxSetCurrent";
    return state;
  }
  CUdevice device = 0;
  CUcontext context = nullptr;  // kept until exit, like a benchmark's context
  CUresult result = device_get(&device, 0);
  if (result == CUDA_SUCCESS) result = retain(&context, device);
  if (result == CUDA_SUCCESS) result = set_current(context);
  state.context = result == CUDA_SUCCESS ? "primary context of device 0 current" : "failed: " + cu_error_name(library, result);
  return state;
}

// Background threads for --threads (blocked on a condition variable: they exist and do
// nothing, so the process is multi-threaded, as one is after cuInit) and --busy-threads
// (spinning: they compete for cores). Joined before exit.
class BackgroundThreads {
 public:
  BackgroundThreads(int idle, int busy) {
    for (int i = 0; i < idle; ++i) {
      threads_.emplace_back([this] {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return stop_.load(); });
      });
    }
    for (int i = 0; i < busy; ++i) {
      threads_.emplace_back([this] {
        std::uint64_t spins = 0;
        while (!stop_.load(std::memory_order_relaxed)) ++spins;
        sink_.fetch_add(spins, std::memory_order_relaxed);
      });
    }
  }
  ~BackgroundThreads() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  BackgroundThreads(const BackgroundThreads&) = delete;
  BackgroundThreads& operator=(const BackgroundThreads&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> sink_{0};
  std::vector<std::thread> threads_;
};

int threads_in_process() {
  std::error_code ec;
  int count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++count;
  }
  return count;
}

// Which CUDA libraries are mapped into this process now (/proc/self/maps). Read after the
// compiles: with CUDA_CACHE_DISABLE unset, NVRTC 13 itself dlopens libcuda.so.1 and calls
// cuInit for its result cache (the driver's compute cache, via cuGetExportTable).
std::vector<std::string> cuda_libraries_mapped() {
  std::vector<std::string> found;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash + 1);
    for (const char* stem : {"libcuda.so", "libcupti.so", "libnvrtc.so", "libnvrtc-builtins.so", "libnvJitLink.so"}) {
      if (file.rfind(stem, 0) == 0 && std::find(found.begin(), found.end(), file) == found.end()) found.push_back(file);
    }
  }
  return found;
}

// ---- the compile --------------------------------------------------------------------------

std::string compile(const std::string& source, const Arguments& arguments,
                    const std::vector<std::string>& header_contents) {
  std::vector<const char*> names;
  std::vector<const char*> contents;
  for (std::size_t i = 0; i < header_contents.size(); ++i) {
    names.push_back(arguments.headers[i].first.c_str());
    contents.push_back(header_contents[i].c_str());
  }
  std::vector<const char*> options;
  for (const std::string& option : arguments.options) options.push_back(option.c_str());
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, source.c_str(), arguments.name.c_str(), static_cast<int>(names.size()),
                         contents.data(), names.data()) != NVRTC_SUCCESS) {
    throw std::runtime_error("nvrtcCreateProgram failed");
  }
  const nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  std::string ptx;
  if (result == NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetPTXSize(program, &size);
    ptx.resize(size);
    nvrtcGetPTX(program, ptx.data());
    if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();  // as bench_jit's floor returns it
  } else {
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    nvrtcDestroyProgram(&program);
    throw std::runtime_error(std::string("nvrtcCompileProgram: ") + nvrtcGetErrorString(result) + "\n" + log);
  }
  nvrtcDestroyProgram(&program);
  return ptx;
}

// ---- output -------------------------------------------------------------------------------

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_strings(const std::vector<std::string>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + json_string(values[i]);
  return out + "]";
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "unset" : value;
}

// FNV-1a over the PTX: enough to tell two runs' outputs apart in a table.
std::string fnv1a(const std::string& bytes) {
  std::uint64_t hash = 1469598103934665603ull;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point process_start = Clock::now();
  const Arguments arguments = parse(argc, argv);
  try {
    const std::string source = read_text(arguments.source_path);
    std::vector<std::string> header_contents;
    for (const auto& [name, path] : arguments.headers) header_contents.push_back(read_text(path));

    const DriverState driver = enter_driver_state(arguments);
    const BackgroundThreads background(arguments.idle_threads, arguments.busy_threads);
    const int threads = threads_in_process();
    const double setup_ms = std::chrono::duration<double, std::milli>(Clock::now() - process_start).count();

    std::string ptx;
    if (!arguments.first_only) ptx = compile(source, arguments, header_contents);  // warm-up
    std::vector<double> per_run_ms;
    for (int run = 0; run < arguments.runs; ++run) {
      const Clock::time_point before = Clock::now();
      ptx = compile(source, arguments, header_contents);
      per_run_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - before).count());
    }
    if (!arguments.ptx_out.empty()) std::ofstream(arguments.ptx_out, std::ios::binary) << ptx;

    int major = 0;
    int minor = 0;
    nvrtcVersion(&major, &minor);
    std::vector<std::string> header_names;
    for (const auto& header : arguments.headers) header_names.push_back(header.first);
    std::ostringstream line;
    line.precision(6);
    line << "{\"probe\":\"nvrtc_floor\",\"nvrtc_version\":\"" << major << "." << minor << "\""
         << ",\"source\":" << json_string(arguments.source_path) << ",\"name\":" << json_string(arguments.name)
         << ",\"options\":" << json_strings(arguments.options) << ",\"headers\":" << json_strings(header_names)
         << ",\"runs\":" << arguments.runs << ",\"first_only\":" << (arguments.first_only ? "true" : "false")
         << ",\"median_ms\":" << median(per_run_ms)
         << ",\"min_ms\":" << *std::min_element(per_run_ms.begin(), per_run_ms.end())
         << ",\"max_ms\":" << *std::max_element(per_run_ms.begin(), per_run_ms.end()) << ",\"per_run_ms\":[";
    for (std::size_t i = 0; i < per_run_ms.size(); ++i) line << (i ? "," : "") << per_run_ms[i];
    line << "],\"setup_ms\":" << setup_ms << ",\"ptx_bytes\":" << ptx.size() << ",\"ptx_fnv1a\":\"" << fnv1a(ptx) << "\""
         << ",\"state\":{\"libcuda\":" << json_string(driver.libcuda) << ",\"cuInit\":" << json_string(driver.cu_init)
         << ",\"context\":" << json_string(driver.context) << ",\"idle_threads\":" << arguments.idle_threads
         << ",\"busy_threads\":" << arguments.busy_threads << ",\"threads_in_process\":" << threads
         << ",\"threads_after_compiles\":" << threads_in_process()
         << ",\"cuda_libraries_mapped\":" << json_strings(cuda_libraries_mapped())
         << ",\"CUDA_CACHE_DISABLE\":" << json_string(environment("CUDA_CACHE_DISABLE"))
         << ",\"CUDA_VISIBLE_DEVICES\":" << json_string(environment("CUDA_VISIBLE_DEVICES"))
         << ",\"hardware_threads\":" << std::thread::hardware_concurrency() << "}}";
    std::printf("%s\n", line.str().c_str());
    return 0;
  } catch (const std::exception& error) {
    std::printf("{\"probe\":\"nvrtc_floor\",\"error\":%s}\n", json_string(error.what()).c_str());
    return 1;
  }
}
