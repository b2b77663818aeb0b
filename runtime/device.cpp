#include "runtime/device.h"

#include <cstdlib>
#include <string_view>
#include <vector>

#include "runtime/pipeline.h"
#include "runtime/pipeline_cache_file.h"
#include "runtime/transfer.h"
#include "runtime/vk_status.h"

namespace rdrr::runtime {

DeviceOptions device_options_from_env() {
  DeviceOptions o;
  if (const char* spec = std::getenv("RDRR_DEVICE")) o.device_spec = spec;
  o.instance = instance_options_from_env();
  const char* cache = std::getenv("RDRR_PIPELINE_CACHE");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (cache != nullptr) {
    if (std::string_view(cache) != "off" && *cache != '\0') o.pipeline_cache_dir = cache;
  } else if (xdg != nullptr && *xdg != '\0') {
    o.pipeline_cache_dir = std::filesystem::path(xdg) / "rdrr";
  } else if (home != nullptr && *home != '\0') {
    o.pipeline_cache_dir = std::filesystem::path(home) / ".cache" / "rdrr";
  }
  return o;
}

Result<std::unique_ptr<Device>> Device::create(const DeviceOptions& opts) {
  RDRR_ASSIGN_OR_RETURN(std::unique_ptr<Instance> instance, Instance::create(opts.instance));
  return create(std::move(instance), opts);
}

Result<std::unique_ptr<Device>> Device::create(std::unique_ptr<Instance> instance, const DeviceOptions& opts) {
  std::unique_ptr<Device> dev(new Device());
  RDRR_RETURN_IF_ERROR(dev->init(std::move(instance), opts));
  return dev;
}

Device::~Device() {
  if (device_.get() != VK_NULL_HANDLE) vkDeviceWaitIdle(device_.get());
  // Members go in reverse order: transfer, pipelines, pools, device, instance.
  transfer_.reset();
  (void)save_pipeline_cache();  // best effort: a cache that cannot be written is compiled again next time
  pipelines_.reset();
  host_pool_.reset();
  device_pool_.reset();
}

Status Device::init(std::unique_ptr<Instance> instance, const DeviceOptions& opts) {
  opts_ = opts;
  instance_ = std::move(instance);
  RDRR_ASSIGN_OR_RETURN(uint32_t index, select_device(instance_->device_descs(), opts.device_spec));
  caps_ = instance_->device_caps()[index];
  physical_ = instance_->physical_devices()[index];
  RDRR_RETURN_IF_ERROR(check_requirements(caps_, opts.required));

  // Enable every optional feature the device has (kernels pick variants by caps) plus the required ones.
  auto f11 = vk_init<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto f12 = vk_init<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto f13 = vk_init<VkPhysicalDeviceVulkan13Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
  auto f2 = vk_init<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  f2.pNext = &f11;
  f11.pNext = &f12;
  f2.features.shaderInt16 = caps_.shader_int16 ? VK_TRUE : VK_FALSE;
  f2.features.shaderInt64 = caps_.shader_int64 ? VK_TRUE : VK_FALSE;
  f11.storageBuffer16BitAccess = caps_.storage_buffer_16bit ? VK_TRUE : VK_FALSE;
  f12.shaderFloat16 = caps_.shader_float16 ? VK_TRUE : VK_FALSE;
  f12.shaderInt8 = caps_.shader_int8 ? VK_TRUE : VK_FALSE;
  f12.storageBuffer8BitAccess = caps_.storage_buffer_8bit ? VK_TRUE : VK_FALSE;
  std::vector<const char*> extensions;
  if (caps_.desc.api_version >= VK_API_VERSION_1_3) {
    f12.pNext = &f13;
    f13.shaderIntegerDotProduct = caps_.integer_dot_product ? VK_TRUE : VK_FALSE;
    f13.subgroupSizeControl = caps_.subgroup_size_control ? VK_TRUE : VK_FALSE;
    f13.computeFullSubgroups = caps_.compute_full_subgroups ? VK_TRUE : VK_FALSE;
  } else {
    caps_.integer_dot_product = false;  // the 1.2 extension path is not enabled in this slice
    caps_.integer_dot_4x8_accelerated = false;
    caps_.subgroup_size_control = false;
    RDRR_RETURN_IF_ERROR(check_requirements(caps_, opts.required));
  }

  // The *_cm GEMMs read f16 tiles through VK_NV_cooperative_matrix (and need 16-bit storage and f16 arithmetic).
  auto cmf = vk_init<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  // gemm.comp COOPMAT numbers its subgroups of 32 by gl_SubgroupID: the size must not vary.
  const bool fixed_32 = caps_.subgroup_size == 32 && caps_.subgroup_in_compute &&
                        (caps_.min_subgroup_size == 0 || (caps_.min_subgroup_size == 32 && caps_.max_subgroup_size == 32));
  caps_.coopmat_f16_16x16 = caps_.coopmat_f16_16x16 && caps_.shader_float16 && caps_.storage_buffer_16bit && fixed_32;
  if (caps_.coopmat_f16_16x16) {
    cmf.cooperativeMatrix = VK_TRUE;
    cmf.pNext = f2.pNext;
    f2.pNext = &cmf;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }

  auto pexe = vk_init<VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
  if (opts.capture_pipeline_statistics && caps_.pipeline_executable_info) {
    pexe.pipelineExecutableInfo = VK_TRUE;
    pexe.pNext = f2.pNext;
    f2.pNext = &pexe;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  } else {
    opts_.capture_pipeline_statistics = false;
  }

  const float priority = 1.0f;
  auto qi = vk_init<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qi.queueFamilyIndex = caps_.compute_queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  auto di = vk_init<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  di.pNext = &f2;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  di.ppEnabledExtensionNames = extensions.data();
  VkDevice raw = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateDevice(physical_, &di, nullptr, &raw), "vkCreateDevice('" + caps_.desc.name + "')");
  device_ = UniqueDevice(raw);
  vkGetDeviceQueue(raw, caps_.compute_queue_family, 0, &queue_);

