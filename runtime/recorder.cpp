#include "runtime/recorder.h"

#include "runtime/device.h"
#include "runtime/vk_status.h"

namespace rdrr::runtime {
namespace {

constexpr uint32_t kDescriptorsPerSet = 8;

std::string where(const Pipeline& p, std::string_view label) {
  return "dispatch " + std::string(p.kernel().name) + " (" + std::string(label) + ")";
}

// Timestamp queries per submission: start and end (span), or start and one per timed dispatch.
uint32_t query_count(const RecorderOptions& o) { return o.span_timestamps ? 2 : o.max_timed_dispatches + 1; }

}  // namespace

Result<std::unique_ptr<Recorder>> Recorder::create(Device& device, const RecorderOptions& opts) {
  std::unique_ptr<Recorder> r(new Recorder(device, opts));
  RDRR_RETURN_IF_ERROR(r->init());
  return r;
}

Recorder::~Recorder() {
  if (pending_) (void)wait();  // the command buffer may not be freed while the device runs it
  if (recording_) vkEndCommandBuffer(cmd_.get());
}

Status Recorder::init() {
  const VkDevice vk = device_.vk();
  auto pi = vk_init<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = device_.queue_family();
  VkCommandPool pool = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateCommandPool(vk, &pi, nullptr, &pool), "vkCreateCommandPool(recorder)");
  pool_ = UniqueCommandPool(vk, pool);
  auto ai = vk_init<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(vk, &ai, &cb), "vkAllocateCommandBuffers(recorder)");
  cmd_ = UniqueCommandBuffer(vk, pool, cb);
  auto fi = vk_init<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  VkFence f = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateFence(vk, &fi, nullptr, &f), "vkCreateFence(recorder)");
  fence_ = UniqueFence(vk, f);
  if (opts_.timestamps && opts_.span_timestamps) {
    return error(StatusCode::kInvalidArgument, "recorder: timestamps and span_timestamps are exclusive");
  }
  if (opts_.timestamps || opts_.span_timestamps) {
    if (device_.caps().timestamp_valid_bits == 0) {
      return error(StatusCode::kUnsupported, "timestamps requested but queue family " +
                                                 std::to_string(device_.queue_family()) + " has timestampValidBits 0");
    }
    auto qi = vk_init<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = query_count(opts_);
    VkQueryPool qp = VK_NULL_HANDLE;
    RDRR_VK_RETURN_IF_ERROR(vkCreateQueryPool(vk, &qi, nullptr, &qp), "vkCreateQueryPool(timestamps)");
    queries_ = UniqueQueryPool(vk, qp);
  }
  return Status::Ok();
}

void Recorder::reset_state() {
  recording_ = false;
  dispatches_ = 0;
  barriers_ = 0;
  hazards_.barrier();
  labels_.clear();
  noted_uses_.clear();
}

Status Recorder::begin_if_needed() {
  if (recording_) return Status::Ok();
  RDRR_VK_RETURN_IF_ERROR(vkResetCommandBuffer(cmd_.get(), 0), "vkResetCommandBuffer(recorder)");
  if (set_pools_.size() > 1) set_pools_.resize(1);
  if (!set_pools_.empty()) {
    RDRR_VK_RETURN_IF_ERROR(vkResetDescriptorPool(device_.vk(), set_pools_[0].get(), 0), "vkResetDescriptorPool");
  }
  sets_in_last_pool_ = 0;
  auto bi = vk_init<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  RDRR_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cmd_.get(), &bi), "vkBeginCommandBuffer(recorder)");
  recording_ = true;
  if (queries_) {
    vkCmdResetQueryPool(cmd_.get(), queries_.get(), 0, query_count(opts_));
    vkCmdWriteTimestamp(cmd_.get(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), 0);
  }
  return Status::Ok();
}

Result<VkDescriptorSet> Recorder::allocate_set(VkDescriptorSetLayout layout) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (set_pools_.empty() || sets_in_last_pool_ >= opts_.sets_per_pool || attempt == 1) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, opts_.sets_per_pool * kDescriptorsPerSet};
      auto ci = vk_init<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      ci.maxSets = opts_.sets_per_pool;
      ci.poolSizeCount = 1;
      ci.pPoolSizes = &size;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      RDRR_VK_RETURN_IF_ERROR(vkCreateDescriptorPool(device_.vk(), &ci, nullptr, &pool), "vkCreateDescriptorPool");
      set_pools_.emplace_back(device_.vk(), pool);
      sets_in_last_pool_ = 0;
    }
    auto ai = vk_init<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    ai.descriptorPool = set_pools_.back().get();
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    const VkResult r = vkAllocateDescriptorSets(device_.vk(), &ai, &set);
    if (r == VK_SUCCESS) {
      ++sets_in_last_pool_;
      return set;
    }
    if ((r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) || attempt == 1) {
      return vk_check(r, "vkAllocateDescriptorSets");
    }
  }
  return error(StatusCode::kInternal, "allocate_set: unreachable");
}

