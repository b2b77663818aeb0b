// Gate 4 (load) and the Vulkan backend: the pack on the device, run by the graph executor.
#include <algorithm>
#include <cstdio>

#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/pack.h"
#include "verify/gates_internal.h"

namespace rdrr::verify::internal {
namespace {

class VulkanBackend final : public LogitsBackend {
 public:
  // `owned` is null when the caller lent the device.
  VulkanBackend(std::unique_ptr<runtime::Device> owned, runtime::Device& device, std::unique_ptr<runtime::Pack> pack,
                std::unique_ptr<runtime::Executor> exec)
      : owned_(std::move(owned)), device_(device), pack_(std::move(pack)), exec_(std::move(exec)) {}
  ~VulkanBackend() override {
    exec_.reset();  // before the pack and the device
    pack_.reset();
  }
  std::string name() const override { return "vulkan (" + device_.caps().desc.name + ")"; }
  bool f16_kv() const override { return exec_->kv_dtype() == quant::DType::kF16; }

  Result<std::vector<float>> logits(std::span<const int32_t> tokens) override {
    const std::vector<uint32_t> ids(tokens.begin(), tokens.end());
    exec_->reset();
    RDRR_ASSIGN_OR_RETURN(runtime::PrefillResult r, exec_->prefill(ids, runtime::LogitsMode::kAll));
    return std::move(r.logits);
  }
  Result<std::vector<int32_t>> greedy(std::span<const int32_t> prompt, size_t n_new) override {
    const std::vector<uint32_t> ids(prompt.begin(), prompt.end());
    RDRR_ASSIGN_OR_RETURN(std::vector<uint32_t> out, exec_->generate(ids, static_cast<uint32_t>(n_new)));
    return std::vector<int32_t>(out.begin(), out.end());
  }

 private:
  std::unique_ptr<runtime::Device> owned_;  // declared first: destroyed last
  runtime::Device& device_;
  std::unique_ptr<runtime::Pack> pack_;
  std::unique_ptr<runtime::Executor> exec_;
};

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

GateResult gate_load(const std::filesystem::path& pack_dir, const VerifyOptions& options,
                     std::unique_ptr<LogitsBackend>& backend) {
  GateResult g = make_gate(4, "load");
  std::unique_ptr<runtime::Device> owned;
  if (options.device == nullptr) {
    runtime::DeviceOptions dopts = runtime::device_options_from_env();
    if (!options.device_spec.empty()) dopts.device_spec = options.device_spec;
    Result<std::unique_ptr<runtime::Device>> created = runtime::Device::create(dopts);
    if (!created.ok()) {
      fail(g, kExitVerifyNoDevice, "no usable Vulkan device: " + created.status().to_string() +
                                       " (--skip-gpu runs the CPU gates only)");
      return g;
    }
    owned = std::move(*created);
  }
  runtime::Device& device = options.device ? *options.device : *owned;
  Result<std::unique_ptr<runtime::Pack>> pack = runtime::Pack::load(device, pack_dir, {});
  if (!pack.ok()) {
    fail(g, kExitVerifyLoad, pack.status().to_string());
    return g;
  }
  const runtime::Pack& p = **pack;
  uint64_t manifest_bytes = 0;
  for (const TensorEntry& t : p.manifest().tensors) manifest_bytes += t.size_bytes;
  const size_t n = p.manifest().tensors.size();
  // Sub-allocations round each tensor up to the binding alignment; anything beyond that would be a copy
  // in another format (silent dequantization).
  const uint64_t slack = static_cast<uint64_t>(n) * std::max<uint64_t>(256, device.binding_alignment());
  const uint64_t device_max = manifest_bytes + manifest_bytes / 50 + slack;
  g.figure = std::to_string(p.tensor_count()) + "/" + std::to_string(n) + " tensors, " + mib(p.device_bytes()) +
             " device memory for " + mib(manifest_bytes) + " of tensors";
  g.bound = "all tensors, device bytes <= tensor bytes x 1.02 + alignment";
  g.metrics = {{"tensors_uploaded", p.tensor_count()}, {"tensors", n}, {"tensor_bytes", p.tensor_bytes()},
               {"manifest_tensor_bytes", manifest_bytes}, {"device_bytes", p.device_bytes()},
               {"upload_seconds", p.upload_seconds()}, {"device", device.caps().desc.name}};
  if (p.tensor_count() != n || p.tensor_bytes() != manifest_bytes) {
    fail(g, kExitVerifyLoad, "uploaded " + std::to_string(p.tensor_count()) + " tensors / " +
                                 std::to_string(p.tensor_bytes()) + " bytes, the manifest has " + std::to_string(n) +
                                 " / " + std::to_string(manifest_bytes));
    return g;
  }
  if (p.device_bytes() > device_max) {
    fail(g, kExitVerifyLoad, "device memory " + mib(p.device_bytes()) + " > " + mib(device_max));
    return g;
  }
  Result<std::unique_ptr<runtime::Executor>> exec = runtime::Executor::create(device, p, {});
  if (!exec.ok()) {
    fail(g, exec.status().code() == StatusCode::kIntegrity ? kExitVerifyKernelPin : kExitVerifyLoad,
         "executor: " + exec.status().to_string());
    return g;
  }
  backend = std::make_unique<VulkanBackend>(std::move(owned), device, std::move(*pack), std::move(*exec));
  return g;
}

}  // namespace rdrr::verify::internal
