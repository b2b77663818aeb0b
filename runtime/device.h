// The logical device: chosen physical device (device_select.h), enabled features, one compute queue, the
// memory pools, the staging transfer ring and the pipeline cache. Create once, share by reference; every
// object made from it (Buffer, Recorder, Pipeline) must be destroyed before it.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "quant/status.h"
#include "runtime/caps.h"
#include "runtime/handles.h"
#include "runtime/instance.h"
#include "runtime/memory.h"

namespace rdrr::runtime {

class PipelineCache;
class Transfer;

struct DeviceOptions {
  std::string device_spec;          // RDRR_DEVICE syntax (index or name substring); empty = automatic
  InstanceOptions instance;
  FeatureRequirements required;
  uint64_t block_bytes = 256ull << 20;      // device-local sub-allocation block
  uint64_t host_block_bytes = 64ull << 20;  // host-visible block
  uint64_t staging_bytes = 16ull << 20;     // transfer ring (two halves in flight)
  uint64_t max_binding_bytes = 0;           // cap below maxStorageBufferRange (0 = none); tests force splits
  uint64_t fence_timeout_ns = 120'000'000'000ull;
  // Diagnostics (bench_kernels --stats): keep the driver's compiler statistics of every pipeline
  // (VK_KHR_pipeline_executable_properties; ignored where the device lacks it). Off in every real use.
  bool capture_pipeline_statistics = false;
  // Folder of the on-disk pipeline cache (pipeline_cache_file.h): loaded at creation, written back when the
  // device is destroyed if it grew. Empty: no file.
  std::filesystem::path pipeline_cache_dir;
};

// Options with device_spec from RDRR_DEVICE, validation from RDRR_VK_VALIDATION and pipeline_cache_dir from
// RDRR_PIPELINE_CACHE (a folder; "off" for none; unset: $XDG_CACHE_HOME/rdrr, else $HOME/.cache/rdrr, else none).
DeviceOptions device_options_from_env();

class Device {
 public:
  static Result<std::unique_ptr<Device>> create(const DeviceOptions& opts);
  // Uses an existing instance (e.g. one a test already created to look for devices).
  static Result<std::unique_ptr<Device>> create(std::unique_ptr<Instance> instance, const DeviceOptions& opts);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceCaps& caps() const { return caps_; }
  const DeviceOptions& options() const { return opts_; }
  const Instance& instance() const { return *instance_; }
  VkDevice vk() const { return device_.get(); }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return caps_.compute_queue_family; }

  // Largest descriptor range a kernel binding may cover (maxStorageBufferRange, or the options' cap).
  uint64_t binding_limit_bytes() const;
  // Alignment of descriptor range offsets (minStorageBufferOffsetAlignment, at least 4).
  uint64_t binding_alignment() const;

  MemoryPool& device_memory() { return *device_pool_; }
  MemoryPool& host_memory() { return *host_pool_; }
  PipelineCache& pipelines() { return *pipelines_; }

  // Device-local allocation aligned for binding anywhere (256 bytes).
  Result<Buffer> allocate(uint64_t size_bytes, std::string_view name);
  // Synchronous copies through the staging ring (see transfer.h).
  Status upload(const BufferRange& dst, std::span<const std::byte> src);
  Status download(const BufferRange& src, std::span<std::byte> dst);
  Status fill(const BufferRange& dst, uint32_t pattern);

  // kDevice when the validation layer reported errors since creation (always OK without validation).
  Status validation_status() const;

  // The pipeline cache file: bytes loaded at creation, and why a present file was ignored ("" otherwise).
  uint64_t pipeline_cache_loaded_bytes() const { return pipeline_cache_loaded_bytes_; }
  const std::string& pipeline_cache_note() const { return pipeline_cache_note_; }
  // Writes the cache to its file when it holds more than was loaded (the destructor calls it and ignores
  // errors). OK without DeviceOptions::pipeline_cache_dir. Errors: kIo, kDevice.
  Status save_pipeline_cache();

 private:
  Device() = default;
  Status init(std::unique_ptr<Instance> instance, const DeviceOptions& opts);

  DeviceOptions opts_;
  std::unique_ptr<Instance> instance_;
  DeviceCaps caps_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  UniqueDevice device_;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::unique_ptr<MemoryPool> device_pool_;
  std::unique_ptr<MemoryPool> host_pool_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::unique_ptr<Transfer> transfer_;  // last: holds a host Buffer, destroyed before the pools
  uint64_t pipeline_cache_loaded_bytes_ = 0;
  std::string pipeline_cache_note_;
};

}  // namespace rdrr::runtime
