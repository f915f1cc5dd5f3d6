// How a conformance process finds the GPU CTest allotted it (support/device_allotment.hpp):
// from a fake environment, CTEST_RESOURCE_GROUP_0_GPUS becomes CUDA_VISIBLE_DEVICES, through
// an inherited CUDA_VISIBLE_DEVICES where the host narrowed its devices; every malformed
// value is Error(usage) naming the variable. Then the test main doing it in a real process
// (this executable, listing its tests), and, on a GPU under ci/gpu.sh's resource spec, the
// device a GPU test runs on being the one allotted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "support/child_process.hpp"
#include "support/device_allotment.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

using Environment = std::map<std::string, std::string>;

test::EnvironmentLookup lookup_in(const Environment& environment) {
  return [environment](const std::string& name) -> std::optional<std::string> {
    const auto found = environment.find(name);
    return found == environment.end() ? std::nullopt : std::optional<std::string>(found->second);
  };
}

Environment allotted(const std::string& gpus) {
  return {{"CTEST_RESOURCE_GROUP_COUNT", "1"}, {"CTEST_RESOURCE_GROUP_0", "gpus"},
          {"CTEST_RESOURCE_GROUP_0_GPUS", gpus}};
}

TEST(DeviceAllotment, NoResourceGroupIsNoAllotment) {
  EXPECT_FALSE(test::device_allotment(lookup_in({})).has_value());
  EXPECT_FALSE(test::device_allotment(lookup_in({{"CUDA_VISIBLE_DEVICES", "3"}})).has_value());
}

TEST(DeviceAllotment, AllottedIdBecomesCudaVisibleDevices) {
  const auto allotment = test::device_allotment(lookup_in(allotted("id:2,slots:1")));
  ASSERT_TRUE(allotment.has_value());
  EXPECT_EQ(allotment->ids, std::vector<int>{2});
  EXPECT_EQ(allotment->visible_devices, "2");
  EXPECT_EQ(allotment->source, "CTEST_RESOURCE_GROUP_0_GPUS=id:2,slots:1");
}

TEST(DeviceAllotment, IdIndexesAnInheritedCudaVisibleDevices) {
  Environment environment = allotted("slots:1,id:1");
  environment["CUDA_VISIBLE_DEVICES"] = "4,5,6,7";
  EXPECT_EQ(test::device_allotment(lookup_in(environment))->visible_devices, "5");
  environment["CUDA_VISIBLE_DEVICES"] = "GPU-aaaa,GPU-bbbb";
  EXPECT_EQ(test::device_allotment(lookup_in(environment))->visible_devices, "GPU-bbbb");
}

TEST(DeviceAllotment, SeveralAllottedDevicesAreShownInOrder) {
  const auto allotment = test::device_allotment(lookup_in(allotted("id:3,slots:1;id:1,slots:2")));
  ASSERT_TRUE(allotment.has_value());
  EXPECT_EQ(allotment->visible_devices, "3,1");
}

void expect_usage_error_naming(const Environment& environment, const std::string& variable) {
  CUJIT_EXPECT_ERROR(test::device_allotment(lookup_in(environment)), ErrorKind::usage, error, {
    EXPECT_NE(error.message().find(variable + "='"), std::string::npos) << error.what();
  });
}

TEST(DeviceAllotment, MalformedDeviceValueIsAUsageErrorNamingIt) {
  for (const std::string value : {"", "id:x,slots:1", "slots:1", "id:1", "id:1,slots:0", "id:1,slots:1,extra:2",
                                  "id:1;slots:1", "id:-1,slots:1", "id:1,id:2,slots:1", "id:1234567,slots:1",
                                  "id: 1,slots:1", "id:1,slots:1;"}) {
    SCOPED_TRACE(value);
    expect_usage_error_naming(allotted(value), "CTEST_RESOURCE_GROUP_0_GPUS");
  }
}

