#include "runtime/caps.h"

#include <gtest/gtest.h>

namespace rdrr::runtime {
namespace {

DeviceCaps good_caps() {
  DeviceCaps c;
  c.desc.name = "test device";
  c.storage_buffer_16bit = true;
  c.subgroup_in_compute = true;
  c.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  c.max_workgroup_invocations = 1024;
  c.max_compute_shared_memory_bytes = 32768;
  return c;
}

void expect_missing(const DeviceCaps& c, const FeatureRequirements& req, const std::string& fragment) {
  const Status s = check_requirements(c, req);
  ASSERT_FALSE(s.ok()) << fragment;
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("device 'test device'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(Caps, DefaultRequirementsPass) { EXPECT_TRUE(check_requirements(good_caps(), {}).ok()); }

TEST(Caps, EachMissingFeatureIsNamed) {
  const FeatureRequirements req;
  DeviceCaps c = good_caps();
  c.storage_buffer_16bit = false;
  expect_missing(c, req, "missing required feature storageBuffer16BitAccess");
  c = good_caps();
  c.subgroup_in_compute = false;
  expect_missing(c, req, "subgroup operations in the compute stage");
  c = good_caps();
  c.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT;
  expect_missing(c, req, "subgroup arithmetic operations");
  c = good_caps();
  c.max_workgroup_invocations = 128;
  expect_missing(c, req, "maxComputeWorkGroupInvocations 128 < required 256");
  c = good_caps();
  c.max_compute_shared_memory_bytes = 8192;
  expect_missing(c, req, "maxComputeSharedMemorySize 8192 < required 16384");
}

TEST(Caps, OptionalFeaturesOnlyWhenRequired) {
  DeviceCaps c = good_caps();
  FeatureRequirements req;
  req.shader_float16 = true;
  expect_missing(c, req, "shaderFloat16");
  req = {};
  req.storage_buffer_8bit = true;
  expect_missing(c, req, "storageBuffer8BitAccess");
  req = {};
  req.integer_dot_product = true;
  expect_missing(c, req, "shaderIntegerDotProduct");
  c.integer_dot_product = true;
  EXPECT_TRUE(check_requirements(c, req).ok());
}

TEST(Caps, DescribeMentionsKeyLimits) {
  DeviceCaps c = good_caps();
  c.subgroup_size = 8;
  c.max_storage_buffer_range = 134217728;
  const std::string s = describe_caps(c);
  EXPECT_NE(s.find("subgroup size 8"), std::string::npos) << s;
  EXPECT_NE(s.find("maxStorageBufferRange 134217728"), std::string::npos) << s;
  EXPECT_NE(s.find("ops basic,arithmetic"), std::string::npos) << s;
}

}  // namespace
}  // namespace rdrr::runtime
