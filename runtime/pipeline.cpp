#include "runtime/pipeline.h"

#include "runtime/device.h"
#include "runtime/vk_status.h"

namespace rdrr::runtime {

uint32_t Pipeline::spec(uint32_t id) const {
  for (const SpecValue& s : spec_) {
    if (s.id == id) return s.value;
  }
  return 0;
}

PipelineCache::PipelineCache(Device& device, std::span<const std::byte> initial_data)
    : device_(device), initial_data_(initial_data.begin(), initial_data.end()) {}

Status PipelineCache::init() {
  auto ci = vk_init<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  ci.initialDataSize = initial_data_.size();
  ci.pInitialData = initial_data_.empty() ? nullptr : initial_data_.data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreatePipelineCache(device_.vk(), &ci, nullptr, &cache), "vkCreatePipelineCache");
  cache_ = UniquePipelineCache(device_.vk(), cache);
  initial_data_.clear();
  return Status::Ok();
}

Result<const Pipeline*> PipelineCache::get(std::string_view kernel_name, std::span<const SpecValue> overrides) {
  const kernels::KernelInfo* k = kernels::find_kernel(kernel_name);
  if (k == nullptr) return error(StatusCode::kNotFound, "no kernel named '" + std::string(kernel_name) + "'");
  return get(*k, overrides);
}

Result<const Pipeline*> PipelineCache::get(const kernels::KernelInfo& kernel, std::span<const SpecValue> overrides) {
  std::vector<SpecValue> spec;
  for (const kernels::SpecInfo& s : kernel.spec) spec.push_back({s.id, s.default_value});
  for (const SpecValue& o : overrides) {
    bool found = false;
    for (SpecValue& s : spec) {
      if (s.id == o.id) {
        s.value = o.value;
        found = true;
      }
    }
    if (!found) {
      return error(StatusCode::kInvalidArgument, "kernel " + std::string(kernel.name) +
                                                     ": no specialization constant with id " + std::to_string(o.id));
    }
  }
  std::string key(kernel.name);
  for (const SpecValue& s : spec) {
    key += '|';
    key += std::to_string(s.id);
    key += '=';
    key += std::to_string(s.value);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return static_cast<const Pipeline*>(it->second.get());
  Result<std::unique_ptr<Pipeline>> built = build(kernel, std::move(spec));
  if (!built.ok()) return built.status().context("pipeline " + key);
  const Pipeline* p = built.value().get();
  pipelines_.emplace(std::move(key), std::move(built).value());
  return p;
}

Result<std::unique_ptr<Pipeline>> PipelineCache::build(const kernels::KernelInfo& kernel, std::vector<SpecValue> spec) {
  const VkDevice vk = device_.vk();
  const DeviceCaps& caps = device_.caps();
  const kernels::SpirvBlob* blob = kernels::kernel_spirv(kernel);
  if (blob == nullptr) return error(StatusCode::kInternal, "no embedded SPIR-V (kernels/CMakeLists.txt)");
  auto p = std::make_unique<Pipeline>();
  p->kernel_ = &kernel;
  p->spec_ = spec;
  for (const kernels::SpecInfo& s : kernel.spec) {
    const uint32_t v = p->spec(s.id);
    if (s.role == kernels::SpecRole::kLocalSizeX) p->local_size_[0] = v;
    if (s.role == kernels::SpecRole::kLocalSizeY) p->local_size_[1] = v;
    if (s.role == kernels::SpecRole::kLocalSizeZ) p->local_size_[2] = v;
  }
  const auto& ls = p->local_size_;
  const uint64_t invocations = uint64_t{ls[0]} * ls[1] * ls[2];
  for (int i = 0; i < 3; ++i) {
    if (ls[i] == 0 || ls[i] > caps.max_workgroup_size[i]) {
      return error(StatusCode::kUnsupported, "local size[" + std::to_string(i) + "] = " + std::to_string(ls[i]) +
                                                 " outside 1.." + std::to_string(caps.max_workgroup_size[i]));
    }
  }
  if (invocations > caps.max_workgroup_invocations) {
    return error(StatusCode::kUnsupported, "workgroup of " + std::to_string(invocations) +
                                               " invocations > maxComputeWorkGroupInvocations " +
                                               std::to_string(caps.max_workgroup_invocations));
  }

  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (const kernels::BindingInfo& b : kernel.bindings) {
    bindings.push_back({b.binding, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  }
  auto dli = vk_init<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  dli.bindingCount = static_cast<uint32_t>(bindings.size());
  dli.pBindings = bindings.data();
  VkDescriptorSetLayout dsl = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateDescriptorSetLayout(vk, &dli, nullptr, &dsl), "vkCreateDescriptorSetLayout");
  p->set_layout_ = UniqueDescriptorSetLayout(vk, dsl);

  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel.push_constant_bytes};
  auto pli = vk_init<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &dsl;
  pli.pushConstantRangeCount = kernel.push_constant_bytes > 0 ? 1 : 0;
  pli.pPushConstantRanges = &pcr;
  VkPipelineLayout pl = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreatePipelineLayout(vk, &pli, nullptr, &pl), "vkCreatePipelineLayout");
  p->layout_ = UniquePipelineLayout(vk, pl);

  auto smi = vk_init<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  smi.codeSize = blob->words.size() * sizeof(uint32_t);
  smi.pCode = blob->words.data();
  VkShaderModule sm = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateShaderModule(vk, &smi, nullptr, &sm), "vkCreateShaderModule");
  UniqueShaderModule module(vk, sm);  // only needed until the pipeline exists

  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> values;
  for (const SpecValue& s : spec) {
    entries.push_back({s.id, static_cast<uint32_t>(values.size() * sizeof(uint32_t)), sizeof(uint32_t)});
    values.push_back(s.value);
  }
  VkSpecializationInfo si{};
  si.mapEntryCount = static_cast<uint32_t>(entries.size());
  si.pMapEntries = entries.data();
  si.dataSize = values.size() * sizeof(uint32_t);
  si.pData = values.data();
  auto ci = vk_init<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  ci.stage = vk_init<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = sm;
  const std::string entry(kernel.entry);
  ci.stage.pName = entry.c_str();
  ci.stage.pSpecializationInfo = entries.empty() ? nullptr : &si;
  ci.layout = pl;
  if (device_.options().capture_pipeline_statistics) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline pipe = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateComputePipelines(vk, cache_.get(), 1, &ci, nullptr, &pipe), "vkCreateComputePipelines");
  p->pipeline_ = UniquePipeline(vk, pipe);
  return p;
}

