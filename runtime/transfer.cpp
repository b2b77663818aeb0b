#include "runtime/transfer.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/device.h"
#include "runtime/vk_status.h"

namespace rdrr::runtime {
namespace {

void global_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  auto mb = vk_init<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = src_access;
  mb.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

std::string range_text(const BufferRange& r) {
  return "offset " + std::to_string(r.offset) + ", " + std::to_string(r.size) + " bytes";
}

}  // namespace

Result<std::unique_ptr<Transfer>> Transfer::create(Device& device, uint64_t staging_bytes) {
  if (staging_bytes < 2 * 4096) {
    return error(StatusCode::kInvalidArgument, "staging ring of " + std::to_string(staging_bytes) + " bytes < 8192");
  }
  std::unique_ptr<Transfer> t(new Transfer(device));
  const VkDevice vk = device.vk();
  auto pi = vk_init<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = device.queue_family();
  VkCommandPool pool = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateCommandPool(vk, &pi, nullptr, &pool), "vkCreateCommandPool(transfer)");
  t->pool_ = UniqueCommandPool(vk, pool);
  t->half_bytes_ = (staging_bytes / 2) & ~uint64_t{255};
  RDRR_ASSIGN_OR_RETURN(t->staging_, device.host_memory().allocate(2 * t->half_bytes_, 256, "staging ring"));
  for (size_t i = 0; i < t->slots_.size(); ++i) {
    Slot& s = t->slots_[i];
    auto ai = vk_init<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    RDRR_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(vk, &ai, &cb), "vkAllocateCommandBuffers(transfer)");
    s.cmd = UniqueCommandBuffer(vk, pool, cb);
    auto fi = vk_init<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    VkFence f = VK_NULL_HANDLE;
    RDRR_VK_RETURN_IF_ERROR(vkCreateFence(vk, &fi, nullptr, &f), "vkCreateFence(transfer)");
    s.fence = UniqueFence(vk, f);
    s.staging_offset = i * t->half_bytes_;
  }
  return t;
}

Transfer::~Transfer() {
  for (Slot& s : slots_) {
    if (s.pending) (void)wait(s, "~Transfer");
  }
}

Status Transfer::begin(Slot& s) {
  RDRR_VK_RETURN_IF_ERROR(vkResetCommandBuffer(s.cmd.get(), 0), "vkResetCommandBuffer(transfer)");
  auto bi = vk_init<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  RDRR_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(s.cmd.get(), &bi), "vkBeginCommandBuffer(transfer)");
  // Earlier dispatches' writes -> this copy.
  global_barrier(s.cmd.get(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  return Status::Ok();
}

Status Transfer::submit(Slot& s, std::string_view what) {
  // This copy -> later dispatches, copies and host reads.
  global_barrier(s.cmd.get(), VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT);
  const std::string site(what);
  RDRR_VK_RETURN_IF_ERROR(vkEndCommandBuffer(s.cmd.get()), "vkEndCommandBuffer(" + site + ")");
  VkFence fence = s.fence.get();
  RDRR_VK_RETURN_IF_ERROR(vkResetFences(device_.vk(), 1, &fence), "vkResetFences(" + site + ")");
  VkCommandBuffer cb = s.cmd.get();
  auto si = vk_init<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  RDRR_VK_RETURN_IF_ERROR(vkQueueSubmit(device_.queue(), 1, &si, fence), "vkQueueSubmit(" + site + ")");
  s.pending = true;
  return Status::Ok();
}

Status Transfer::wait(Slot& s, std::string_view what) {
  if (!s.pending) return Status::Ok();
  VkFence f = s.fence.get();
  const VkResult r = vkWaitForFences(device_.vk(), 1, &f, VK_TRUE, device_.options().fence_timeout_ns);
  s.pending = false;
  if (r == VK_TIMEOUT) {
    return error(StatusCode::kDevice, "vkWaitForFences(" + std::string(what) + "): VK_TIMEOUT after " +
                                          std::to_string(device_.options().fence_timeout_ns / 1000000) + " ms");
  }
  RDRR_RETURN_IF_ERROR(vk_check(r, "vkWaitForFences(" + std::string(what) + ")"));
  if (s.drain_to != nullptr) {
    std::memcpy(s.drain_to, staging_.mapped() + s.staging_offset, s.drain_bytes);
    s.drain_to = nullptr;
    s.drain_bytes = 0;
  }
  return Status::Ok();
}

Status Transfer::upload(const BufferRange& dst, std::span<const std::byte> src) {
  if (src.size() != dst.size) {
    return error(StatusCode::kInvalidArgument, "upload: " + std::to_string(src.size()) + " host bytes into a range of " +
                                                   std::to_string(dst.size) + " bytes");
  }
  uint64_t done = 0;
  for (size_t i = 0; done < src.size(); ++i) {
    Slot& s = slots_[i % 2];
    RDRR_RETURN_IF_ERROR(wait(s, "upload"));
    const uint64_t n = std::min<uint64_t>(half_bytes_, src.size() - done);
    std::memcpy(staging_.mapped() + s.staging_offset, src.data() + done, n);
    RDRR_RETURN_IF_ERROR(begin(s));
    VkBufferCopy region{staging_.range().offset + s.staging_offset, dst.offset + done, n};
    vkCmdCopyBuffer(s.cmd.get(), staging_.range().buffer, dst.buffer, 1, &region);
    RDRR_RETURN_IF_ERROR(submit(s, "upload " + range_text(dst)));
    done += n;
  }
  for (Slot& s : slots_) RDRR_RETURN_IF_ERROR(wait(s, "upload " + range_text(dst)));
  return Status::Ok();
}

Status Transfer::download(const BufferRange& src, std::span<std::byte> dst) {
  if (dst.size() != src.size) {
    return error(StatusCode::kInvalidArgument, "download: range of " + std::to_string(src.size) + " bytes into " +
                                                   std::to_string(dst.size()) + " host bytes");
  }
  uint64_t done = 0;
  for (size_t i = 0; done < dst.size(); ++i) {
    Slot& s = slots_[i % 2];
    RDRR_RETURN_IF_ERROR(wait(s, "download " + range_text(src)));
    const uint64_t n = std::min<uint64_t>(half_bytes_, dst.size() - done);
    RDRR_RETURN_IF_ERROR(begin(s));
    VkBufferCopy region{src.offset + done, staging_.range().offset + s.staging_offset, n};
    vkCmdCopyBuffer(s.cmd.get(), src.buffer, staging_.range().buffer, 1, &region);
    s.drain_to = dst.data() + done;
    s.drain_bytes = n;
    RDRR_RETURN_IF_ERROR(submit(s, "download " + range_text(src)));
    done += n;
  }
  for (Slot& s : slots_) RDRR_RETURN_IF_ERROR(wait(s, "download " + range_text(src)));
  return Status::Ok();
}

Status Transfer::fill(const BufferRange& dst, uint32_t pattern) {
  if (dst.offset % 4 != 0 || dst.size % 4 != 0 || dst.size == 0) {
    return error(StatusCode::kInvalidArgument, "fill: " + range_text(dst) + " is not a non-empty multiple of 4 bytes");
  }
  Slot& s = slots_[0];
  RDRR_RETURN_IF_ERROR(wait(s, "fill"));
  RDRR_RETURN_IF_ERROR(begin(s));
  vkCmdFillBuffer(s.cmd.get(), dst.buffer, dst.offset, dst.size, pattern);
  RDRR_RETURN_IF_ERROR(submit(s, "fill " + range_text(dst)));
  return wait(s, "fill " + range_text(dst));
}

}  // namespace rdrr::runtime
