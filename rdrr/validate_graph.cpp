// Structural checks of inference.execution (SPEC.md "Execution graph"). Which ops a runtime implements
// and whether pinned digests match the shipped kernels is checked by the runtime's loader, not here.
#include <set>
#include <string>
#include <unordered_set>

#include "rdrr/layer_ref.h"
#include "rdrr/validate_internal.h"
#include "rdrr/validate_util.h"

namespace rdrr {

std::string substitute_layer(std::string_view ref, uint32_t layer) {
  std::string out;
  size_t at = 0;
  for (size_t pos = ref.find(kLayerToken); pos != std::string_view::npos; pos = ref.find(kLayerToken, at)) {
    out.append(ref.substr(at, pos - at));
    out += std::to_string(layer);
    at = pos + kLayerToken.size();
  }
  out.append(ref.substr(at));
  return out;
}

}  // namespace rdrr

namespace rdrr::internal {
namespace {

using vutil::quote;


Status invalid(std::string msg) { return error(StatusCode::kValidation, std::move(msg)); }

Status validate_kernel(const std::string& key, const KernelSpec& k) {
  const std::string field = "inference.execution.kernels." + key;
  RDRR_RETURN_IF_ERROR(vutil::check_identifier("inference.execution.kernels key", key, kMaxNameBytes, true, "_.-"));
  RDRR_RETURN_IF_ERROR(vutil::check_relative_path(field + ".kernel", k.file));
  RDRR_RETURN_IF_ERROR(vutil::check_identifier(field + ".entry", k.entry, kMaxNameBytes, true, "_"));
  const std::string_view prefix = "sha256:";
  if (k.digest.rfind(prefix, 0) != 0 || !vutil::is_lower_hex(std::string_view(k.digest).substr(prefix.size()), 64)) {
    return error(StatusCode::kSchema, field + ".digest: " + quote(k.digest) + " is not \"sha256:<64 lowercase hex>\"");
  }
  for (const auto& [name, value] : k.constants) {
    RDRR_RETURN_IF_ERROR(vutil::check_identifier(field + ".constants key", name, kMaxNameBytes, true, "_"));
    if (const double* d = std::get_if<double>(&value)) {
      RDRR_RETURN_IF_ERROR(vutil::check_finite(field + ".constants." + name, *d));
    }
  }
  for (const auto& [name, value] : k.precision) {
    RDRR_RETURN_IF_ERROR(vutil::check_identifier(field + ".precision key", name, kMaxNameBytes, true, "_"));
    RDRR_RETURN_IF_ERROR(vutil::check_identifier(field + ".precision." + name, value, 64, true, "_"));
  }
  return Status::Ok();
}

struct StepContext {
  const Manifest& m;
  const ExecutionGraph& g;
  const std::unordered_set<std::string_view>& tensor_names;
};

// `layers` empty: a pre/post-layer step, where "{L}" is not allowed.
Status validate_step(const StepContext& c, const std::string& field, const ExecStep& s,
                     const std::vector<uint32_t>& layers) {
  RDRR_RETURN_IF_ERROR(vutil::check_identifier(field + " op", s.op, 64, false, "_"));
  if (c.g.kernels.find(s.kernel_key) == c.g.kernels.end()) {
    return invalid(field + ": kernel key " + quote(s.kernel_key) + " is not in inference.execution.kernels");
  }
  if (!s.weight_ref) return Status::Ok();
  const std::string& ref = *s.weight_ref;
  std::string without_token = substitute_layer(ref, 0);
  const bool templated = without_token != ref;
  if (without_token.find_first_of("{}") != std::string::npos || ref.empty()) {
    return invalid(field + ": weight ref " + quote(ref) + " is malformed (only \"{L}\" may appear in braces)");
  }
  if (templated && layers.empty()) {
    return invalid(field + ": weight ref " + quote(ref) + " uses {L} outside a per-layer phase");
  }
  if (!templated) {
    if (c.tensor_names.count(ref) == 0) return invalid(field + ": weight ref " + quote(ref) + " names no tensor");
    return Status::Ok();
  }
  for (uint32_t layer : layers) {
    const std::string name = substitute_layer(ref, layer);
    if (c.tensor_names.count(name) == 0) {
      return invalid(field + ": weight ref " + quote(ref) + " for layer " + std::to_string(layer) +
                     " names no tensor (" + quote(name) + ")");
    }
  }
  return Status::Ok();
}

Status validate_flat_phase(const StepContext& c, const char* name, const std::vector<ExecStep>& steps) {
  if (steps.size() > kMaxListEntries) return invalid(std::string("inference.execution.") + name + ": too many steps");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string field = std::string("inference.execution.") + name + "[" + std::to_string(i) + "]";
    RDRR_RETURN_IF_ERROR(validate_step(c, field, steps[i], {}));
  }
  return Status::Ok();
}

Status validate_layer_phase(const StepContext& c, const char* name, const std::vector<LayerEntry>& entries) {
  const uint32_t num_layers = c.m.architecture.num_layers;
  std::vector<uint32_t> all_layers(num_layers);
  for (uint32_t l = 0; l < num_layers; ++l) all_layers[l] = l;
  if (entries.size() > kMaxListEntries)
    return invalid(std::string("inference.execution.") + name + ": too many entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string field = std::string("inference.execution.") + name + "[" + std::to_string(i) + "]";
    if (const auto* step = std::get_if<ExecStep>(&entries[i])) {
      RDRR_RETURN_IF_ERROR(validate_step(c, field, *step, all_layers));
      continue;
    }
    const LayerGroup& group = std::get<LayerGroup>(entries[i]);
    if (group.layers.empty()) return invalid(field + ".layers: must not be empty");
    if (group.steps.empty()) return invalid(field + ".steps: must not be empty");
    std::set<uint32_t> seen;
    for (uint32_t layer : group.layers) {
      if (layer >= num_layers) {
        return invalid(field + ".layers: layer " + std::to_string(layer) + " >= numLayers " +
                       std::to_string(num_layers));
      }
      if (!seen.insert(layer).second)
        return invalid(field + ".layers: layer " + std::to_string(layer) + " listed twice");
    }
    for (size_t j = 0; j < group.steps.size(); ++j) {
      RDRR_RETURN_IF_ERROR(validate_step(c, field + ".steps[" + std::to_string(j) + "]", group.steps[j], group.layers));
    }
  }
  return Status::Ok();
}

Status validate_policies(const ExecutionPolicies& p) {
  const struct {
    const char* name;
    const std::string& value;
    const char* allowed;
  } policies[] = {{"unsupportedPrecision", p.unsupported_precision, "error"},
                  {"dtypeTransition", p.dtype_transition, "require_cast_step"},
                  {"unresolvedKernel", p.unresolved_kernel, "error"}};
  for (const auto& policy : policies) {
    if (policy.value != policy.allowed) {
      return error(StatusCode::kSchema, std::string("inference.execution.policies.") + policy.name + ": " +
                                            quote(policy.value) + " is not \"" + policy.allowed + "\"");
    }
  }
  return Status::Ok();
}

}  // namespace

Status validate_graph(const Manifest& m, const ExecutionGraph& g) {
  if (g.kernels.size() > kMaxListEntries) return invalid("inference.execution.kernels: too many kernels");
  for (const auto& [key, kernel] : g.kernels) RDRR_RETURN_IF_ERROR(validate_kernel(key, kernel));
  std::unordered_set<std::string_view> tensor_names;
  for (const TensorEntry& t : m.tensors) tensor_names.insert(t.name);
  const StepContext c{m, g, tensor_names};
  RDRR_RETURN_IF_ERROR(validate_flat_phase(c, "preLayer", g.pre_layer));
  RDRR_RETURN_IF_ERROR(validate_layer_phase(c, "prefill", g.prefill));
  RDRR_RETURN_IF_ERROR(validate_layer_phase(c, "decode", g.decode));
  RDRR_RETURN_IF_ERROR(validate_flat_phase(c, "postLayer", g.post_layer));
  return validate_policies(g.policies);
}

}  // namespace rdrr::internal
