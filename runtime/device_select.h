// Physical-device choice as a pure function over device descriptions (unit-tested without a GPU).
// Default: the first discrete GPU, else integrated, else virtual, else CPU (lavapipe), else other; devices
// below Vulkan 1.2 or without a compute queue are never chosen. RDRR_DEVICE=<index|name substring>
// (case-insensitive) overrides, and an override that names an unusable device is an error, not a fallback.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "quant/status.h"

namespace rdrr::runtime {

enum class DeviceKind : uint8_t { kDiscrete, kIntegrated, kVirtual, kCpu, kOther };
std::string_view device_kind_name(DeviceKind k);  // "discrete", "integrated", "virtual", "cpu", "other"

struct DeviceDesc {
  uint32_t index = 0;        // position in vkEnumeratePhysicalDevices order
  std::string name;          // VkPhysicalDeviceProperties::deviceName
  DeviceKind kind = DeviceKind::kOther;
  uint32_t api_version = 0;  // VK_MAKE_API_VERSION form
  bool has_compute_queue = false;
};

inline constexpr uint32_t kMinApiVersion = (1u << 22) | (2u << 12);  // VK_API_VERSION_1_2

// Returns the index (DeviceDesc::index) of the chosen device. override_spec empty = automatic.
// Errors: kNotFound (no devices; no index / name match), kUnsupported (the only / named device is unusable).
Result<uint32_t> select_device(std::span<const DeviceDesc> devices, std::string_view override_spec);

// "0: 'llvmpipe (LLVM 15.0.6, 256 bits)' cpu Vulkan 1.3.230" lines joined by "; " (for error messages).
std::string describe_devices(std::span<const DeviceDesc> devices);

}  // namespace rdrr::runtime
