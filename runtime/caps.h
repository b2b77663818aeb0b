// What a physical device can do (probed once), and what rdrr requires of it. check_requirements is pure so
// the "missing feature" errors are unit-tested without a GPU.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <string>

#include "quant/status.h"
#include "runtime/device_select.h"

namespace rdrr::runtime {

struct DeviceCaps {
  DeviceDesc desc;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};  // VkPhysicalDeviceProperties::pipelineCacheUUID
  std::string driver_name;  // VkPhysicalDeviceDriverProperties (Vulkan 1.2)
  std::string driver_info;

  // Features.
  bool shader_float16 = false;
  bool shader_int8 = false;
  bool shader_int16 = false;
  bool shader_int64 = false;
  bool storage_buffer_16bit = false;  // storageBuffer16BitAccess
  bool storage_buffer_8bit = false;   // storageBuffer8BitAccess
  bool integer_dot_product = false;   // shaderIntegerDotProduct (1.3 / VK_KHR_shader_integer_dot_product)
  // integerDotProduct4x8BitPacked{Unsigned,MixedSignedness}Accelerated: the packed 8-bit dot products run as
  // native instructions (NVIDIA, AMD); software drivers (lavapipe) emulate them, so kernels prefer f32 there.
  bool integer_dot_4x8_accelerated = false;
  bool subgroup_size_control = false;
  bool compute_full_subgroups = false;
  bool cooperative_matrix_khr = false;  // extension present
  bool cooperative_matrix_nv = false;   // extension present
  // VK_NV_cooperative_matrix usable for the *_cm GEMMs: the cooperativeMatrix feature and a subgroup-scope
  // 16x16x16 shape with f16 A / B and f32 C / D (Device::init clears it where it does not enable the extension).
  bool coopmat_f16_16x16 = false;
  bool pipeline_executable_info = false;  // VK_KHR_pipeline_executable_properties present (compiler statistics)

  // Subgroups (VkPhysicalDeviceSubgroupProperties).
  uint32_t subgroup_size = 0;
  uint32_t min_subgroup_size = 0;  // 0 when subgroup size control is absent
  uint32_t max_subgroup_size = 0;
  VkSubgroupFeatureFlags subgroup_ops = 0;
  bool subgroup_in_compute = false;

  // Limits.
  uint64_t max_storage_buffer_range = 0;
  uint64_t min_storage_buffer_offset_alignment = 0;
  uint64_t max_memory_allocation_bytes = 0;
  uint64_t non_coherent_atom_size = 0;
  uint32_t max_push_constants_bytes = 0;
  uint32_t max_compute_shared_memory_bytes = 0;
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_size{};
  std::array<uint32_t, 3> max_workgroup_count{};
  uint64_t device_local_heap_bytes = 0;  // largest DEVICE_LOCAL heap

  // Queue / timing.
  uint32_t compute_queue_family = 0;
  uint32_t timestamp_valid_bits = 0;  // of the compute queue family; 0 = no timestamps
  float timestamp_period_ns = 0.0f;
};

struct FeatureRequirements {
  bool storage_buffer_16bit = true;   // every quantized kernel reads blocks through 16-bit storage
  bool subgroup_arithmetic = true;    // reductions use subgroupAdd (any subgroup size)
  bool shader_float16 = false;
  bool storage_buffer_8bit = false;
  bool integer_dot_product = false;
  uint32_t min_workgroup_invocations = 256;
  uint32_t min_shared_memory_bytes = 16384;
};

// OK, or kUnsupported naming the first missing feature and the device, e.g.
// "device 'llvmpipe': missing required feature storageBuffer16BitAccess".
Status check_requirements(const DeviceCaps& caps, const FeatureRequirements& req);

// The smallest / largest subgroup a pipeline may get (without subgroup size control: the one size).
inline uint32_t smallest_subgroup(const DeviceCaps& c) { return c.min_subgroup_size != 0 ? c.min_subgroup_size : c.subgroup_size; }
inline uint32_t largest_subgroup(const DeviceCaps& c) { return c.max_subgroup_size > c.subgroup_size ? c.max_subgroup_size : c.subgroup_size; }

// Multi-line human summary (used by tools and test logs).
std::string describe_caps(const DeviceCaps& caps);

// Probes a physical device (Vulkan calls; in caps_probe.cpp). Fills desc.index from `index`.
Result<DeviceCaps> probe_caps(VkInstance instance, VkPhysicalDevice pd, uint32_t index);

}  // namespace rdrr::runtime
