#include "runtime/vk_status.h"

namespace rdrr::runtime {

std::string vk_result_name(VkResult r) {
  switch (r) {
#define RDRR_VK_NAME(x) \
  case x:               \
    return #x;
    RDRR_VK_NAME(VK_SUCCESS)
    RDRR_VK_NAME(VK_NOT_READY)
    RDRR_VK_NAME(VK_TIMEOUT)
    RDRR_VK_NAME(VK_EVENT_SET)
    RDRR_VK_NAME(VK_EVENT_RESET)
    RDRR_VK_NAME(VK_INCOMPLETE)
    RDRR_VK_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
    RDRR_VK_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    RDRR_VK_NAME(VK_ERROR_INITIALIZATION_FAILED)
    RDRR_VK_NAME(VK_ERROR_DEVICE_LOST)
    RDRR_VK_NAME(VK_ERROR_MEMORY_MAP_FAILED)
    RDRR_VK_NAME(VK_ERROR_LAYER_NOT_PRESENT)
    RDRR_VK_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
    RDRR_VK_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    RDRR_VK_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
    RDRR_VK_NAME(VK_ERROR_TOO_MANY_OBJECTS)
    RDRR_VK_NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
    RDRR_VK_NAME(VK_ERROR_FRAGMENTED_POOL)
    RDRR_VK_NAME(VK_ERROR_UNKNOWN)
    RDRR_VK_NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
    RDRR_VK_NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    RDRR_VK_NAME(VK_ERROR_FRAGMENTATION)
    RDRR_VK_NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    RDRR_VK_NAME(VK_PIPELINE_COMPILE_REQUIRED)
#undef RDRR_VK_NAME
    default:
      break;
  }
  return "VK_RESULT(" + std::to_string(static_cast<int>(r)) + ")";
}

Status vk_check(VkResult r, std::string_view call_site) {
  if (r >= 0) return Status::Ok();
  std::string msg(call_site);
  msg += ": ";
  msg += vk_result_name(r);
  return error(StatusCode::kDevice, std::move(msg));
}

}  // namespace rdrr::runtime
