#include "bench/bench_vk.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/handles.h"
#include "runtime/vk_status.h"

namespace rdrr::bench {

using runtime::vk_init;

void Table::set_probes(std::vector<Probe> probes) {
  probes_ = std::move(probes);
  ref_gbps_ = 0.0;
  for (const Probe& p : probes_) ref_gbps_ = std::max(ref_gbps_, p.gbps);
}

bool Table::selected(const Row& r, const std::string& filter) const {
  if (filter.empty()) return true;
  const std::string key = r.op + " " + r.dtype + " " + r.layout + " " + r.shape + " " + r.variant;
  return key.find(filter) != std::string::npos;
}

void Table::add(Row r, const Timing& t) {
  r.us = t.gpu_us;
  r.batch_us = t.batch_us;
  rows_.push_back(std::move(r));
}

void Table::fail(Row r, std::string error) {
  r.error = std::move(error);
  std::fprintf(stderr, "%s %s %s %s: %s\n", r.op.c_str(), r.dtype.c_str(), r.layout.c_str(), r.shape.c_str(),
               r.error.c_str());
  rows_.push_back(std::move(r));
  ++failures_;
}

namespace {
double gbps(const Row& r) { return r.us > 0 ? static_cast<double>(r.bytes) / (r.us * 1e3) : 0.0; }
double batch_gbps(const Row& r) { return r.batch_us > 0 ? static_cast<double>(r.bytes) / (r.batch_us * 1e3) : 0.0; }
}  // namespace

void Table::print() const {
  std::printf("\ndevice: %s\n", device_.c_str());
  for (const Probe& p : probes_) {
    std::printf("bandwidth probe %-40s %8.0f MiB %8.1f GB/s\n", p.name.c_str(), static_cast<double>(p.bytes) / (1 << 20),
                p.gbps);
  }
  std::printf("%%bw = GB/s / %.1f GB/s (best probe)\n", ref_gbps_);
  std::printf("us / GB/s / %%bw: GPU timestamps around each call; batch_us / %%bw_b: GPU span per call of a batch "
              "without per-dispatch timestamps\n");
  std::printf("%-9s %-5s %-11s %-11s %-14s %8s %8s %8s %6s %9s %6s\n", "op", "dtype", "layout", "shape", "variant",
              "MiB", "us", "GB/s", "%bw", "batch_us", "%bw_b");
  for (const Row& r : rows_) {
    if (!r.error.empty()) {
      std::printf("%-9s %-5s %-11s %-11s %-14s  ERROR %s\n", r.op.c_str(), r.dtype.c_str(), r.layout.c_str(),
                  r.shape.c_str(), r.variant.c_str(), r.error.c_str());
      continue;
    }
    const double g = gbps(r);
    const double pct = ref_gbps_ > 0 ? 100.0 * g / ref_gbps_ : 0.0;
    const double pct_b = ref_gbps_ > 0 ? 100.0 * batch_gbps(r) / ref_gbps_ : 0.0;
    std::printf("%-9s %-5s %-11s %-11s %-14s %8.2f %8.2f %8.1f %5.1f%% %9.2f %5.1f%%\n", r.op.c_str(), r.dtype.c_str(),
                r.layout.c_str(), r.shape.c_str(), r.variant.c_str(), static_cast<double>(r.bytes) / (1 << 20), r.us,
                g, pct, r.batch_us, pct_b);
  }
}

Status Table::write_json(const std::string& path) const {
  nlohmann::json j;
  j["device"] = device_;
  j["reference_gbps"] = ref_gbps_;
  nlohmann::json probes = nlohmann::json::array();
  for (const Probe& p : probes_) probes.push_back({{"name", p.name}, {"bytes", p.bytes}, {"gbps", p.gbps}});
  j["probes"] = std::move(probes);
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& r : rows_) {
    nlohmann::json o{{"op", r.op},       {"dtype", r.dtype},   {"layout", r.layout}, {"shape", r.shape},
                     {"variant", r.variant}, {"bytes", r.bytes}, {"copies", r.copies}};
    if (r.error.empty()) {
      o["us"] = r.us;
      o["gbps"] = gbps(r);
      o["pct_bw"] = ref_gbps_ > 0 ? 100.0 * gbps(r) / ref_gbps_ : 0.0;
      o["batch_us"] = r.batch_us;
      o["batch_gbps"] = batch_gbps(r);
    } else {
      o["error"] = r.error;
    }
    rows.push_back(std::move(o));
  }
  j["rows"] = std::move(rows);
  std::ofstream f(path);
  f << j.dump(1) << "\n";
  if (!f) return error(StatusCode::kIo, "bench json " + path + ": write failed");
  return Status::Ok();
}

