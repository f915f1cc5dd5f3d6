// Where the toolkit's headers are, and which CCCL they hold.
#include <gtest/gtest.h>

#include <filesystem>

#include "cujit/toolkit.hpp"

namespace cujit {
namespace {

TEST(Toolkit, FindsCubAndCccl) {
  EXPECT_TRUE(std::filesystem::is_regular_file(toolkit::cccl_dir() / "cub" / "block" / "block_reduce.cuh"))
      << toolkit::cccl_dir();
  EXPECT_TRUE(std::filesystem::is_regular_file(toolkit::include_dir() / "cuda.h")) << toolkit::include_dir();
  const std::string version = toolkit::cccl_version();
  EXPECT_FALSE(version.empty());
  EXPECT_EQ(version.find_first_not_of("0123456789"), std::string::npos) << version;
}

}  // namespace
}  // namespace cujit
