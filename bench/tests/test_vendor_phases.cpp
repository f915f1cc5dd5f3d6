// The per-phase vendor times: the parsers over generated CSV and logs, and the real NVRTC
// and nvJitLink of this toolkit (no GPU needed), whose output formats the parsers assume.
#include <gtest/gtest.h>
#include <nvJitLink.h>

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>

#include "support/raw_jit.hpp"
#include "support/vendor_phases.hpp"

namespace cujit::bench {
namespace {

const char* const kernel = "extern \"C\" __global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }\n";

double find(const PhaseTimes& phases, const std::string& name) {
  for (const auto& [known, ms] : phases) {
    if (known == name) return ms;
  }
  return NAN;
}

TEST(VendorPhases, GeneratedNvrtcCsvAddsUpPerPhaseInEveryUnit) {
  std::mt19937 rng(20261127);
  const std::vector<std::pair<std::string, std::string>> names = {
      {"CUDA C++ Frontend", "nvrtc_cuda_c_frontend_ms"},
      {"NVVM Optimizer", "nvrtc_nvvm_optimizer_ms"},
      {"PTX Translation", "nvrtc_ptx_translation_ms"},
      {"  odd -- phase!! ", "nvrtc_odd_phase_ms"}};
  const std::vector<std::pair<std::string, double>> units = {{"ms", 1}, {"us", 1e-3}, {"s", 1e3}};
  for (int trial = 0; trial < 300; ++trial) {
    std::string csv = "File name, phase name, metric, unit\n";
    std::map<std::string, double> expected;
    const int rows = static_cast<int>(rng() % 7);
    for (int row = 0; row < rows; ++row) {
      const auto& [phase, counter] = names[rng() % names.size()];
      const auto& [unit, scale] = units[rng() % units.size()];
      const int value = static_cast<int>(rng() % 5000);
      csv += "k.cu, " + phase + ", " + std::to_string(value) + ", " + unit + (rng() % 2 ? "\r\n" : "\n");
      expected[counter] += value * scale;
    }
    const PhaseTimes phases = parse_nvrtc_time_csv(csv);
    ASSERT_EQ(phases.size(), expected.size()) << csv;
    for (const auto& [counter, ms] : expected) EXPECT_NEAR(find(phases, counter), ms, 1e-9) << csv;
  }
}

TEST(VendorPhases, MalformedNvrtcRowsAreRefusedNamingTheLine) {
  for (const std::string row : {"k.cu, Frontend, 12", "k.cu, Frontend, twelve, ms", "k.cu, Frontend, 12, hours",
                                "k.cu, Frontend, -3, ms", "k.cu, Frontend, 12, ms, extra"}) {
    try {
      (void)parse_nvrtc_time_csv("File name, phase name, metric, unit\n" + row + "\n");
      ADD_FAILURE() << "accepted: " << row;
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(row), std::string::npos) << error.what();
    }
  }
}

TEST(VendorPhases, NvjitlinkLogLinesAreReadAndALogWithoutThemIsRefused) {
  const PhaseTimes phases = parse_nvjitlink_time_log(
      "info: something else\nnvJitLink time until Complete: 67.491997\nnvJitLinkComplete time to finish: 0.132000\n");
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].first, "nvjitlink_time_until_complete_ms");
  EXPECT_DOUBLE_EQ(phases[0].second, 67.491997);
  EXPECT_EQ(phases[1].first, "nvjitlink_complete_time_to_finish_ms");
  EXPECT_DOUBLE_EQ(phases[1].second, 0.132);
  EXPECT_THROW((void)parse_nvjitlink_time_log("no timing here\n"), std::runtime_error);
  EXPECT_THROW((void)parse_nvjitlink_time_log("nvJitLink time until Complete: soon\n"), std::runtime_error);
}

// This toolkit's NVRTC writes the three phases the reports name for a compile to PTX.
TEST(VendorPhases, RealNvrtcWritesItsPhases) {
  const PhaseTimes phases = nvrtc_phases(kernel, "scale.cu", {"-arch=sm_90"}, "ptx");
  for (const char* name : {"nvrtc_cuda_c_frontend_ms", "nvrtc_nvvm_optimizer_ms", "nvrtc_ptx_translation_ms"}) {
    EXPECT_TRUE(std::isfinite(find(phases, name))) << name;
  }
}

// This toolkit's nvJitLink writes its two times under -time.
TEST(VendorPhases, RealNvjitlinkWritesItsTimes) {
  const std::string ptx = raw_nvrtc(kernel, "scale.cu", {"-arch=sm_90"}, "ptx");
  const PhaseTimes phases = nvjitlink_phases({{NVJITLINK_INPUT_PTX, ptx}}, {"-arch=sm_90"});
  EXPECT_TRUE(std::isfinite(find(phases, "nvjitlink_time_until_complete_ms")));
  EXPECT_TRUE(std::isfinite(find(phases, "nvjitlink_complete_time_to_finish_ms")));
}

}  // namespace
}  // namespace cujit::bench