Result<double> measure_copy_gbps(runtime::Device& dev, uint64_t bytes, int iters) {
  RDRR_ASSIGN_OR_RETURN(runtime::Buffer src, dev.allocate(bytes, "copy src"));
  RDRR_ASSIGN_OR_RETURN(runtime::Buffer dst, dev.allocate(bytes, "copy dst"));
  RDRR_RETURN_IF_ERROR(dev.fill(src.range(), 0x3c003c00u));
  const VkDevice vk = dev.vk();
  auto pi = vk_init<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = dev.queue_family();
  VkCommandPool pool_h = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateCommandPool(vk, &pi, nullptr, &pool_h), "vkCreateCommandPool(copy probe)");
  runtime::UniqueCommandPool pool(vk, pool_h);
  auto ai = vk_init<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ai.commandPool = pool.get();
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;  // freed with the pool
  RDRR_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(vk, &ai, &cmd), "vkAllocateCommandBuffers(copy probe)");
  auto qi = vk_init<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  VkQueryPool qp_h = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateQueryPool(vk, &qi, nullptr, &qp_h), "vkCreateQueryPool(copy probe)");
  runtime::UniqueQueryPool qp(vk, qp_h);
  auto fi = vk_init<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  VkFence fence_h = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateFence(vk, &fi, nullptr, &fence_h), "vkCreateFence(copy probe)");
  runtime::UniqueFence fence(vk, fence_h);

  std::vector<double> gbps;
  for (int it = -1; it < iters; ++it) {
    RDRR_VK_RETURN_IF_ERROR(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer(copy probe)");
    auto bi = vk_init<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    RDRR_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer(copy probe)");
    vkCmdResetQueryPool(cmd, qp.get(), 0, 2);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp.get(), 0);
    const VkBufferCopy region{src.range().offset, dst.range().offset, bytes};
    vkCmdCopyBuffer(cmd, src.range().buffer, dst.range().buffer, 1, &region);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp.get(), 1);
    RDRR_VK_RETURN_IF_ERROR(vkEndCommandBuffer(cmd), "vkEndCommandBuffer(copy probe)");
    VkFence f = fence.get();
    RDRR_VK_RETURN_IF_ERROR(vkResetFences(vk, 1, &f), "vkResetFences(copy probe)");
    auto si = vk_init<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    RDRR_VK_RETURN_IF_ERROR(vkQueueSubmit(dev.queue(), 1, &si, f), "vkQueueSubmit(copy probe)");
    RDRR_VK_RETURN_IF_ERROR(vkWaitForFences(vk, 1, &f, VK_TRUE, dev.options().fence_timeout_ns),
                            "vkWaitForFences(copy probe)");
    uint64_t ts[2] = {0, 0};
    RDRR_VK_RETURN_IF_ERROR(vkGetQueryPoolResults(vk, qp.get(), 0, 2, sizeof(ts), ts, sizeof(uint64_t),
                                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                            "vkGetQueryPoolResults(copy probe)");
    const double ns = static_cast<double>(ts[1] - ts[0]) * dev.caps().timestamp_period_ns;
    if (it >= 0 && ns > 0) gbps.push_back(2.0 * static_cast<double>(bytes) / ns);
  }
  if (gbps.empty()) return error(StatusCode::kDevice, "copy probe: no valid timestamps");
  std::sort(gbps.begin(), gbps.end());
  return gbps[gbps.size() / 2];
}

}  // namespace rdrr::bench
