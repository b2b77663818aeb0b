#include "convert/plan.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "quant/layout.h"
#include "rdrr/model_tensors.h"

namespace rdrr::convert {
namespace {

using quant::DType;
using quant::Layout;

constexpr std::array<std::pair<Preset, std::string_view>, 6> kPresets = {{
    {Preset::kF32, "f32"}, {Preset::kF16, "f16"}, {Preset::kBF16, "bf16"},
    {Preset::kQ8_0, "q8_0"}, {Preset::kQ4_K, "q4_k"}, {Preset::kQ4_K_M, "q4_k_m"},
}};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<DType> parse_type_name(std::string_view name) {
  const std::string l = lower(name);
  if (l == "f32") return DType::kF32;
  if (l == "f16") return DType::kF16;
  if (l == "bf16") return DType::kBF16;
  if (l == "q8_0") return DType::kQ8_0;
  if (l == "q4_k") return DType::kQ4_K;
  if (l == "q6_k") return DType::kQ6_K;
  return std::nullopt;
}

// The layout a Q4_K tensor gets: the option's, except stacked experts (row_wise: the expert kernels read row
// layouts).
Layout q4k_layout(const PlanEntry& e, const PlanOptions& o) {
  const bool experts = e.role == TensorRole::kFfnExpertsGateUp || e.role == TensorRole::kFfnExpertsDown;
  return experts ? Layout::kRowWise : o.q4k_layout;
}

// The preset's choice for a 2-D tensor, with the reason.
std::pair<DType, std::string> preset_choice(const PlanEntry& e, const PlanOptions& o) {
  const std::string p(preset_name(o.preset));
  if (e.role == TensorRole::kMoeRouter) return {DType::kF32, "expert routing stays F32"};
  switch (o.preset) {
    case Preset::kF32: return {DType::kF32, "preset " + p};
    case Preset::kF16: return {DType::kF16, "preset " + p};
    case Preset::kBF16: return {DType::kBF16, "preset " + p};
    case Preset::kQ8_0: return {DType::kQ8_0, "preset " + p};
    case Preset::kQ4_K:
      if (e.role == TensorRole::kEmbedding) return {DType::kF16, "preset q4_k: embeddings stay F16"};
      return {DType::kQ4_K, "preset q4_k"};
    case Preset::kQ4_K_M: break;
  }
  if (e.role == TensorRole::kLmHead) return {DType::kQ6_K, "preset q4_k_m: output head"};
  if (e.role == TensorRole::kEmbedding) {
    if (o.tied_embeddings) return {DType::kQ6_K, "preset q4_k_m: tied embedding is the output head"};
    return {DType::kQ4_K, "preset q4_k_m: untied embedding"};
  }
  if (o.n_experts == 8 && (e.role == TensorRole::kAttnK || e.role == TensorRole::kAttnV)) {
    return {DType::kQ8_0, "preset q4_k_m: k / v of an 8-expert model (llama.cpp's rule)"};
  }
  const bool more_bits_role = e.role == TensorRole::kAttnV || e.role == TensorRole::kAttnQkv ||
                              e.role == TensorRole::kFfnDown || e.role == TensorRole::kFfnExpertsDown ||
                              e.role == TensorRole::kFfnSharedDown;
  const int layer = layer_index(e.name);
  if (more_bits_role && layer >= 0 && use_more_bits(layer, o.n_layers)) {
    return {DType::kQ6_K, "preset q4_k_m: use_more_bits(layer " + std::to_string(layer) + ")"};
  }
  return {DType::kQ4_K, "preset q4_k_m"};
}

}  // namespace

std::string_view preset_name(Preset p) {
  for (const auto& [preset, name] : kPresets) {
    if (preset == p) return name;
  }
  return "?";
}

std::optional<Preset> parse_preset(std::string_view name) {
  const std::string l = lower(name);
  for (const auto& [preset, pname] : kPresets) {
    if (pname == l) return preset;
  }
  return std::nullopt;
}

bool preset_is_quantized(Preset p) {
  return p == Preset::kQ8_0 || p == Preset::kQ4_K || p == Preset::kQ4_K_M;
}

std::string_view role_name(TensorRole r) {
  switch (r) {
    case TensorRole::kEmbedding: return "embedding";
    case TensorRole::kLmHead: return "lm_head";
    case TensorRole::kNorm: return "norm";
    case TensorRole::kAttnQ: return "attn_q";
    case TensorRole::kAttnK: return "attn_k";
    case TensorRole::kAttnV: return "attn_v";
    case TensorRole::kAttnQkv: return "attn_qkv";
    case TensorRole::kAttnOut: return "attn_output";
    case TensorRole::kFfnGate: return "ffn_gate";
    case TensorRole::kFfnUp: return "ffn_up";
    case TensorRole::kFfnGateUp: return "ffn_gate_up";
    case TensorRole::kFfnDown: return "ffn_down";
    case TensorRole::kBias: return "bias";
    case TensorRole::kOther: return "other";
    case TensorRole::kMoeRouter: return "moe_router";
    case TensorRole::kFfnExpertsGateUp: return "ffn_gate_up_exps";
    case TensorRole::kFfnExpertsDown: return "ffn_down_exps";
    case TensorRole::kFfnSharedGate: return "ffn_gate_shexp";
    case TensorRole::kFfnSharedUp: return "ffn_up_shexp";
    case TensorRole::kFfnSharedDown: return "ffn_down_shexp";
  }
  return "other";
}

namespace {

// The converter's role of each model tensor (rdrr/model_tensors.h).
TensorRole role_of(ModelTensor t) {
  switch (t) {
    case ModelTensor::kEmbedTokens: return TensorRole::kEmbedding;
    case ModelTensor::kLmHead: return TensorRole::kLmHead;
    case ModelTensor::kQProj: return TensorRole::kAttnQ;
    case ModelTensor::kKProj: return TensorRole::kAttnK;
    case ModelTensor::kVProj: return TensorRole::kAttnV;
    case ModelTensor::kQkvProj: return TensorRole::kAttnQkv;
    case ModelTensor::kOProj: return TensorRole::kAttnOut;
    case ModelTensor::kGateProj: return TensorRole::kFfnGate;
    case ModelTensor::kUpProj: return TensorRole::kFfnUp;
    case ModelTensor::kGateUpProj: return TensorRole::kFfnGateUp;
    case ModelTensor::kDownProj: return TensorRole::kFfnDown;
    case ModelTensor::kRouter:
    case ModelTensor::kSharedExpertGate: return TensorRole::kMoeRouter;
    case ModelTensor::kExpertsGateUp: return TensorRole::kFfnExpertsGateUp;
    case ModelTensor::kExpertsDown: return TensorRole::kFfnExpertsDown;
    case ModelTensor::kSharedGateProj: return TensorRole::kFfnSharedGate;
    case ModelTensor::kSharedUpProj: return TensorRole::kFfnSharedUp;
    case ModelTensor::kSharedDownProj: return TensorRole::kFfnSharedDown;
    default: break;
  }
  return model_tensor_info(t).role == rdrr::TensorRole::kBias ? TensorRole::kBias : TensorRole::kNorm;
}

}  // namespace

TensorRole classify_tensor(std::string_view name) {
  if (const std::optional<ParsedModelTensor> p = parse_model_tensor_name(name)) return role_of(p->tensor);
  // Not a model tensor: only the leaf and a norm's name say something.
  if (ends_with(name, ".bias")) return TensorRole::kBias;
  if (ends_with(name, "norm.weight")) return TensorRole::kNorm;
  return TensorRole::kOther;
}

int layer_index(std::string_view name) {
  const std::optional<LayerTensorName> l = split_layer_name(name);
  return l ? static_cast<int>(l->layer) : -1;
}

bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

Result<TensorTypeOverride> parse_tensor_type_override(std::string_view spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size()) {
    return error(StatusCode::kInvalidArgument,
                 "--tensor-type '" + std::string(spec) + "': expected REGEX=TYPE");
  }
  const std::string_view type_name = spec.substr(eq + 1);
  const std::optional<DType> dtype = parse_type_name(type_name);
  if (!dtype) {
    return error(StatusCode::kInvalidArgument,
                 "--tensor-type '" + std::string(spec) + "': unknown type '" + std::string(type_name) +
                     "' (expected one of f32, f16, bf16, q8_0, q4_k, q6_k)");
  }
  TensorTypeOverride o;
  o.pattern = std::string(spec.substr(0, eq));
  o.dtype = *dtype;
  try {
    o.regex = std::regex(o.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return error(StatusCode::kInvalidArgument,
                 "--tensor-type '" + std::string(spec) + "': bad regex: " + e.what());
  }
  return o;
}

uint64_t planned_size_bytes(DType dtype, std::optional<Layout> layout, const std::vector<int64_t>& shape) {
  int64_t elems = 1;
  for (int64_t d : shape) elems *= d;
  if (!quant::is_block_quantized(dtype)) return static_cast<uint64_t>(elems * quant::block_bytes(dtype));
  if (shape.size() != 2 || !layout) return quant::quantized_size_bytes(dtype, Layout::kFlat, 1, elems);
  return quant::quantized_size_bytes(dtype, *layout, shape[0], shape[1]);
}

// Bits per weight of a dtype (block bytes * 8 / block values): Q4_0 4.5, Q4_K 4.5, Q5_0 5.5, Q5_K 5.5, Q6_K 6.5625,
// Q8_0 8.5, F16 16, F32 32.
static double bits_per_weight(DType d) {
  return static_cast<double>(quant::block_bytes(d)) * 8.0 / static_cast<double>(quant::block_elems(d));
}

std::optional<SourceChoice> gguf_source_choice(const std::vector<quant::GgmlBlockType>& source_types, DType preset) {
  using G = quant::GgmlBlockType;
  if (!quant::is_block_quantized(preset)) return std::nullopt;  // f32 / f16 / bf16: widened as asked
  // The rdrr type of a GGUF block type that has kernels (kept as it is), else nullopt.
  auto kernel_type = [](G t) -> std::optional<DType> {
    switch (t) {
      case G::kQ4_K: return DType::kQ4_K;
      case G::kQ6_K: return DType::kQ6_K;
      case G::kQ8_0: return DType::kQ8_0;
      case G::kQ4_0: return DType::kQ4_0;
      case G::kQ5_0: return DType::kQ5_0;
      case G::kQ5_K: return DType::kQ5_K;
      default: return std::nullopt;
    }
  };
  std::optional<DType> widest;  // of the parts rdrr has kernels for
  double source_bits = 0;
  bool all_kernel = true, all_same = true;
  std::string names;
  for (G t : source_types) {
    if (t == G::kF32 || t == G::kF16 || t == G::kBF16) continue;
    const std::string name(quant::ggml_block_type_name(t));
    if (names.find(name) == std::string::npos) {
      all_same = names.empty();
      names += (names.empty() ? "" : "+") + name;
    }
    source_bits = std::max(source_bits, static_cast<double>(quant::ggml_block_bytes(t)) * 8.0 /
                                            static_cast<double>(quant::ggml_block_elems(t)));
    const std::optional<DType> d = kernel_type(t);
    if (!d) all_kernel = false;
    if (d && (!widest || bits_per_weight(*d) > bits_per_weight(*widest))) widest = d;
  }
  if (names.empty()) return std::nullopt;  // a float source: the preset applies
  if (all_kernel && all_same) return SourceChoice{*widest, "source " + names + " kept (--quantize applies to float tensors)", false};
  if (all_kernel && !quant::is_pass_through(*widest)) {
    return SourceChoice{*widest, "source " + names + ": the wider type kept", false};
  }
  if (bits_per_weight(preset) > source_bits) return std::nullopt;  // the preset's type holds more bits
  return SourceChoice{DType::kQ8_0, "source " + names + " has no rdrr kernel: widened to Q8_0 (never narrowed)", true};
}

Result<std::vector<PlanEntry>> plan_tensors(const std::vector<PlanInput>& inputs, const PlanOptions& options) {
  std::vector<PlanEntry> plan;
  plan.reserve(inputs.size());
  for (const PlanInput& in : inputs) {
    PlanEntry e;
    e.name = in.name;
    e.shape = in.shape;
    e.role = classify_tensor(in.name);
    if (in.shape.empty() || std::any_of(in.shape.begin(), in.shape.end(), [](int64_t d) { return d <= 0; })) {
      return error(StatusCode::kValidation, "tensor " + in.name + ": shape has no elements");
    }
    if (in.shape.size() == 1) {
      e.dtype = DType::kF32;
      e.reason = "1-D tensors stay F32";
    } else {
      std::tie(e.dtype, e.reason) = preset_choice(e, options);
      if (const std::optional<SourceChoice> c = gguf_source_choice(in.source_types, e.dtype)) {
        e.dtype = c->dtype;
        e.reason = c->reason;
        e.widened = c->widened;
      } else {
        // llama.cpp's rule for rows whose length K is not a multiple of 256 (a K-quant row would be padded to
        // whole 256-value blocks): it falls back to Q5_0 / Q8_0 there, rdrr (which encodes no Q5_0) to Q8_0.
        // Only where blocks run along K: column_wise Q4_K blocks run along N and need no fallback.
        const bool along_k =
            e.dtype == DType::kQ6_K || (e.dtype == DType::kQ4_K && q4k_layout(e, options) != Layout::kColumnWise);
        if (along_k && in.shape[1] % 256 != 0) {
          e.reason = std::string(quant::dtype_name(e.dtype)) + " -> Q8_0: K " + std::to_string(in.shape[1]) +
                     " is not a multiple of 256, as llama.cpp's fallback (" + e.reason + ")";
          e.dtype = DType::kQ8_0;
        }
      }
    }
    for (const TensorTypeOverride& o : options.overrides) {
      if (!std::regex_match(in.name, o.regex)) continue;
      if (quant::is_block_quantized(o.dtype) && in.shape.size() != 2) {
        return error(StatusCode::kInvalidArgument,
                     "--tensor-type " + o.pattern + "=" + std::string(quant::dtype_name(o.dtype)) +
                         ": tensor " + in.name + " is " + std::to_string(in.shape.size()) +
                         "-D; block-quantized types need a 2-D weight");
      }
      e.dtype = o.dtype;
      e.reason = "override " + o.pattern + "=" + std::string(quant::dtype_name(o.dtype));
      e.widened = false;
      break;
    }
    if (quant::is_block_quantized(e.dtype)) {
      e.layout = e.dtype == DType::kQ4_K ? q4k_layout(e, options) : Layout::kRowWise;
    }
    e.size_bytes = planned_size_bytes(e.dtype, e.layout, e.shape);
    plan.push_back(std::move(e));
  }
  return plan;
}

}  // namespace rdrr::convert
