#include "runtime/vk_status.h"

#include <gtest/gtest.h>

namespace rdrr::runtime {
namespace {

TEST(VkStatus, MapsErrorsWithCallSite) {
  const Status s = vk_check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory(weights, 402653184 bytes)");
  EXPECT_EQ(s.code(), StatusCode::kDevice);
  EXPECT_EQ(s.message(), "vkAllocateMemory(weights, 402653184 bytes): VK_ERROR_OUT_OF_DEVICE_MEMORY");
  EXPECT_TRUE(vk_check(VK_SUCCESS, "x").ok());
  EXPECT_TRUE(vk_check(VK_INCOMPLETE, "x").ok());  // success codes are not errors
  EXPECT_EQ(vk_result_name(VK_ERROR_DEVICE_LOST), "VK_ERROR_DEVICE_LOST");
  EXPECT_EQ(vk_result_name(static_cast<VkResult>(-12345)), "VK_RESULT(-12345)");
}

Status failing_call() {
  RDRR_VK_RETURN_IF_ERROR(VK_ERROR_INITIALIZATION_FAILED, "vkCreateDevice('x')");
  return Status::Ok();
}

TEST(VkStatus, MacroReturnsEarly) {
  const Status s = failing_call();
  EXPECT_EQ(s.code(), StatusCode::kDevice);
  EXPECT_EQ(s.message(), "vkCreateDevice('x'): VK_ERROR_INITIALIZATION_FAILED");
}

}  // namespace
}  // namespace rdrr::runtime
