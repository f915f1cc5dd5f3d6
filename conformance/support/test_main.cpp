// The main of every conformance executable: GoogleTest's, after mapping the GPU CTest
// allotted (CTEST_RESOURCE_GROUP_0_GPUS) to CUDA_VISIBLE_DEVICES, before anything can
// initialise the driver. A malformed allotment ends the process with exit 2 and the
// error, rather than running on whatever device 0 happens to be.
#include <gtest/gtest.h>

#include <iostream>

#include "cujit/error.hpp"
#include "support/device_allotment.hpp"

int main(int argc, char** argv) {
  try {
    cujit::test::apply_device_allotment();
  } catch (const cujit::Error& error) {
    std::cerr << "cujit test: " << error.what() << "\n";
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
