// The Vulkan instance (Vulkan 1.2+ through the system loader) and its physical devices.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quant/status.h"
#include "runtime/caps.h"
#include "runtime/handles.h"

namespace rdrr::runtime {

struct InstanceOptions {
  // Enable VK_LAYER_KHRONOS_validation when installed (an absent layer is a warning on stderr, not an error).
  // Default: environment RDRR_VK_VALIDATION=1.
  bool validation = false;
};

InstanceOptions instance_options_from_env();

class Instance {
 public:
  // Errors: kDevice with the failing call (e.g. "vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER" when no
  // Vulkan driver is installed).
  static Result<std::unique_ptr<Instance>> create(const InstanceOptions& opts);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance vk() const { return instance_.get(); }
  uint32_t api_version() const { return api_version_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }

  // Every physical device, probed (index = enumeration order).
  const std::vector<VkPhysicalDevice>& physical_devices() const { return physical_; }
  const std::vector<DeviceCaps>& device_caps() const { return caps_; }
  std::vector<DeviceDesc> device_descs() const;

  // Validation messages of severity error seen so far, and the last one's text.
  uint64_t validation_error_count() const { return validation_errors_.load(); }
  std::string last_validation_error() const;

 private:
  Instance() = default;
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);

  UniqueInstance instance_;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;  // destroyed in ~Instance before the instance
  uint32_t api_version_ = 0;
  std::vector<VkPhysicalDevice> physical_;
  std::vector<DeviceCaps> caps_;
  std::atomic<uint64_t> validation_errors_{0};
  mutable std::mutex message_mu_;
  std::string last_error_;
};

}  // namespace rdrr::runtime
