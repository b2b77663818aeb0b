#include "rdrr/model_tensors.h"

#include <charconv>

#include "rdrr/layer_ref.h"

namespace rdrr {
namespace {

using D = ShapeDim;
using M = ModelTensor;
using R = TensorRole;
using S = TensorScope;
constexpr TensorLeaf kW = TensorLeaf::kWeight;
constexpr TensorLeaf kB = TensorLeaf::kBias;

// One row per tensor, in enumerator order (checked below). Adding a tensor name: one row here.
constexpr std::array<ModelTensorInfo, kModelTensorCount> kTable = {{
    {M::kEmbedTokens, "embed_tokens", kW, S::kText, R::kEmbedding, 2, {D::kVocab, D::kHidden}},
    {M::kFinalNorm, "norm", kW, S::kText, R::kNorm, 1, {D::kHidden, D::kHidden}},
    {M::kLmHead, "lm_head", kW, S::kHead, R::kLmHead, 2, {D::kVocab, D::kHidden}},
    {M::kInputNorm, "input_layernorm", kW, S::kLayer, R::kNorm, 1, {D::kHidden, D::kHidden}},
    {M::kPostAttentionNorm, "post_attention_layernorm", kW, S::kLayer, R::kNorm, 1, {D::kHidden, D::kHidden}},
    {M::kPreFeedforwardNorm, "pre_feedforward_layernorm", kW, S::kLayer, R::kNorm, 1, {D::kHidden, D::kHidden}},
    {M::kPostFeedforwardNorm, "post_feedforward_layernorm", kW, S::kLayer, R::kNorm, 1, {D::kHidden, D::kHidden}},
    {M::kQNorm, "self_attn.q_norm", kW, S::kLayer, R::kNorm, 1, {D::kHeadDim, D::kHeadDim}},
    {M::kKNorm, "self_attn.k_norm", kW, S::kLayer, R::kNorm, 1, {D::kHeadDim, D::kHeadDim}},
    {M::kQProj, "self_attn.q_proj", kW, S::kLayer, R::kMatmul, 2, {D::kQ, D::kHidden}},
    {M::kKProj, "self_attn.k_proj", kW, S::kLayer, R::kMatmul, 2, {D::kKv, D::kHidden}},
    {M::kVProj, "self_attn.v_proj", kW, S::kLayer, R::kMatmul, 2, {D::kKv, D::kHidden}},
    {M::kQkvProj, "self_attn.qkv_proj", kW, S::kLayer, R::kMatmul, 2, {D::kQkv, D::kHidden}},
    {M::kOProj, "self_attn.o_proj", kW, S::kLayer, R::kMatmul, 2, {D::kHidden, D::kQ}},
    {M::kGateProj, "mlp.gate_proj", kW, S::kLayer, R::kMatmul, 2, {D::kIntermediate, D::kHidden}},
    {M::kUpProj, "mlp.up_proj", kW, S::kLayer, R::kMatmul, 2, {D::kIntermediate, D::kHidden}},
    {M::kGateUpProj, "mlp.gate_up_proj", kW, S::kLayer, R::kMatmul, 2, {D::kGateUp, D::kHidden}},
    {M::kDownProj, "mlp.down_proj", kW, S::kLayer, R::kMatmul, 2, {D::kHidden, D::kIntermediate}},
    {M::kQBias, "self_attn.q_proj", kB, S::kLayer, R::kBias, 1, {D::kQ, D::kQ}},
    {M::kKBias, "self_attn.k_proj", kB, S::kLayer, R::kBias, 1, {D::kKv, D::kKv}},
    {M::kVBias, "self_attn.v_proj", kB, S::kLayer, R::kBias, 1, {D::kKv, D::kKv}},
    {M::kQkvBias, "self_attn.qkv_proj", kB, S::kLayer, R::kBias, 1, {D::kQkv, D::kQkv}},
    {M::kRouter, "mlp.gate", kW, S::kLayer, R::kMatmul, 2, {D::kExperts, D::kHidden}},
    {M::kExpertsGateUp, "mlp.experts.gate_up_proj", kW, S::kLayer, R::kMatmul, 2, {D::kExpertsGateUp, D::kHidden}},
    {M::kExpertsDown, "mlp.experts.down_proj", kW, S::kLayer, R::kMatmul, 2, {D::kExpertsHidden, D::kExpertFf}},
    {M::kSharedGateProj, "mlp.shared_expert.gate_proj", kW, S::kLayer, R::kMatmul, 2, {D::kSharedFf, D::kHidden}},
    {M::kSharedUpProj, "mlp.shared_expert.up_proj", kW, S::kLayer, R::kMatmul, 2, {D::kSharedFf, D::kHidden}},
    {M::kSharedGateUpProj, "mlp.shared_expert.gate_up_proj", kW, S::kLayer, R::kMatmul, 2, {D::kSharedGateUp, D::kHidden}},
    {M::kSharedDownProj, "mlp.shared_expert.down_proj", kW, S::kLayer, R::kMatmul, 2, {D::kHidden, D::kSharedFf}},
    {M::kSharedExpertGate, "mlp.shared_expert_gate", kW, S::kLayer, R::kMatmul, 2, {D::kOne, D::kHidden}},
}};

constexpr bool table_in_order() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].tensor) != i) return false;
  }
  return true;
}
static_assert(table_in_order(), "kTable rows must follow the ModelTensor enumerators");

