// Device memory: a sub-allocator over big blocks (one VkDeviceMemory + one VkBuffer covering it per block),
// handing out aligned sub-ranges, so tensors never cost an allocation each. Allocations larger than the
// block size get a dedicated block, freed with them.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "runtime/handles.h"
#include "runtime/range_allocator.h"

namespace rdrr::runtime {

// A byte range of a VkBuffer: what descriptors and copies bind.
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;
  uint64_t size = 0;

  // [offset + off, offset + off + bytes); the caller keeps it inside this range.
  BufferRange sub(uint64_t off, uint64_t bytes) const { return {buffer, offset + off, bytes}; }
};

enum class MemoryKind : uint8_t {
  kDeviceLocal,  // tensors, weights, activations
  kHost,         // HOST_VISIBLE | HOST_COHERENT (preferring HOST_CACHED): staging for uploads and readback
};

class MemoryPool;

// One sub-allocation; returns its range to the pool when destroyed. The pool must outlive it.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  ~Buffer();

  const BufferRange& range() const { return range_; }
  // Host pointer to the range's first byte (kHost pools); nullptr for device-local memory.
  std::byte* mapped() const { return mapped_; }
  explicit operator bool() const { return pool_ != nullptr; }

 private:
  friend class MemoryPool;
  void release();

  MemoryPool* pool_ = nullptr;
  uint32_t block_ = 0;
  uint64_t block_offset_ = 0;
  BufferRange range_;
  std::byte* mapped_ = nullptr;
};

struct MemoryPoolStats {
  uint32_t blocks = 0;
  uint64_t reserved_bytes = 0;  // sum of block sizes
  uint64_t used_bytes = 0;      // sum of live allocations
};

class MemoryPool {
 public:
  MemoryPool(VkDevice device, VkPhysicalDevice physical, MemoryKind kind, uint64_t block_bytes,
             uint64_t max_allocation_bytes);
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;
  ~MemoryPool();

  // size_bytes > 0; alignment a power of two (use the storage-buffer offset alignment for bound ranges).
  // `name` goes into error messages: "vkAllocateMemory(weights, 402653184 bytes): VK_ERROR_OUT_OF_DEVICE_MEMORY".
  Result<Buffer> allocate(uint64_t size_bytes, uint64_t alignment, std::string_view name);

  MemoryKind kind() const { return kind_; }
  MemoryPoolStats stats() const;

 private:
  friend class Buffer;
  struct Block {
    UniqueMemory memory;  // declared first: the buffer is destroyed before its memory is freed
    UniqueBuffer buffer;
    RangeAllocator ranges;
    std::byte* mapped = nullptr;
    bool dedicated = false;
    explicit Block(uint64_t bytes) : ranges(bytes) {}
  };

  Result<uint32_t> add_block(uint64_t bytes, bool dedicated, std::string_view name);
  Result<uint32_t> choose_memory_type(uint32_t type_bits, std::string_view name) const;
  void release(uint32_t block, uint64_t offset, uint64_t size);

  VkDevice device_;
  VkPhysicalDevice physical_;
  MemoryKind kind_;
  uint64_t block_bytes_;
  uint64_t max_allocation_bytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;  // a freed dedicated block leaves a nullptr slot
};

}  // namespace rdrr::runtime
