// Headline figures of the reduce build and its cache, as one JSON object on stdout:
// cold build (fresh cache, first NVRTC use of CUB in the process: precompiled header
// created), a second specialisation (precompiled header reused), memory hit, disk hit
// (fresh cache object), disk hit in a new process, and reduce_into throughput at
// n = 2^28 int32. Host times by the steady clock; throughput from the median of timed
// launches, each synchronised.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cujit/error.hpp"
#include "cujit/reduce.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

cujit::reduce::ReduceSpec spec(const char* type) {
  cujit::reduce::ReduceSpec s;
  s.input = s.output = s.accumulator = cujit::Type::parse(type);
  s.arch = cujit::has_device() ? cujit::Arch::of_device(0) : cujit::Arch();
  return s;
}

cujit::CacheConfig disk_at(const std::string& dir) {
  cujit::CacheConfig config;
  config.mode = cujit::CacheMode::disk;
  config.directory = dir;
  return config;
}

// Child mode: one disk hit in this new process; prints its time. The driver is started
// first, with its context: start-up that any CUDA program pays, not the cache's cost.
int disk_hit_child(const std::string& dir) {
  const auto s = spec("int32");
  if (cujit::has_device()) cujit::use_device(0);  // the context, made current
  const auto start = Clock::now();
  cujit::BuildCache cache(disk_at(dir));
  const auto build = cujit::reduce::build_reduce(s, cache);
  std::printf("%.6f %s\n", seconds_since(start), std::string(cujit::to_string(build.source)).c_str());
  return build.source == cujit::CacheSource::disk ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::string(argv[1]) == "--disk-hit") return disk_hit_child(argv[2]);
    const std::string dir = std::filesystem::temp_directory_path() /
                            ("cujit-figures-" + std::to_string(::getpid()));
    cujit::BuildCache cache(disk_at(dir));

    auto start = Clock::now();
    const auto cold = cujit::reduce::build_reduce(spec("int32"), cache);
    const double cold_s = seconds_since(start);
    start = Clock::now();
    (void)cujit::reduce::build_reduce(spec("float64"), cache);
    const double second_s = seconds_since(start);
    start = Clock::now();
    (void)cujit::reduce::build_reduce(spec("int32"), cache);
    const double memory_s = seconds_since(start);
    cujit::BuildCache fresh(disk_at(dir));
    start = Clock::now();
    (void)cujit::reduce::build_reduce(spec("int32"), fresh);
    const double disk_s = seconds_since(start);

    const std::string command = std::string(argv[0]) + " --disk-hit " + dir;
    double process_disk_s = -1;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
      char source[32] = {};
      if (std::fscanf(pipe, "%lf %31s", &process_disk_s, source) != 2) process_disk_s = -1;
      ::pclose(pipe);
    }

    double gbps = -1, median_ms = -1;
    const std::uint64_t n = std::uint64_t{1} << 28;
    if (cujit::has_device()) {
      cujit::DeviceBuffer in(n * 4), out(4);
      in.fill_bytes(1);
      std::vector<double> times;
      for (int rep = 0; rep < 25; ++rep) {
        start = Clock::now();
        cujit::reduce::reduce_into(cold, in.ptr(), out.ptr(), n, 0);
        cujit::synchronize(nullptr);
        if (rep >= 5) times.push_back(seconds_since(start));  // the first runs warm up
      }
      std::sort(times.begin(), times.end());
      median_ms = times[times.size() / 2] * 1e3;
      gbps = static_cast<double>(n * 4) / (median_ms * 1e-3) / 1e9;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::printf(
        "{\"schema\": 1, \"cold_build_s\": %.4f, \"second_type_build_s\": %.4f, "
        "\"memory_hit_s\": %.6f, \"disk_hit_s\": %.6f, \"disk_hit_new_process_s\": %.6f, "
        "\"reduce_int32_n\": %llu, \"reduce_median_ms\": %.4f, \"reduce_gbps\": %.1f}\n",
        cold_s, second_s, memory_s, disk_s, process_disk_s, static_cast<unsigned long long>(n),
        median_ms, gbps);
    return 0;
  } catch (const cujit::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
