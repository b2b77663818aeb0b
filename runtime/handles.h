// RAII owners for Vulkan handles: one owner each, move-only, destroyed with the device that made them.
// Declare members in creation order so that they are destroyed in reverse (children before parents).
#pragma once

#include <vulkan/vulkan.h>

#include <utility>

namespace rdrr::runtime {

// A handle created from a VkDevice and destroyed with vkDestroyX(device, handle, nullptr).
template <typename T, void (*Destroy)(VkDevice, T, const VkAllocationCallbacks*)>
class DeviceHandle {
 public:
  DeviceHandle() = default;
  DeviceHandle(VkDevice device, T handle) : device_(device), handle_(handle) {}
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;
  DeviceHandle(DeviceHandle&& o) noexcept
      : device_(std::exchange(o.device_, VK_NULL_HANDLE)), handle_(std::exchange(o.handle_, VK_NULL_HANDLE)) {}
  DeviceHandle& operator=(DeviceHandle&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = std::exchange(o.device_, VK_NULL_HANDLE);
      handle_ = std::exchange(o.handle_, VK_NULL_HANDLE);
    }
    return *this;
  }
  ~DeviceHandle() { reset(); }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) Destroy(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  T get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  T handle_ = VK_NULL_HANDLE;
};

using UniqueBuffer = DeviceHandle<VkBuffer, vkDestroyBuffer>;
using UniqueMemory = DeviceHandle<VkDeviceMemory, vkFreeMemory>;
using UniqueShaderModule = DeviceHandle<VkShaderModule, vkDestroyShaderModule>;
using UniquePipeline = DeviceHandle<VkPipeline, vkDestroyPipeline>;
using UniquePipelineLayout = DeviceHandle<VkPipelineLayout, vkDestroyPipelineLayout>;
using UniquePipelineCache = DeviceHandle<VkPipelineCache, vkDestroyPipelineCache>;
using UniqueDescriptorSetLayout = DeviceHandle<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using UniqueDescriptorPool = DeviceHandle<VkDescriptorPool, vkDestroyDescriptorPool>;
using UniqueCommandPool = DeviceHandle<VkCommandPool, vkDestroyCommandPool>;
using UniqueFence = DeviceHandle<VkFence, vkDestroyFence>;
using UniqueQueryPool = DeviceHandle<VkQueryPool, vkDestroyQueryPool>;

// The VkInstance itself (no parent).
class UniqueInstance {
 public:
  UniqueInstance() = default;
  explicit UniqueInstance(VkInstance h) : h_(h) {}
  UniqueInstance(const UniqueInstance&) = delete;
  UniqueInstance& operator=(const UniqueInstance&) = delete;
  UniqueInstance(UniqueInstance&& o) noexcept : h_(std::exchange(o.h_, VK_NULL_HANDLE)) {}
  UniqueInstance& operator=(UniqueInstance&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, VK_NULL_HANDLE);
    }
    return *this;
  }
  ~UniqueInstance() { reset(); }
  void reset() {
    if (h_ != VK_NULL_HANDLE) vkDestroyInstance(h_, nullptr);
    h_ = VK_NULL_HANDLE;
  }
  VkInstance get() const { return h_; }

 private:
  VkInstance h_ = VK_NULL_HANDLE;
};

// The VkDevice (its parent, the VkPhysicalDevice, needs no destruction).
class UniqueDevice {
 public:
  UniqueDevice() = default;
  explicit UniqueDevice(VkDevice h) : h_(h) {}
  UniqueDevice(const UniqueDevice&) = delete;
  UniqueDevice& operator=(const UniqueDevice&) = delete;
  UniqueDevice(UniqueDevice&& o) noexcept : h_(std::exchange(o.h_, VK_NULL_HANDLE)) {}
  UniqueDevice& operator=(UniqueDevice&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, VK_NULL_HANDLE);
    }
    return *this;
  }
  ~UniqueDevice() { reset(); }
  void reset() {
    if (h_ != VK_NULL_HANDLE) {
      vkDeviceWaitIdle(h_);
      vkDestroyDevice(h_, nullptr);
    }
    h_ = VK_NULL_HANDLE;
  }
  VkDevice get() const { return h_; }

 private:
  VkDevice h_ = VK_NULL_HANDLE;
};

// A primary command buffer, freed back to its pool.
class UniqueCommandBuffer {
 public:
  UniqueCommandBuffer() = default;
  UniqueCommandBuffer(VkDevice d, VkCommandPool p, VkCommandBuffer c) : d_(d), p_(p), c_(c) {}
  UniqueCommandBuffer(const UniqueCommandBuffer&) = delete;
  UniqueCommandBuffer& operator=(const UniqueCommandBuffer&) = delete;
  UniqueCommandBuffer(UniqueCommandBuffer&& o) noexcept
      : d_(o.d_), p_(o.p_), c_(std::exchange(o.c_, VK_NULL_HANDLE)) {}
  UniqueCommandBuffer& operator=(UniqueCommandBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = o.d_;
      p_ = o.p_;
      c_ = std::exchange(o.c_, VK_NULL_HANDLE);
    }
    return *this;
  }
  ~UniqueCommandBuffer() { reset(); }
  void reset() {
    if (c_ != VK_NULL_HANDLE) vkFreeCommandBuffers(d_, p_, 1, &c_);
    c_ = VK_NULL_HANDLE;
  }
  VkCommandBuffer get() const { return c_; }

 private:
  VkDevice d_ = VK_NULL_HANDLE;
  VkCommandPool p_ = VK_NULL_HANDLE;
  VkCommandBuffer c_ = VK_NULL_HANDLE;
};

}  // namespace rdrr::runtime