Status Recorder::dispatch(const Pipeline& p, std::span<const BufferRange> bindings, std::span<const std::byte> push,
                          std::array<uint32_t, 3> groups, std::string_view label) {
  const kernels::KernelInfo& k = p.kernel();
  const DeviceCaps& caps = device_.caps();
  if (pending_) {
    return error(StatusCode::kInternal, where(p, label) + ": the recorder's last submission is pending (wait first)");
  }
  if (opts_.allowed_kernels != nullptr && opts_.allowed_kernels->count(k.name) == 0) {
    return error(StatusCode::kIntegrity, where(p, label) + ": kernel " + std::string(k.name) +
                                             " is not pinned by the execution graph (not in its kernels map)");
  }
  if (bindings.size() != k.bindings.size()) {
    return error(StatusCode::kInvalidArgument, where(p, label) + ": " + std::to_string(bindings.size()) +
                                                   " bindings, kernel has " + std::to_string(k.bindings.size()));
  }
  if (push.size() != k.push_constant_bytes) {
    return error(StatusCode::kInvalidArgument, where(p, label) + ": push constants of " + std::to_string(push.size()) +
                                                   " bytes, kernel takes " + std::to_string(k.push_constant_bytes));
  }
  for (int i = 0; i < 3; ++i) {
    if (groups[i] == 0 || groups[i] > caps.max_workgroup_count[i]) {
      return error(StatusCode::kInvalidArgument, where(p, label) + ": group count[" + std::to_string(i) + "] = " +
                                                     std::to_string(groups[i]) + " outside 1.." +
                                                     std::to_string(caps.max_workgroup_count[i]));
    }
  }
  std::vector<MemAccess> accesses;
  std::vector<VkDescriptorBufferInfo> infos;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const BufferRange& r = bindings[i];
    const std::string b = where(p, label) + ": binding " + std::to_string(i) + " '" + std::string(k.bindings[i].name) + "'";
    if (r.buffer == VK_NULL_HANDLE || r.size == 0) return error(StatusCode::kInvalidArgument, b + ": empty range");
    if (r.offset % caps.min_storage_buffer_offset_alignment != 0) {
      return error(StatusCode::kInvalidArgument, b + ": offset " + std::to_string(r.offset) +
                                                     " is not a multiple of minStorageBufferOffsetAlignment " +
                                                     std::to_string(caps.min_storage_buffer_offset_alignment));
    }
    if (r.size > caps.max_storage_buffer_range) {
      return error(StatusCode::kInvalidArgument, b + ": range of " + std::to_string(r.size) +
                                                     " bytes > maxStorageBufferRange " +
                                                     std::to_string(caps.max_storage_buffer_range));
    }
    const bool write = k.bindings[i].access != kernels::Access::kRead;
    accesses.push_back({reinterpret_cast<uint64_t>(r.buffer), r.offset, r.offset + r.size, write});
    if (k.bindings[i].access == kernels::Access::kReadWrite) accesses.push_back({accesses.back().buffer, r.offset, r.offset + r.size, false});
    infos.push_back({r.buffer, r.offset, r.size});
  }
  RDRR_RETURN_IF_ERROR(begin_if_needed());
  if (hazards_.conflicts(accesses)) {
    auto mb = vk_init<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cmd_.get(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                         0, nullptr, 0, nullptr);
    ++barriers_;
    hazards_.barrier();
  }
  hazards_.add(accesses);

  RDRR_ASSIGN_OR_RETURN(VkDescriptorSet set, allocate_set(p.set_layout()));
  std::vector<VkWriteDescriptorSet> writes;
  for (uint32_t i = 0; i < infos.size(); ++i) {
    auto w = vk_init<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    w.dstSet = set;
    w.dstBinding = k.bindings[i].binding;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &infos[i];
    writes.push_back(w);
  }
  vkUpdateDescriptorSets(device_.vk(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  vkCmdBindPipeline(cmd_.get(), VK_PIPELINE_BIND_POINT_COMPUTE, p.vk());
  vkCmdBindDescriptorSets(cmd_.get(), VK_PIPELINE_BIND_POINT_COMPUTE, p.layout(), 0, 1, &set, 0, nullptr);
  if (!push.empty()) {
    vkCmdPushConstants(cmd_.get(), p.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push.size()),
                       push.data());
  }
  vkCmdDispatch(cmd_.get(), groups[0], groups[1], groups[2]);
  ++dispatches_;
  if (queries_ && opts_.timestamps && dispatches_ <= opts_.max_timed_dispatches) {
    vkCmdWriteTimestamp(cmd_.get(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), dispatches_);
  }
  labels_.emplace_back(label);
  return Status::Ok();
}