// Outside the text model of a multimodal checkpoint (Gemma 3 conditional generation).
constexpr std::array<std::string_view, 4> kNonTextPrefixes = {
    "vision_tower.", "model.vision_tower.", "multi_modal_projector.", "model.multi_modal_projector."};

constexpr std::string_view kLayersSegment = "layers.";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// `rest` is exactly "<stem>.<leaf>" of row `r`.
bool is_stem_leaf(std::string_view rest, const ModelTensorInfo& r) {
  const std::string_view leaf = tensor_leaf_name(r.leaf);
  return rest.size() == r.stem.size() + 1 + leaf.size() && starts_with(rest, r.stem) && rest[r.stem.size()] == '.' &&
         rest.substr(r.stem.size() + 1) == leaf;
}

int64_t dim_value(ShapeDim d, const ModelDims& m) {
  switch (d) {
    case D::kHidden: return m.hidden;
    case D::kIntermediate: return m.intermediate;
    case D::kGateUp: return 2 * m.intermediate;
    case D::kVocab: return m.vocab;
    case D::kHeadDim: return m.head_dim;
    case D::kQ: return m.heads * m.head_dim;
    case D::kKv: return m.kv_heads * m.head_dim;
    case D::kQkv: return (m.heads + 2 * m.kv_heads) * m.head_dim;
    case D::kExperts: return m.experts;
    case D::kExpertsGateUp: return m.experts * 2 * m.expert_ff;
    case D::kExpertsHidden: return m.experts * m.hidden;
    case D::kExpertFf: return m.expert_ff;
    case D::kSharedFf: return m.shared_ff;
    case D::kSharedGateUp: return 2 * m.shared_ff;
    case D::kOne: return 1;
  }
  return 0;
}

}  // namespace

ModelDims model_dims(const Architecture& a) {
  return ModelDims{.hidden = static_cast<int64_t>(a.hidden_size),
                   .intermediate = static_cast<int64_t>(a.intermediate_size),
                   .vocab = static_cast<int64_t>(a.vocab_size),
                   .heads = static_cast<int64_t>(a.num_attention_heads),
                   .kv_heads = static_cast<int64_t>(a.num_key_value_heads),
                   .head_dim = static_cast<int64_t>(a.head_dim),
                   .experts = static_cast<int64_t>(a.moe.num_experts),
                   .expert_ff = static_cast<int64_t>(a.moe.expert_intermediate_size),
                   .shared_ff = static_cast<int64_t>(a.moe.shared_expert_intermediate_size)};
}

std::span<const ModelTensorInfo> model_tensor_table() { return kTable; }