  device_pool_ = std::make_unique<MemoryPool>(raw, physical_, MemoryKind::kDeviceLocal, opts.block_bytes,
                                              caps_.max_memory_allocation_bytes);
  host_pool_ = std::make_unique<MemoryPool>(raw, physical_, MemoryKind::kHost, opts.host_block_bytes,
                                            caps_.max_memory_allocation_bytes);
  PipelineCacheLoad load;
  if (!opts.pipeline_cache_dir.empty()) {
    load = read_pipeline_cache_file(opts.pipeline_cache_dir / pipeline_cache_file_name(caps_), caps_);
  }
  pipeline_cache_loaded_bytes_ = load.blob.size();
  pipeline_cache_note_ = load.note;
  pipelines_ = std::make_unique<PipelineCache>(*this, load.blob);
  RDRR_RETURN_IF_ERROR(pipelines_->init());
  RDRR_ASSIGN_OR_RETURN(transfer_, Transfer::create(*this, opts.staging_bytes));
  return Status::Ok();
}

Status Device::save_pipeline_cache() {
  if (opts_.pipeline_cache_dir.empty() || !pipelines_ || pipelines_->pipeline_count() == 0) return Status::Ok();
  RDRR_ASSIGN_OR_RETURN(std::vector<std::byte> blob, pipelines_->serialize());
  if (blob.size() <= pipeline_cache_loaded_bytes_) return Status::Ok();  // nothing new compiled
  RDRR_RETURN_IF_ERROR(write_pipeline_cache_file(opts_.pipeline_cache_dir / pipeline_cache_file_name(caps_), blob));
  pipeline_cache_loaded_bytes_ = blob.size();
  return Status::Ok();
}

uint64_t Device::binding_limit_bytes() const {
  uint64_t limit = caps_.max_storage_buffer_range;
  if (opts_.max_binding_bytes != 0 && opts_.max_binding_bytes < limit) limit = opts_.max_binding_bytes;
  return limit;
}

uint64_t Device::binding_alignment() const {
  return caps_.min_storage_buffer_offset_alignment < 4 ? 4 : caps_.min_storage_buffer_offset_alignment;
}

Result<Buffer> Device::allocate(uint64_t size_bytes, std::string_view name) {
  const uint64_t align = binding_alignment() > 256 ? binding_alignment() : 256;
  return device_pool_->allocate(size_bytes, align, name);
}

Status Device::upload(const BufferRange& dst, std::span<const std::byte> src) { return transfer_->upload(dst, src); }
Status Device::download(const BufferRange& src, std::span<std::byte> dst) { return transfer_->download(src, dst); }
Status Device::fill(const BufferRange& dst, uint32_t pattern) { return transfer_->fill(dst, pattern); }

Status Device::validation_status() const {
  const uint64_t n = instance_->validation_error_count();
  if (n == 0) return Status::Ok();
  return error(StatusCode::kDevice, std::to_string(n) + " Vulkan validation error(s); last: " +
                                        instance_->last_validation_error());
}

}  // namespace rdrr::runtime
