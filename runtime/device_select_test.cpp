#include "runtime/device_select.h"

#include <gtest/gtest.h>

#include <vector>

namespace rdrr::runtime {
namespace {

constexpr uint32_t kV13 = (1u << 22) | (3u << 12);
constexpr uint32_t kV11 = (1u << 22) | (1u << 12);

DeviceDesc dev(uint32_t index, std::string name, DeviceKind kind, uint32_t api = kV13, bool compute = true) {
  return DeviceDesc{index, std::move(name), kind, api, compute};
}

TEST(DeviceSelect, PrefersDiscreteThenIntegratedThenCpu) {
  std::vector<DeviceDesc> d = {dev(0, "llvmpipe (LLVM 15)", DeviceKind::kCpu), dev(1, "Intel UHD", DeviceKind::kIntegrated),
                               dev(2, "NVIDIA H100", DeviceKind::kDiscrete)};
  EXPECT_EQ(*select_device(d, ""), 2u);
  d.pop_back();
  EXPECT_EQ(*select_device(d, ""), 1u);
  d.pop_back();
  EXPECT_EQ(*select_device(d, ""), 0u);
}

TEST(DeviceSelect, LowestIndexWinsAmongEquals) {
  std::vector<DeviceDesc> d = {dev(0, "llvmpipe", DeviceKind::kCpu), dev(1, "GPU A", DeviceKind::kDiscrete),
                               dev(2, "GPU B", DeviceKind::kDiscrete)};
  EXPECT_EQ(*select_device(d, ""), 1u);
}

TEST(DeviceSelect, SkipsOldOrComputeLessDevices) {
  std::vector<DeviceDesc> d = {dev(0, "old GPU", DeviceKind::kDiscrete, kV11),
                               dev(1, "no compute", DeviceKind::kIntegrated, kV13, false),
                               dev(2, "llvmpipe", DeviceKind::kCpu)};
  EXPECT_EQ(*select_device(d, ""), 2u);
}

TEST(DeviceSelect, OverrideByIndexAndName) {
  std::vector<DeviceDesc> d = {dev(0, "llvmpipe (LLVM 15.0.6, 256 bits)", DeviceKind::kCpu),
                               dev(1, "NVIDIA H100 80GB HBM3", DeviceKind::kDiscrete)};
  EXPECT_EQ(*select_device(d, "0"), 0u);
  EXPECT_EQ(*select_device(d, "1"), 1u);
  EXPECT_EQ(*select_device(d, "LLVMPIPE"), 0u);  // case-insensitive substring
  EXPECT_EQ(*select_device(d, "h100"), 1u);
}

TEST(DeviceSelect, OverrideErrorsNameTheProblem) {
  std::vector<DeviceDesc> d = {dev(0, "llvmpipe", DeviceKind::kCpu), dev(1, "old GPU", DeviceKind::kDiscrete, kV11)};
  Result<uint32_t> r = select_device(d, "7");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("RDRR_DEVICE=7: no device with index 7"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("0: 'llvmpipe' cpu"), std::string::npos) << r.status().message();

  r = select_device(d, "radeon");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no device name contains it"), std::string::npos);

  r = select_device(d, "old");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("Vulkan 1.1.0 < required 1.2"), std::string::npos) << r.status().message();
}

TEST(DeviceSelect, NoDevicesOrNoUsableDevice) {
  Result<uint32_t> r = select_device({}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  std::vector<DeviceDesc> d = {dev(0, "ancient", DeviceKind::kDiscrete, kV11)};
  r = select_device(d, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("0 'ancient': Vulkan 1.1.0 < required 1.2"), std::string::npos);
}

}  // namespace
}  // namespace rdrr::runtime