Result<std::vector<std::byte>> PipelineCache::serialize() const {
  size_t n = 0;
  RDRR_VK_RETURN_IF_ERROR(vkGetPipelineCacheData(device_.vk(), cache_.get(), &n, nullptr), "vkGetPipelineCacheData(size)");
  std::vector<std::byte> data(n);
  RDRR_VK_RETURN_IF_ERROR(vkGetPipelineCacheData(device_.vk(), cache_.get(), &n, data.data()), "vkGetPipelineCacheData");
  data.resize(n);
  return data;
}

std::vector<std::pair<std::string, const Pipeline*>> PipelineCache::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, const Pipeline*>> out;
  for (const auto& [key, p] : pipelines_) out.emplace_back(key, p.get());
  return out;
}

Result<std::string> pipeline_statistics(const Device& device, const Pipeline& p) {
  if (!device.options().capture_pipeline_statistics) {
    return error(StatusCode::kUnsupported, "pipeline statistics not captured (VK_KHR_pipeline_executable_properties)");
  }
  const VkDevice vk = device.vk();
  auto get_props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(vk, "vkGetPipelineExecutablePropertiesKHR"));
  auto get_stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(vk, "vkGetPipelineExecutableStatisticsKHR"));
  if (get_props == nullptr || get_stats == nullptr) return error(StatusCode::kUnsupported, "no pipeline executable entry points");
  auto info = vk_init<VkPipelineInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR);
  info.pipeline = p.vk();
  uint32_t n_exe = 0;
  RDRR_VK_RETURN_IF_ERROR(get_props(vk, &info, &n_exe, nullptr), "vkGetPipelineExecutablePropertiesKHR");
  std::string out;
  for (uint32_t e = 0; e < n_exe; ++e) {
    auto ei = vk_init<VkPipelineExecutableInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR);
    ei.pipeline = p.vk();
    ei.executableIndex = e;
    uint32_t n = 0;
    RDRR_VK_RETURN_IF_ERROR(get_stats(vk, &ei, &n, nullptr), "vkGetPipelineExecutableStatisticsKHR(count)");
    std::vector<VkPipelineExecutableStatisticKHR> st(n, vk_init<VkPipelineExecutableStatisticKHR>(
                                                            VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR));
    RDRR_VK_RETURN_IF_ERROR(get_stats(vk, &ei, &n, st.data()), "vkGetPipelineExecutableStatisticsKHR");
    for (uint32_t i = 0; i < n; ++i) {
      if (!out.empty()) out += ", ";
      out += st[i].name;
      out += '=';
      switch (st[i].format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: out += st[i].value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: out += std::to_string(st[i].value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: out += std::to_string(st[i].value.u64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: out += std::to_string(st[i].value.f64); break;
        default: out += '?';
      }
    }
  }
  return out;
}

size_t PipelineCache::pipeline_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pipelines_.size();
}

}  // namespace rdrr::runtime
