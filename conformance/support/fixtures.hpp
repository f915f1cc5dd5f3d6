#pragma once
// What every conformance suite shares: where fixtures are, reading them, temporary
// directories, and the device requirement of GPU tests.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cujit/device.hpp"
#include "cujit/error.hpp"
#include "support/device_allotment.hpp"

namespace cujit::test {

// A fixture built by CMake from scenarios/ (e.g. "scale_kernel.cubin").
std::filesystem::path fixture_path(const std::string& name);
// A file committed under scenarios/ (e.g. "fixtures/scale_kernel.cu").
std::filesystem::path scenario_path(const std::string& relative);
std::string read_bytes(const std::filesystem::path& path);

// A fresh directory removed (with its content) when this goes out of scope.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  // Writes bytes to path()/name and returns the full path.
  std::filesystem::path write(const std::string& name, const std::string& bytes) const;

 private:
  std::filesystem::path path_;
};

// Whether GPU tests must fail rather than skip without a device (CUJIT_REQUIRE_GPU=1).
bool gpu_required();

}  // namespace cujit::test

// First statement of every GPU test: skips with the reason on machines without a device,
// fails instead when the run requires a GPU, so a GPU lane can never pass by skipping.
// With a device, the process says once which one it runs on (announce_device), so that a
// multi-GPU lane's log shows every test's GPU.
#define CUJIT_REQUIRE_DEVICE()                                                       \
  do {                                                                               \
    if (!::cujit::has_device()) {                                                    \
      if (::cujit::test::gpu_required()) {                                           \
        FAIL() << "no CUDA device, but CUJIT_REQUIRE_GPU is set: "                   \
               << ::cujit::no_device_reason();                                      \
      }                                                                              \
      GTEST_SKIP() << "no CUDA device (" << ::cujit::no_device_reason() << ")";      \
    }                                                                                \
    ::cujit::test::announce_device();                                                \
  } while (false)

// Runs `statement`, which must throw cujit::Error of `expected_kind`; binds it to `error`
// for further checks in the following block.
#define CUJIT_EXPECT_ERROR(statement, expected_kind, error_var, ...)                 \
  do {                                                                               \
    try {                                                                            \
      statement;                                                                     \
      ADD_FAILURE() << "expected a cujit " << ::cujit::to_string(expected_kind)      \
                    << " error from: " #statement;                                   \
    } catch (const ::cujit::Error& error_var) {                                      \
      EXPECT_EQ(error_var.kind(), expected_kind) << error_var.what();                \
      __VA_ARGS__                                                                    \
    }                                                                                \
  } while (false)
