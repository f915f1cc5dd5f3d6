#pragma once
// The run record: what a benchmark JSON's `context` says about the run, so that a figure
// can be traced to the machine, the toolkit and the commit that made it, and so that the
// regression gate (reports/compare.py) can refuse to compare runs that differ in any of
// them. Field by field in docs/benchmarks.md ("Run record").

#include <optional>
#include <string>

namespace cujit::bench {

// Adds every field to Google Benchmark's context (benchmark::AddCustomContext).
void add_run_record(bool quick);

// Pure parts, decided from their inputs alone.

// The NVIDIA driver release ("580.159.04") from the text of /proc/driver/nvidia/version
// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..."); nullopt when the
// text names none.
std::optional<std::string> driver_release_from_proc(const std::string& text);

// The first "model name" of /proc/cpuinfo (x86), else its "Hardware" or "uarch" line
// (some ARM and RISC-V kernels); nullopt when none is there.
std::optional<std::string> cpu_model_from_cpuinfo(const std::string& text);

// "cold" when CUDA_CACHE_DISABLE is "1" (the driver's JIT cache is off), else
// "vendor-cache-warm" (unset, "0" or anything else leaves the cache on).
std::string vendor_cache_state(const char* cuda_cache_disable);

// The library file in a cujit identity string ("nvrtc 13.0: path=/x/libnvrtc.so.13;size=..."):
// "/x/libnvrtc.so.13"; "unknown" when it names none.
std::string library_path_from_identity(const std::string& identity);

}  // namespace cujit::bench
