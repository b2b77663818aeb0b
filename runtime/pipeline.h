// Compute pipelines built from the kernel registry's embedded SPIR-V, one per (kernel, specialization)
// pair, created through a VkPipelineCache and kept for the device's lifetime.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/registry.h"
#include "quant/status.h"
#include "runtime/handles.h"

namespace rdrr::runtime {

class Device;

struct SpecValue {
  uint32_t id;
  uint32_t value;
};

class Pipeline {
 public:
  const kernels::KernelInfo& kernel() const { return *kernel_; }
  VkPipeline vk() const { return pipeline_.get(); }
  VkPipelineLayout layout() const { return layout_.get(); }
  VkDescriptorSetLayout set_layout() const { return set_layout_.get(); }
  const std::array<uint32_t, 3>& local_size() const { return local_size_; }
  // Resolved value of specialization constant `id` (registry default or override).
  uint32_t spec(uint32_t id) const;

 private:
  friend class PipelineCache;
  const kernels::KernelInfo* kernel_ = nullptr;
  std::vector<SpecValue> spec_;
  std::array<uint32_t, 3> local_size_{1, 1, 1};
  UniqueDescriptorSetLayout set_layout_;
  UniquePipelineLayout layout_;
  UniquePipeline pipeline_;
};

// The driver's compiler statistics of `p` ("name=value, ..."; e.g. register count) when the device was created
// with DeviceOptions::capture_pipeline_statistics and has VK_KHR_pipeline_executable_properties; else kUnsupported.
Result<std::string> pipeline_statistics(const Device& device, const Pipeline& p);

class PipelineCache {
 public:
  // initial_data: a blob from serialize() of an earlier run (may be empty; a stale blob is ignored by Vulkan).
  PipelineCache(Device& device, std::span<const std::byte> initial_data);
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;
  Status init();

  // The pipeline for `kernel` with its registry defaults overridden by `overrides`.
  // Errors: kInvalidArgument (unknown spec id), kUnsupported (workgroup beyond device limits), kInternal
  // (no embedded SPIR-V), kDevice (Vulkan).
  Result<const Pipeline*> get(const kernels::KernelInfo& kernel, std::span<const SpecValue> overrides = {});
  Result<const Pipeline*> get(std::string_view kernel_name, std::span<const SpecValue> overrides = {});

  Result<std::vector<std::byte>> serialize() const;  // vkGetPipelineCacheData
  size_t pipeline_count() const;
  std::vector<std::pair<std::string, const Pipeline*>> list() const;  // (cache key, pipeline), key order

 private:
  Result<std::unique_ptr<Pipeline>> build(const kernels::KernelInfo& kernel, std::vector<SpecValue> spec);

  Device& device_;
  std::vector<std::byte> initial_data_;
  UniquePipelineCache cache_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;  // key: "name|id=value|..."
};

}  // namespace rdrr::runtime
