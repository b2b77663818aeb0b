#include "runtime/memory.h"

#include <optional>
#include <utility>

#include "runtime/vk_status.h"

namespace rdrr::runtime {

Buffer::Buffer(Buffer&& o) noexcept
    : pool_(std::exchange(o.pool_, nullptr)),
      block_(o.block_),
      block_offset_(o.block_offset_),
      range_(o.range_),
      mapped_(o.mapped_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = std::exchange(o.pool_, nullptr);
    block_ = o.block_;
    block_offset_ = o.block_offset_;
    range_ = o.range_;
    mapped_ = o.mapped_;
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (pool_ != nullptr) pool_->release(block_, block_offset_, range_.size);
  pool_ = nullptr;
}

MemoryPool::MemoryPool(VkDevice device, VkPhysicalDevice physical, MemoryKind kind, uint64_t block_bytes,
                       uint64_t max_allocation_bytes)
    : device_(device),
      physical_(physical),
      kind_(kind),
      block_bytes_(block_bytes),
      max_allocation_bytes_(max_allocation_bytes) {}

MemoryPool::~MemoryPool() {
  for (auto& b : blocks_) {
    if (b && b->mapped != nullptr) vkUnmapMemory(device_, b->memory.get());
  }
}

Result<uint32_t> MemoryPool::choose_memory_type(uint32_t type_bits, std::string_view name) const {
  VkPhysicalDeviceMemoryProperties props{};
  vkGetPhysicalDeviceMemoryProperties(physical_, &props);
  const bool host = kind_ == MemoryKind::kHost;
  const VkMemoryPropertyFlags required =
      host ? VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT}
           : VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT};
  const VkMemoryPropertyFlags preferred = host ? VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_HOST_CACHED_BIT} : 0u;
  int best = -1;
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = props.memoryTypes[i].propertyFlags;
    if ((type_bits & (1u << i)) == 0 || (f & required) != required) continue;
    if (best < 0) best = static_cast<int>(i);
    if (preferred != 0 && (f & preferred) == preferred &&
        (props.memoryTypes[static_cast<uint32_t>(best)].propertyFlags & preferred) != preferred) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0) {
    return error(StatusCode::kDevice, std::string(name) + ": no memory type is " +
                                          (kind_ == MemoryKind::kDeviceLocal ? "DEVICE_LOCAL" : "HOST_VISIBLE|HOST_COHERENT") +
                                          " for buffer memoryTypeBits 0x" + std::to_string(type_bits));
  }
  return static_cast<uint32_t>(best);
}

Result<uint32_t> MemoryPool::add_block(uint64_t bytes, bool dedicated, std::string_view name) {
  const std::string site = std::string(name) + ", " + std::to_string(bytes) + " bytes";
  if (max_allocation_bytes_ != 0 && bytes > max_allocation_bytes_) {
    return error(StatusCode::kDevice, "vkAllocateMemory(" + site + "): exceeds maxMemoryAllocationSize " +
                                          std::to_string(max_allocation_bytes_));
  }
  auto block = std::make_unique<Block>(bytes);
  block->dedicated = dedicated;
  auto bi = vk_init<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer raw_buffer = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateBuffer(device_, &bi, nullptr, &raw_buffer), "vkCreateBuffer(" + site + ")");
  block->buffer = UniqueBuffer(device_, raw_buffer);
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, raw_buffer, &req);
  RDRR_ASSIGN_OR_RETURN(uint32_t type, choose_memory_type(req.memoryTypeBits, name));
  auto ai = vk_init<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  VkDeviceMemory raw_memory = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkAllocateMemory(device_, &ai, nullptr, &raw_memory), "vkAllocateMemory(" + site + ")");
  block->memory = UniqueMemory(device_, raw_memory);
  RDRR_VK_RETURN_IF_ERROR(vkBindBufferMemory(device_, raw_buffer, raw_memory, 0), "vkBindBufferMemory(" + site + ")");
  if (kind_ == MemoryKind::kHost) {
    void* p = nullptr;
    RDRR_VK_RETURN_IF_ERROR(vkMapMemory(device_, raw_memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory(" + site + ")");
    block->mapped = static_cast<std::byte*>(p);
  }
  for (uint32_t i = 0; i < blocks_.size(); ++i) {
    if (!blocks_[i]) {
      blocks_[i] = std::move(block);
      return i;
    }
  }
  blocks_.push_back(std::move(block));
  return static_cast<uint32_t>(blocks_.size() - 1);
}

Result<Buffer> MemoryPool::allocate(uint64_t size_bytes, uint64_t alignment, std::string_view name) {
  if (size_bytes == 0) return error(StatusCode::kInvalidArgument, "allocate(" + std::string(name) + "): size is 0");
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return error(StatusCode::kInvalidArgument,
                 "allocate(" + std::string(name) + "): alignment " + std::to_string(alignment) + " is not a power of two");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<uint64_t> offset;
  uint32_t block = 0;
  for (uint32_t i = 0; i < blocks_.size() && !offset; ++i) {
    if (!blocks_[i] || blocks_[i]->dedicated) continue;
    offset = blocks_[i]->ranges.allocate(size_bytes, alignment);
    block = i;
  }
  if (!offset) {
    const bool dedicated = size_bytes > block_bytes_;
    RDRR_ASSIGN_OR_RETURN(block, add_block(dedicated ? size_bytes : block_bytes_, dedicated, name));
    offset = blocks_[block]->ranges.allocate(size_bytes, alignment);
    if (!offset) return error(StatusCode::kInternal, "allocate(" + std::string(name) + "): fresh block cannot hold it");
  }
  Buffer b;
  b.pool_ = this;
  b.block_ = block;
  b.block_offset_ = *offset;
  b.range_ = BufferRange{blocks_[block]->buffer.get(), *offset, size_bytes};
  b.mapped_ = blocks_[block]->mapped != nullptr ? blocks_[block]->mapped + *offset : nullptr;
  return b;
}

void MemoryPool::release(uint32_t block, uint64_t offset, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  Block& b = *blocks_[block];
  b.ranges.free(offset, size);
  if (b.dedicated && b.ranges.used_bytes() == 0) {
    if (b.mapped != nullptr) vkUnmapMemory(device_, b.memory.get());
    blocks_[block].reset();
  }
}

MemoryPoolStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  MemoryPoolStats s;
  for (const auto& b : blocks_) {
    if (!b) continue;
    ++s.blocks;
    s.reserved_bytes += b->ranges.capacity_bytes();
    s.used_bytes += b->ranges.used_bytes();
  }
  return s;
}

}  // namespace rdrr::runtime