Result<SubmitResult> Recorder::submit_and_wait() {
  RDRR_RETURN_IF_ERROR(submit());
  return wait();
}

Status Recorder::submit() {
  if (pending_) return error(StatusCode::kInternal, "recorder: submit while a submission is pending (wait first)");
  if (!recording_) return Status::Ok();
  Pending& pd = pending_.emplace();
  pd.out.dispatches = dispatches_;
  pd.out.barriers = barriers_;
  pd.labels = std::move(labels_);
  pd.timed = dispatches_ < opts_.max_timed_dispatches ? dispatches_ : opts_.max_timed_dispatches;
  // Make the results visible to later copies and host reads (and later submissions' dispatches).
  auto mb = vk_init<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  // Write bits too: the next submission (no leading barrier) may overwrite what this one wrote.
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT |
                     VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd_.get(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
  if (queries_ && opts_.span_timestamps) {
    vkCmdWriteTimestamp(cmd_.get(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), 1);
  }
  reset_state();
  pd.site = std::to_string(pd.out.dispatches) + " dispatches";
  Status st = vk_check(vkEndCommandBuffer(cmd_.get()), "vkEndCommandBuffer(recorder)");
  VkFence f = fence_.get();
  if (st.ok()) st = vk_check(vkResetFences(device_.vk(), 1, &f), "vkResetFences(recorder)");
  VkCommandBuffer cb = cmd_.get();
  auto si = vk_init<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  if (st.ok()) st = vk_check(vkQueueSubmit(device_.queue(), 1, &si, f), "vkQueueSubmit(" + pd.site + ")");
  if (!st.ok()) pending_.reset();
  return st;
}

Result<SubmitResult> Recorder::wait() {
  if (!pending_) return SubmitResult{};
  Pending pd = std::move(*pending_);
  pending_.reset();
  SubmitResult out = pd.out;
  const std::vector<std::string>& labels = pd.labels;
  const uint32_t timed = pd.timed;
  const std::string& site = pd.site;
  VkFence f = fence_.get();
  const VkResult r = vkWaitForFences(device_.vk(), 1, &f, VK_TRUE, device_.options().fence_timeout_ns);
  if (r == VK_TIMEOUT) {
    return error(StatusCode::kDevice, "vkWaitForFences(" + site + "): VK_TIMEOUT after " +
                                          std::to_string(device_.options().fence_timeout_ns / 1000000) + " ms");
  }
  RDRR_RETURN_IF_ERROR(vk_check(r, "vkWaitForFences(" + site + ")"));
  const uint32_t n_ts = opts_.span_timestamps ? 2 : timed + 1;
  if (queries_ && n_ts > 1) {
    std::vector<uint64_t> ts(n_ts);
    RDRR_VK_RETURN_IF_ERROR(
        vkGetQueryPoolResults(device_.vk(), queries_.get(), 0, n_ts, ts.size() * sizeof(uint64_t), ts.data(),
                              sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults(timestamps)");
    const uint32_t bits = device_.caps().timestamp_valid_bits;
    const uint64_t mask = bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1);
    auto ms_between = [&](uint64_t from, uint64_t to) {
      return static_cast<double>(((to & mask) - (from & mask)) & mask) * device_.caps().timestamp_period_ns / 1e6;
    };
    if (opts_.span_timestamps) {
      out.span_ms = ms_between(ts[0], ts[1]);
    } else {
      for (uint32_t i = 0; i < timed; ++i) out.timings.push_back({labels[i], ms_between(ts[i], ts[i + 1])});
    }
  }
  return out;
}

}  // namespace rdrr::runtime
