#pragma once
// Where a compile's or a link's vendor time goes, phase by phase, so a regression in a JIT
// figure names its phase: NVRTC's --time (front end, NVVM optimizer, PTX translation: one
// CSV row per phase) and nvJitLink's -time (the time until nvJitLinkComplete and the time
// Complete itself took, in the info log). Each is measured by one extra raw compile or link
// of the same work with the timing option added, after the timed loop: the option writes a
// file or a log, which the timed work must not pay for.

#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

#include "support/raw_jit.hpp"

namespace cujit::bench {

// (counter name, milliseconds) per phase, in the order the vendor wrote them:
// nvrtc_<phase>_ms, nvjitlink_<phase>_ms with <phase> the vendor's name in lower case,
// runs of other characters as one '_' ("CUDA C++ Frontend" -> cuda_c_frontend).
using PhaseTimes = std::vector<std::pair<std::string, double>>;

// The rows of NVRTC's --time CSV ("File name, phase name, metric, unit" and one row per
// phase; units ms, us or s). Throws std::runtime_error naming the line for a row that is
// not four fields with a number and a known unit; a repeated phase adds up.
PhaseTimes parse_nvrtc_time_csv(const std::string& csv);

// The "<what> time ...: <ms>" lines of nvJitLink's info log under -time ("nvJitLink time
// until Complete: 67.49", "nvJitLinkComplete time to finish: 0.13"); other lines ignored.
// Throws std::runtime_error when no such line is there (the option did nothing).
PhaseTimes parse_nvjitlink_time_log(const std::string& info_log);

// One raw compile of the work with --time=<a fresh file>, its phases read back.
PhaseTimes nvrtc_phases(const std::string& source, const std::string& name, std::vector<std::string> options,
                        const std::string& target, const std::vector<RawHeader>& headers = {});

// One raw link of the work with -time, its phases read from the info log.
PhaseTimes nvjitlink_phases(const std::vector<RawInput>& inputs, std::vector<std::string> options);

// Each phase as a counter of the benchmark's repetition (milliseconds per compile or link).
void add_phase_counters(benchmark::State& state, const PhaseTimes& phases);

}  // namespace cujit::bench
