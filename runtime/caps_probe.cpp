// probe_caps: the Vulkan queries behind DeviceCaps.
#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "runtime/caps.h"
#include "runtime/vk_status.h"

namespace rdrr::runtime {
namespace {

DeviceKind kind_of(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceKind::kDiscrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceKind::kIntegrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceKind::kVirtual;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceKind::kCpu;
    default: return DeviceKind::kOther;
  }
}

Result<std::vector<std::string>> device_extensions(VkPhysicalDevice pd) {
  uint32_t n = 0;
  RDRR_VK_RETURN_IF_ERROR(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr),
                          "vkEnumerateDeviceExtensionProperties(count)");
  std::vector<VkExtensionProperties> props(n);
  RDRR_VK_RETURN_IF_ERROR(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, props.data()),
                          "vkEnumerateDeviceExtensionProperties");
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) names.emplace_back(props[i].extensionName);
  return names;
}

void fill_queue(VkPhysicalDevice pd, DeviceCaps& c) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> q(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q.data());
  int best = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0 || q[i].queueCount == 0) continue;
    // Prefer a compute-only family (no graphics work competes with it).
    if (best < 0 || ((q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0 &&
                     (q[static_cast<uint32_t>(best)].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0)) {
      best = static_cast<int>(i);
    }
  }
  c.desc.has_compute_queue = best >= 0;
  if (best >= 0) {
    c.compute_queue_family = static_cast<uint32_t>(best);
    c.timestamp_valid_bits = q[c.compute_queue_family].timestampValidBits;
  }
}

// VK_NV_cooperative_matrix (its feature already read): a subgroup-scope 16x16x16 f16 x f16 -> f32 shape.
bool has_coopmat_nv_f16_shape(VkInstance instance, VkPhysicalDevice pd) {
  auto get_props = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (get_props == nullptr) return false;
  uint32_t n = 0;
  if (get_props(pd, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> props(
      n, vk_init<VkCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
  if (get_props(pd, &n, props.data()) != VK_SUCCESS) return false;
  for (const VkCooperativeMatrixPropertiesNV& p : props) {
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && p.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        p.BType == VK_COMPONENT_TYPE_FLOAT16_NV && p.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        p.DType == VK_COMPONENT_TYPE_FLOAT32_NV && p.scope == VK_SCOPE_SUBGROUP_NV) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<DeviceCaps> probe_caps(VkInstance instance, VkPhysicalDevice pd, uint32_t index) {
  DeviceCaps c;
  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(pd, &base);
  c.desc.index = index;
  c.desc.name = base.deviceName;
  c.desc.kind = kind_of(base.deviceType);
  c.desc.api_version = base.apiVersion;
  c.vendor_id = base.vendorID;
  c.device_id = base.deviceID;
  std::copy(std::begin(base.pipelineCacheUUID), std::end(base.pipelineCacheUUID), c.pipeline_cache_uuid.begin());
  fill_queue(pd, c);
  const VkPhysicalDeviceLimits& l = base.limits;
  c.max_storage_buffer_range = l.maxStorageBufferRange;
  c.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
  c.non_coherent_atom_size = l.nonCoherentAtomSize;
  c.max_push_constants_bytes = l.maxPushConstantsSize;
  c.max_compute_shared_memory_bytes = l.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
    c.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
  }
  c.timestamp_period_ns = l.timestampPeriod;
  if (c.desc.api_version < kMinApiVersion) return c;  // not selectable; the 1.2 structures below are not valid

  RDRR_ASSIGN_OR_RETURN(std::vector<std::string> exts, device_extensions(pd));
  auto has_ext = [&](std::string_view name) {
    for (const std::string& e : exts) {
      if (e == name) return true;
    }
    return false;
  };
  const bool v13 = c.desc.api_version >= VK_API_VERSION_1_3;
  c.cooperative_matrix_khr = has_ext("VK_KHR_cooperative_matrix");
  c.cooperative_matrix_nv = has_ext("VK_NV_cooperative_matrix");
  c.pipeline_executable_info = has_ext(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

  // Properties.
  auto sg = vk_init<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto drv = vk_init<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto sgc = vk_init<VkPhysicalDeviceSubgroupSizeControlProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES);
  auto m3 = vk_init<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
  auto props2 = vk_init<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props2.pNext = &sg;
  sg.pNext = &drv;
  drv.pNext = &m3;
  const bool has_sgc = v13 || has_ext(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  auto idp = vk_init<VkPhysicalDeviceShaderIntegerDotProductProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES);
  if (has_sgc) m3.pNext = &sgc;
  if (v13 || has_ext(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) {
    idp.pNext = props2.pNext;
    props2.pNext = &idp;
  }
  vkGetPhysicalDeviceProperties2(pd, &props2);
  c.subgroup_size = sg.subgroupSize;
  c.subgroup_ops = sg.supportedOperations;
  c.subgroup_in_compute = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  c.driver_name = drv.driverName;
  c.driver_info = drv.driverInfo;
  c.max_memory_allocation_bytes = m3.maxMemoryAllocationSize;
  c.integer_dot_4x8_accelerated = idp.integerDotProduct4x8BitPackedUnsignedAccelerated == VK_TRUE &&
                                  idp.integerDotProduct4x8BitPackedMixedSignednessAccelerated == VK_TRUE;
  if (has_sgc) {
    c.min_subgroup_size = sgc.minSubgroupSize;
    c.max_subgroup_size = sgc.maxSubgroupSize;
  }

  // Features.
  auto f11 = vk_init<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto f12 = vk_init<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto f13 = vk_init<VkPhysicalDeviceVulkan13Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
  auto idot = vk_init<VkPhysicalDeviceShaderIntegerDotProductFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES);
  auto f2 = vk_init<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  auto cmf = vk_init<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  f2.pNext = &f11;
  f11.pNext = &f12;
  if (v13) {
    f12.pNext = &f13;
  } else if (has_ext(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) {
    f12.pNext = &idot;
  }
  if (c.cooperative_matrix_nv) {
    cmf.pNext = f2.pNext;
    f2.pNext = &cmf;
  }
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  c.shader_int16 = f2.features.shaderInt16 == VK_TRUE;
  c.shader_int64 = f2.features.shaderInt64 == VK_TRUE;
  c.storage_buffer_16bit = f11.storageBuffer16BitAccess == VK_TRUE;
  c.shader_float16 = f12.shaderFloat16 == VK_TRUE;
  c.shader_int8 = f12.shaderInt8 == VK_TRUE;
  c.storage_buffer_8bit = f12.storageBuffer8BitAccess == VK_TRUE;
  if (v13) {
    c.integer_dot_product = f13.shaderIntegerDotProduct == VK_TRUE;
    c.subgroup_size_control = f13.subgroupSizeControl == VK_TRUE;
    c.compute_full_subgroups = f13.computeFullSubgroups == VK_TRUE;
  } else {
    c.integer_dot_product = idot.shaderIntegerDotProduct == VK_TRUE;
  }
  c.integer_dot_4x8_accelerated = c.integer_dot_4x8_accelerated && c.integer_dot_product;
  c.coopmat_f16_16x16 = cmf.cooperativeMatrix == VK_TRUE && has_coopmat_nv_f16_shape(instance, pd);

  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    if ((mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0 &&
        mem.memoryHeaps[i].size > c.device_local_heap_bytes) {
      c.device_local_heap_bytes = mem.memoryHeaps[i].size;
    }
  }
  return c;
}

}  // namespace rdrr::runtime