TEST(DeviceAllotment, GroupsOtherThanOneDeviceSlotAreAUsageError) {
  Environment two_groups = allotted("id:0,slots:1");
  two_groups["CTEST_RESOURCE_GROUP_COUNT"] = "2";
  expect_usage_error_naming(two_groups, "CTEST_RESOURCE_GROUP_COUNT");
  Environment not_gpus = allotted("id:0,slots:1");
  not_gpus["CTEST_RESOURCE_GROUP_0"] = "cpus";
  expect_usage_error_naming(not_gpus, "CTEST_RESOURCE_GROUP_0");
}

TEST(DeviceAllotment, IdBeyondTheInheritedDevicesIsAUsageError) {
  Environment environment = allotted("id:2,slots:1");
  environment["CUDA_VISIBLE_DEVICES"] = "0,1";
  expect_usage_error_naming(environment, "CTEST_RESOURCE_GROUP_0_GPUS");
  environment["CUDA_VISIBLE_DEVICES"] = "";
  environment["CTEST_RESOURCE_GROUP_0_GPUS"] = "id:0,slots:1";
  expect_usage_error_naming(environment, "CTEST_RESOURCE_GROUP_0_GPUS");
}

// This executable's own main, run with an allotment: it sets CUDA_VISIBLE_DEVICES before the
// tests (here only listed), or refuses a malformed one with exit 2.
test::ChildResult list_tests_with(const std::string& gpus) {
  return test::run_child({"/proc/self/exe", "--gtest_list_tests", "--gtest_filter=DeviceAllotment.*"},
                         {"CTEST_RESOURCE_GROUP_COUNT=1", "CTEST_RESOURCE_GROUP_0=gpus",
                          "CTEST_RESOURCE_GROUP_0_GPUS=" + gpus, "CUDA_VISIBLE_DEVICES=5,7"});
}

TEST(DeviceAllotment, TestMainMapsTheAllotmentBeforeTheTestsRun) {
  const test::ChildResult listed = list_tests_with("id:1,slots:1");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("CTEST_RESOURCE_GROUP_0_GPUS=id:1,slots:1 -> CUDA_VISIBLE_DEVICES=7"),
            std::string::npos)
      << listed.output;
}

TEST(DeviceAllotment, TestMainRefusesAMalformedAllotment) {
  const test::ChildResult listed = list_tests_with("id:one,slots:1");
  EXPECT_EQ(listed.exit_code, 2) << listed.output;
  EXPECT_NE(listed.output.find("CTEST_RESOURCE_GROUP_0_GPUS='id:one,slots:1'"), std::string::npos) << listed.output;
  EXPECT_EQ(listed.output.find("DeviceAllotment."), std::string::npos) << "no test may run on a guessed device";
}

// Under ctest --resource-spec-file (ci/gpu.sh), this process sees exactly the GPU it was
// allotted, as its device 0.
TEST(GpuAllotment, DeviceZeroIsTheAllottedGpu) {
  CUJIT_REQUIRE_DEVICE();
  const char* group = std::getenv("CTEST_RESOURCE_GROUP_COUNT");
  if (group == nullptr) GTEST_SKIP() << "not run under ctest --resource-spec-file (ci/gpu.sh runs it so)";
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  ASSERT_NE(visible, nullptr) << "the test main did not set CUDA_VISIBLE_DEVICES";
  const char* allotted_gpus = std::getenv("CTEST_RESOURCE_GROUP_0_GPUS");
  ASSERT_NE(allotted_gpus, nullptr) << "a resource group without its gpus";
  const std::string gpus = allotted_gpus;
  const auto allotted_count = static_cast<int>(std::count(gpus.begin(), gpus.end(), ';') + 1);
  EXPECT_EQ(device_count(), allotted_count) << "CUDA_VISIBLE_DEVICES=" << visible << " from " << gpus;
}

}  // namespace
}  // namespace cujit
