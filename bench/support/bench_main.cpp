#include "support/bench_main.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cujit/device.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "cujit/toolkit.hpp"

namespace cujit::bench {
namespace {

bool quick_flag = false;
std::string self_path;

void add_context() {
  benchmark::AddCustomContext("cujit_schema", std::to_string(schema_version));
  benchmark::AddCustomContext("cujit_version", CUJIT_BENCH_VERSION);
  benchmark::AddCustomContext("cujit_git_commit", CUJIT_GIT_COMMIT);
  benchmark::AddCustomContext("cujit_mode", quick_flag ? "quick" : "full");
  benchmark::AddCustomContext("nvrtc_version", nvrtc_version());
  benchmark::AddCustomContext("nvjitlink_version", nvjitlink_version());
  try {
    benchmark::AddCustomContext("cccl_version", toolkit::cccl_version());
  } catch (const std::exception&) {
    benchmark::AddCustomContext("cccl_version", "unknown");
  }
  if (has_device()) {
    benchmark::AddCustomContext("device", device_name(0));
    benchmark::AddCustomContext("driver_version", driver_version());
  } else {
    benchmark::AddCustomContext("device", "none (" + no_device_reason() + ")");
    benchmark::AddCustomContext("driver_version", "none");
  }
}

}  // namespace

bool quick() { return quick_flag; }

int repetitions(int full) { return quick_flag ? 3 : full; }

std::string run_self(const std::string& arguments) {
  const std::string command = self_path + " --cujit-child " + arguments;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::array<char, 512> line{};
  if (std::fgets(line.data(), line.size(), pipe.get()) == nullptr) {
    throw std::runtime_error("no output from " + command);
  }
  return line.data();
}

bool skip_without_device(const char* family) {
  if (has_device()) return false;
  const std::string reason = "no CUDA device: " + no_device_reason();
  benchmark::RegisterBenchmark((std::string(family) + "/skipped").c_str(), [reason](benchmark::State& state) {
    state.SkipWithError(reason.c_str());
    for (auto _ : state) {
    }
  });
  return true;
}

std::string scenario_dir() { return CUJIT_BENCH_SCENARIO_DIR; }
std::string fixture_dir() { return CUJIT_BENCH_FIXTURE_DIR; }

int run_main(int argc, char** argv, const std::function<void()>& register_benchmarks,
             const std::function<int(const std::string&)>& child) {
  self_path = argv[0];
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cujit-quick") {
      quick_flag = true;
    } else if (arg == "--cujit-child" && i + 1 < argc && child) {
      std::string arguments = argv[i + 1];
      for (int j = i + 2; j < argc; ++j) arguments += std::string(" ") + argv[j];
      return child(arguments);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (const char* env = std::getenv("CUJIT_BENCH_QUICK"); env != nullptr && std::string(env) == "1") {
    quick_flag = true;
  }
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(count, rest.data())) return 2;
  add_context();
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace cujit::bench