const ModelTensorInfo& model_tensor_info(ModelTensor t) { return kTable[static_cast<size_t>(t)]; }

std::string_view tensor_leaf_name(TensorLeaf leaf) { return leaf == TensorLeaf::kBias ? "bias" : "weight"; }

std::string model_tensor_stem(ModelTensor t, uint32_t layer, const TensorRoot& root) {
  const ModelTensorInfo& r = model_tensor_info(t);
  switch (r.scope) {
    case S::kText: return std::string(root.text) + std::string(r.stem);
    case S::kHead: return std::string(root.head) + std::string(r.stem);
    case S::kLayer: break;
  }
  return std::string(root.text) + std::string(kLayersSegment) + std::to_string(layer) + "." + std::string(r.stem);
}

std::string model_tensor_name(ModelTensor t, uint32_t layer, const TensorRoot& root) {
  return model_tensor_stem(t, layer, root) + "." + std::string(tensor_leaf_name(model_tensor_info(t).leaf));
}

std::string model_tensor_template(ModelTensor t, const TensorRoot& root) {
  const ModelTensorInfo& r = model_tensor_info(t);
  if (r.scope != S::kLayer) return model_tensor_name(t, 0, root);
  return std::string(root.text) + std::string(kLayersSegment) + std::string(kLayerToken) + "." + std::string(r.stem) +
         "." + std::string(tensor_leaf_name(r.leaf));
}

std::optional<LayerTensorName> split_layer_name(std::string_view name, const TensorRoot& root) {
  const size_t prefix = root.text.size() + kLayersSegment.size();
  if (!starts_with(name, root.text) || !starts_with(name.substr(root.text.size()), kLayersSegment)) {
    return std::nullopt;
  }
  const std::string_view tail = name.substr(prefix);
  int value = -1;
  const auto [ptr, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), value);
  if (ec != std::errc() || ptr == tail.data() || ptr == tail.data() + tail.size() || *ptr != '.' || value < 0) {
    return std::nullopt;
  }
  return LayerTensorName{static_cast<uint32_t>(value), tail.substr(static_cast<size_t>(ptr - tail.data()) + 1)};
}

std::optional<ParsedModelTensor> parse_model_tensor_name(std::string_view name, const TensorRoot& root) {
  const std::optional<LayerTensorName> layer = split_layer_name(name, root);
  for (const ModelTensorInfo& r : kTable) {
    std::string_view rest;
    if (r.scope == S::kLayer) {
      if (!layer) continue;
      rest = layer->rest;
    } else {
      const std::string_view prefix = r.scope == S::kText ? root.text : root.head;
      if (!starts_with(name, prefix)) continue;
      rest = name.substr(prefix.size());
    }
    if (is_stem_leaf(rest, r)) return ParsedModelTensor{r.tensor, r.scope == S::kLayer ? layer->layer : 0};
  }
  return std::nullopt;
}

std::vector<int64_t> expected_shape(ModelTensor t, const ModelDims& d) {
  const ModelTensorInfo& r = model_tensor_info(t);
  std::vector<int64_t> shape;
  for (uint8_t i = 0; i < r.rank; ++i) shape.push_back(dim_value(r.shape[i], d));
  return shape;
}

std::optional<std::string> rebase_tensor_name(std::string_view name, const TensorRoot& from, const TensorRoot& to) {
  if (starts_with(name, from.text)) return std::string(to.text) + std::string(name.substr(from.text.size()));
  if (from.head.empty() || !starts_with(name, from.head)) return std::nullopt;
  const std::string_view rest = name.substr(from.head.size());
  for (const ModelTensorInfo& r : kTable) {
    if (r.scope == S::kHead && starts_with(rest, r.stem) && rest.substr(r.stem.size(), 1) == ".") {
      return std::string(to.head) + std::string(rest);
    }
  }
  return std::nullopt;
}

bool outside_text_model(std::string_view name) {
  for (std::string_view p : kNonTextPrefixes) {
    if (starts_with(name, p)) return true;
  }
  return false;
}

}  // namespace rdrr
