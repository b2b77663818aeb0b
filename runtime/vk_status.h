// VkResult -> Status mapping. Every Vulkan call that can fail goes through vk_check with its call site,
// so errors read "vkAllocateMemory(weights, 402653184 bytes): VK_ERROR_OUT_OF_DEVICE_MEMORY".
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <string_view>

#include "quant/status.h"

namespace rdrr::runtime {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY"; "VK_RESULT(<n>)" for codes this header does not know.
std::string vk_result_name(VkResult r);

// OK for VK_SUCCESS (and the other non-negative success codes); otherwise kDevice "<call_site>: <name>".
Status vk_check(VkResult r, std::string_view call_site);

// A zero-initialised Vulkan info struct with its sType set (avoids -Wmissing-field-initializers).
template <typename T>
T vk_init(VkStructureType type) {
  T v{};
  v.sType = type;
  return v;
}

}  // namespace rdrr::runtime

// Returns a kDevice status from the enclosing function when the Vulkan call fails.
// site is anything convertible to std::string_view, built only on failure when it is an expression.
#define RDRR_VK_RETURN_IF_ERROR(call, site)                          \
  do {                                                               \
    const VkResult rdrr_vk_result_ = (call);                         \
    if (rdrr_vk_result_ < 0) return ::rdrr::runtime::vk_check(rdrr_vk_result_, site); \
  } while (0)
