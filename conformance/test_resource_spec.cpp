// The CTest resource spec of a host's GPUs (cli/resource_spec.hpp), from a fake device
// list: one `gpus` entry per device, its ordinal as id, the slots given; none for a host
// without a device. Then `cujit resource-spec` itself, which must describe the devices this
// machine really shows (none on a CPU machine, every one on a GPU host).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"
#include "cujit/device.hpp"
#include "output.hpp"
#include "resource_spec.hpp"

namespace cujit {
namespace {

std::vector<cli::DeviceInfo> fake_devices(int count) {
  std::vector<cli::DeviceInfo> devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) devices.push_back({ordinal, "Fake GPU", "sm_90"});
  return devices;
}

// The `gpus` array of a spec, after checking the parts CTest requires around it.
nlohmann::json gpus_of(const std::string& spec) {
  const nlohmann::json json = nlohmann::json::parse(spec, nullptr, false);
  EXPECT_TRUE(json.is_object()) << spec;
  if (!json.is_object()) return nlohmann::json::array();
  EXPECT_EQ(json.at("version").at("major"), 1);
  EXPECT_EQ(json.at("version").at("minor"), 0);
  EXPECT_EQ(json.at("local").size(), 1u);
  return json.at("local").at(0).at("gpus");
}

TEST(ResourceSpec, OneEntryPerDeviceWithItsOrdinalAsId) {
  const nlohmann::json gpus = gpus_of(cli::resource_spec_json(fake_devices(4), 4));
  ASSERT_EQ(gpus.size(), 4u);
  for (int ordinal = 0; ordinal < 4; ++ordinal) {
    EXPECT_EQ(gpus.at(ordinal).at("id"), std::to_string(ordinal));
    EXPECT_EQ(gpus.at(ordinal).at("slots"), 4);
  }
}

TEST(ResourceSpec, SlotsAreHowManyTestsShareADevice) {
  const nlohmann::json gpus = gpus_of(cli::resource_spec_json(fake_devices(2), 1));
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus.at(1).at("slots"), 1);
}

TEST(ResourceSpec, HostWithoutDevicesHasNoEntries) {
  EXPECT_TRUE(gpus_of(cli::resource_spec_json({}, 4)).empty());
}

TEST(ResourceSpec, SlotsOutsideTheRangeAreAUsageErrorNamingTheOption) {
  for (const int slots : {0, -1, cli::max_slots_per_gpu + 1}) {
    try {
      (void)cli::resource_spec_json(fake_devices(1), slots);
      ADD_FAILURE() << slots << " slots accepted";
    } catch (const cli::CliError& error) {
      EXPECT_NE(std::string(error.what()).find("--slots-per-gpu"), std::string::npos) << error.what();
    }
  }
}

int devices_this_machine_shows() { return has_device() ? device_count() : 0; }

TEST(ResourceSpecCommand, DescribesTheDevicesThisMachineShows) {
  test::TempDir dir;
  test::cli::Spec spec;
  spec.args = {"resource-spec", "--slots-per-gpu", "3", "--out", (dir.path() / "spec.json").string()};
  const auto run = test::cli::run_cujit(spec);
  ASSERT_EQ(run.exit_code, 0) << run.all();
  EXPECT_EQ(run.out, "") << "the spec goes to --out";
  const nlohmann::json gpus = gpus_of(test::cli::read_all(dir.path() / "spec.json"));
  EXPECT_EQ(static_cast<int>(gpus.size()), devices_this_machine_shows()) << run.all();
  for (const auto& gpu : gpus) EXPECT_EQ(gpu.at("slots"), 3);
}

TEST(ResourceSpecCommand, BadSlotCountIsExit2) {
  test::cli::Spec spec;
  spec.args = {"resource-spec", "--slots-per-gpu", "0"};
  const auto run = test::cli::run_cujit(spec);
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("--slots-per-gpu"), std::string::npos) << run.all();
}

}  // namespace
}  // namespace cujit
