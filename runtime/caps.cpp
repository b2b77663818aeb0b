#include "runtime/caps.h"

namespace rdrr::runtime {
namespace {

std::string subgroup_ops_string(VkSubgroupFeatureFlags ops) {
  static constexpr std::pair<VkSubgroupFeatureFlagBits, const char*> kNames[] = {
      {VK_SUBGROUP_FEATURE_BASIC_BIT, "basic"},         {VK_SUBGROUP_FEATURE_VOTE_BIT, "vote"},
      {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "arithmetic"}, {VK_SUBGROUP_FEATURE_BALLOT_BIT, "ballot"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "shuffle"},     {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "shuffle_relative"},
      {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered"}, {VK_SUBGROUP_FEATURE_QUAD_BIT, "quad"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((ops & bit) == 0) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

Status check_requirements(const DeviceCaps& caps, const FeatureRequirements& req) {
  const std::string who = "device '" + caps.desc.name + "': ";
  auto missing = [&](std::string_view feature) {
    return error(StatusCode::kUnsupported, who + "missing required feature " + std::string(feature));
  };
  if (req.storage_buffer_16bit && !caps.storage_buffer_16bit) return missing("storageBuffer16BitAccess");
  if (req.storage_buffer_8bit && !caps.storage_buffer_8bit) return missing("storageBuffer8BitAccess");
  if (req.shader_float16 && !caps.shader_float16) return missing("shaderFloat16");
  if (req.integer_dot_product && !caps.integer_dot_product) return missing("shaderIntegerDotProduct");
  if (req.subgroup_arithmetic) {
    if (!caps.subgroup_in_compute) return missing("subgroup operations in the compute stage");
    if ((caps.subgroup_ops & VK_SUBGROUP_FEATURE_BASIC_BIT) == 0) return missing("subgroup basic operations");
    if ((caps.subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) == 0) return missing("subgroup arithmetic operations");
  }
  if (caps.max_workgroup_invocations < req.min_workgroup_invocations) {
    return error(StatusCode::kUnsupported, who + "maxComputeWorkGroupInvocations " +
                                               std::to_string(caps.max_workgroup_invocations) + " < required " +
                                               std::to_string(req.min_workgroup_invocations));
  }
  if (caps.max_compute_shared_memory_bytes < req.min_shared_memory_bytes) {
    return error(StatusCode::kUnsupported, who + "maxComputeSharedMemorySize " +
                                               std::to_string(caps.max_compute_shared_memory_bytes) + " < required " +
                                               std::to_string(req.min_shared_memory_bytes));
  }
  return Status::Ok();
}

std::string describe_caps(const DeviceCaps& c) {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::string s;
  s += "device " + std::to_string(c.desc.index) + ": " + c.desc.name + " (" + std::string(device_kind_name(c.desc.kind)) +
       ", driver " + c.driver_name + " " + c.driver_info + ")\n";
  s += "  fp16 " + std::string(yn(c.shader_float16)) + ", int8 " + yn(c.shader_int8) + ", int16 " + yn(c.shader_int16) +
       ", 16-bit storage " + yn(c.storage_buffer_16bit) + ", 8-bit storage " + yn(c.storage_buffer_8bit) +
       ", integer dot " + yn(c.integer_dot_product) +
       (c.integer_dot_4x8_accelerated ? " (4x8 accelerated)" : "") + ", coopmat khr/nv " + yn(c.cooperative_matrix_khr) + "/" +
       yn(c.cooperative_matrix_nv) +
       (c.coopmat_f16_16x16 ? " (f16 16x16x16 in use)" : "") + "\n";
  s += "  subgroup size " + std::to_string(c.subgroup_size) + " (" + std::to_string(c.min_subgroup_size) + ".." +
       std::to_string(c.max_subgroup_size) + "), ops " + subgroup_ops_string(c.subgroup_ops) + ", compute " +
       yn(c.subgroup_in_compute) + "\n";
  s += "  maxStorageBufferRange " + std::to_string(c.max_storage_buffer_range) + ", minStorageBufferOffsetAlignment " +
       std::to_string(c.min_storage_buffer_offset_alignment) + ", maxMemoryAllocationSize " +
       std::to_string(c.max_memory_allocation_bytes) + ", shared " + std::to_string(c.max_compute_shared_memory_bytes) +
       ", device-local heap " + std::to_string(c.device_local_heap_bytes) + "\n";
  s += "  timestamps " + std::to_string(c.timestamp_valid_bits) + " bits, period " + std::to_string(c.timestamp_period_ns) +
       " ns";
  return s;
}

}  // namespace rdrr::runtime
