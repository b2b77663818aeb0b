// SourceModel: opens an HF folder or a GGUF file, maps names, orders and fuses tensors, checks shapes
// against the model config. Row reading lives in source_read.cpp.
#include "convert/source.h"

#include <array>
#include <charconv>
#include <algorithm>
#include <map>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

#include "convert/gguf_names.h"
#include "convert/plan.h"
#include "rdrr/model_tensors.h"

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using quant::GgmlBlockType;

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool ends_with(std::string_view s, std::string_view x) {
  return s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
}

// The logical shape a tensor must have under `arch`, or nullopt when the name is not a weight we know.
std::optional<std::vector<int64_t>> expected_shape(std::string_view name, const Architecture& a) {
  const std::optional<ParsedModelTensor> t = parse_model_tensor_name(name);
  if (!t) return std::nullopt;
  return rdrr::expected_shape(t->tensor, model_dims(a));
}

// `name` is model tensor `t` (plain root).
bool is_tensor(std::string_view name, ModelTensor t) {
  const std::optional<ParsedModelTensor> p = parse_model_tensor_name(name);
  return p && p->tensor == t;
}

// Writer order: embedding, layers by index (tensors by name inside), then the head tensors.
std::tuple<int, int, std::string> order_key(const std::string& name) {
  const int layer = layer_index(name);
  if (layer >= 0) return {1, layer, name};
  if (is_tensor(name, ModelTensor::kEmbedTokens)) return {0, 0, name};
  return {2, is_tensor(name, ModelTensor::kLmHead) ? 1 : 0, name};
}

// HF multimodal wrappers (Gemma 3 conditional generation): the text model's names under the plain root.
std::optional<std::string> normalize_hf_name(std::string_view name) {
  for (const TensorRoot& root : kWrapperRoots) {
    if (std::optional<std::string> plain = rebase_tensor_name(name, root, kPlainRoot)) return plain;
  }
  if (outside_text_model(name)) return std::nullopt;
  return std::string(name);
}

Result<StoredMatrix> stored_matrix(std::string name, GgmlBlockType type, const std::vector<int64_t>& shape,
                                   std::span<const std::byte> bytes) {
  StoredMatrix m;
  m.name = std::move(name);
  m.type = type;
  m.cols = shape.empty() ? 1 : shape.back();
  m.rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) m.rows *= shape[i];
  const int64_t be = quant::ggml_block_elems(type);
  if (m.cols <= 0 || m.rows <= 0 || m.cols % be != 0) {
    return error(StatusCode::kValidation, "tensor " + m.name + ": shape " + shape_str(shape) +
                                              " is not a whole number of " + std::to_string(be) + "-value blocks per row");
  }
  m.row_bytes = static_cast<uint64_t>(m.cols / be * quant::ggml_block_bytes(type));
  if (bytes.size() != static_cast<uint64_t>(m.rows) * m.row_bytes) {
    return error(StatusCode::kInternal, "tensor " + m.name + ": " + std::to_string(bytes.size()) +
                                            " bytes, expected " + std::to_string(m.rows * m.row_bytes));
  }
  m.bytes = bytes;
  return m;
}

GgmlBlockType block_type_of(quant::DType d) {
  switch (d) {
    case quant::DType::kF32: return GgmlBlockType::kF32;
    case quant::DType::kF16: return GgmlBlockType::kF16;
    case quant::DType::kBF16: return GgmlBlockType::kBF16;
    case quant::DType::kQ8_0: return GgmlBlockType::kQ8_0;
    case quant::DType::kQ4_K: return GgmlBlockType::kQ4_K;
    case quant::DType::kQ6_K: return GgmlBlockType::kQ6_K;
    case quant::DType::kQ4_0: return GgmlBlockType::kQ4_0;
    case quant::DType::kQ5_0: return GgmlBlockType::kQ5_0;
    case quant::DType::kQ5_K: return GgmlBlockType::kQ5_K;
  }
  return GgmlBlockType::kF32;
}

SourceTensor single(std::string name, std::vector<int64_t> shape, StoredMatrix m) {
  SourceTensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.parts.push_back({std::move(m), 0});
  return t;
}

// One expert's matrix in an HF checkpoint: Mixtral "model.layers.N.block_sparse_moe.experts.E.w1|w3|w2.weight"
// (gate, up, down), Qwen-MoE "model.layers.N.mlp.experts.E.gate_proj|up_proj|down_proj.weight".
struct ExpertPart {
  uint32_t layer = 0;
  uint32_t expert = 0;
  int which = 0;  // 0 gate, 1 up, 2 down
};
std::optional<ExpertPart> parse_expert_name(std::string_view name) {
  const std::optional<LayerTensorName> l = split_layer_name(name);
  if (!l) return std::nullopt;
  std::string_view rest = l->rest;
  bool mixtral = false;
  if (rest.starts_with("block_sparse_moe.experts.")) {
    mixtral = true;
    rest.remove_prefix(std::string_view("block_sparse_moe.experts.").size());
  } else if (rest.starts_with("mlp.experts.")) {
    rest.remove_prefix(std::string_view("mlp.experts.").size());
  } else {
    return std::nullopt;
  }
  uint32_t e = 0;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), e);
  if (ec != std::errc() || ptr == rest.data() || ptr == rest.data() + rest.size() || *ptr != '.') return std::nullopt;
  const std::string_view leaf = rest.substr(static_cast<size_t>(ptr - rest.data()) + 1);
  constexpr std::array<std::string_view, 3> kMixtral = {"w1.weight", "w3.weight", "w2.weight"};
  constexpr std::array<std::string_view, 3> kQwen = {"gate_proj.weight", "up_proj.weight", "down_proj.weight"};
  for (int w = 0; w < 3; ++w) {
    if (leaf == (mixtral ? kMixtral : kQwen)[static_cast<size_t>(w)]) return ExpertPart{l->layer, e, w};
  }
  return std::nullopt;
}

// Mixtral's router "block_sparse_moe.gate" under the pack's name "mlp.gate".
std::optional<std::string> mixtral_router_name(std::string_view name) {
  const std::optional<LayerTensorName> l = split_layer_name(name);
  if (!l || l->rest != "block_sparse_moe.gate.weight") return std::nullopt;
  return model_tensor_name(ModelTensor::kRouter, l->layer);
}

// The per-expert matrices of each MoE layer stacked into the pack's two tensors (rdrr/model_tensors.h):
// gate_up [E * 2 Fe, D] (expert e: its gate rows at 2 Fe e, its up rows at 2 Fe e + Fe), down [E * D, Fe].
Result<std::vector<SourceTensor>> stack_experts(std::map<std::pair<uint32_t, uint32_t>, std::array<std::optional<StoredMatrix>, 3>>& parts,
                                                const Architecture& a) {
  std::vector<SourceTensor> out;
  if (parts.empty()) return out;
  if (!a.moe.present()) {
    const auto& [key, mats] = *parts.begin();
    return error(StatusCode::kUnsupported, "layer " + std::to_string(key.first) + " expert " +
                                               std::to_string(key.second) +
                                               ": expert weights in a model whose config has no experts");
  }
  const int64_t f = static_cast<int64_t>(a.moe.expert_intermediate_size), d = static_cast<int64_t>(a.hidden_size);
  const int64_t n = a.moe.num_experts;
  for (uint32_t layer = 0; layer < a.num_layers; ++layer) {
    const bool moe = is_moe_layer(a, layer);
    SourceTensor gate_up{model_tensor_name(ModelTensor::kExpertsGateUp, layer), {n * 2 * f, d}, {}};
    SourceTensor down{model_tensor_name(ModelTensor::kExpertsDown, layer), {n * d, f}, {}};
    for (uint32_t e = 0; e < n; ++e) {
      const auto it = parts.find({layer, e});
      if (!moe) {
        if (it != parts.end()) {
          return error(StatusCode::kValidation, "layer " + std::to_string(layer) + ": expert weights in a dense layer "
                                                "(architecture.moe.denseLayers lists it)");
        }
        continue;
      }
      constexpr std::array<const char*, 3> kWhich = {"gate", "up", "down"};
      for (size_t w = 0; w < 3; ++w) {
        if (it == parts.end() || !it->second[w]) {
          return error(StatusCode::kNotFound, "layer " + std::to_string(layer) + " expert " + std::to_string(e) + ": " +
                                                  kWhich[w] + " weight missing from the input");
        }
        const StoredMatrix& m = *it->second[w];
        const int64_t rows = w == 2 ? d : f, cols = w == 2 ? f : d;
        if (m.rows != rows || m.cols != cols) {
          return error(StatusCode::kValidation, "tensor " + m.name + ": shape [" + std::to_string(m.rows) + ", " +
                                                    std::to_string(m.cols) + "], expected [" + std::to_string(rows) +
                                                    ", " + std::to_string(cols) + "] from the model config");
        }
      }
      gate_up.parts.push_back({*it->second[0], 2 * f * e});
      gate_up.parts.push_back({*it->second[1], 2 * f * e + f});
      down.parts.push_back({*it->second[2], d * e});
      parts.erase(it);
    }
    if (moe) {
      out.push_back(std::move(gate_up));
      out.push_back(std::move(down));
    }
  }
  if (!parts.empty()) {
    const auto& [key, mats] = *parts.begin();
    return error(StatusCode::kValidation, "layer " + std::to_string(key.first) + " expert " + std::to_string(key.second) +
                                              ": beyond numExperts " + std::to_string(n) + " or numLayers");
  }
  return out;
}

// llama.cpp's stacked expert gate / up: "blk.N.ffn_gate_exps.weight" (0) and "blk.N.ffn_up_exps.weight" (1).
std::optional<std::pair<uint32_t, int>> gguf_gate_up_exps(std::string_view name) {
  if (!name.starts_with("blk.")) return std::nullopt;
  std::string_view rest = name.substr(4);
  uint32_t layer = 0;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || ptr == rest.data() || ptr == rest.data() + rest.size() || *ptr != '.') return std::nullopt;
  rest = rest.substr(static_cast<size_t>(ptr - rest.data()) + 1);
  if (rest == "ffn_gate_exps.weight") return std::make_pair(layer, 0);
  if (rest == "ffn_up_exps.weight") return std::make_pair(layer, 1);
  return std::nullopt;
}

// A row range [first, first + n) of a stored matrix (a 1-D tensor: a range of its values). Rows are whole
// blocks in every storage type, so the range is a byte range: nothing is decoded or copied.
StoredMatrix stored_slice(const StoredMatrix& m, int64_t first, int64_t n, bool one_d) {
  StoredMatrix s = m;
  if (one_d) {
    const uint64_t elem = static_cast<uint64_t>(quant::ggml_block_bytes(m.type));  // biases: F32 / F16 / BF16
    s.cols = n;
    s.row_bytes = static_cast<uint64_t>(n) * elem;
    s.bytes = m.bytes.subspan(static_cast<uint64_t>(first) * elem, s.row_bytes);
  } else {
    s.rows = n;
    s.bytes = m.bytes.subspan(static_cast<uint64_t>(first) * m.row_bytes, static_cast<uint64_t>(n) * m.row_bytes);
  }
  return s;
}

// A layer's ffn_gate_exps and ffn_up_exps ([E, Fe, D] each, expert-major rows) as the pack's stacked gate_up
// [E * 2 Fe, D]: expert e's gate rows, then its up rows (row ranges of the stored blocks, nothing decoded).
Result<SourceTensor> stack_gguf_gate_up(uint32_t layer, const std::array<std::optional<StoredMatrix>, 2>& pair,
                                        const Architecture& a) {
  const std::string name = model_tensor_name(ModelTensor::kExpertsGateUp, layer);
  if (!a.moe.present()) {
    return error(StatusCode::kUnsupported, "tensor blk." + std::to_string(layer) +
                                               ".ffn_gate_exps.weight: expert weights in a model without experts");
  }
  const int64_t e = a.moe.num_experts, f = static_cast<int64_t>(a.moe.expert_intermediate_size);
  const int64_t d = static_cast<int64_t>(a.hidden_size);
  for (size_t w = 0; w < 2; ++w) {
    const std::string gguf = "blk." + std::to_string(layer) + (w == 0 ? ".ffn_gate_exps" : ".ffn_up_exps") + ".weight";
    if (!pair[w]) return error(StatusCode::kNotFound, "tensor " + gguf + ": missing from the input");
    if (pair[w]->rows != e * f || pair[w]->cols != d) {
      return error(StatusCode::kValidation, "tensor " + gguf + ": " + std::to_string(pair[w]->rows) + " rows of " +
                                                std::to_string(pair[w]->cols) + ", expected " + std::to_string(e) +
                                                " experts x " + std::to_string(f) + " rows of " + std::to_string(d));
    }
  }
  SourceTensor t{name, {e * 2 * f, d}, {}};
  for (int64_t x = 0; x < e; ++x) {
    t.parts.push_back({stored_slice(*pair[0], x * f, f, false), 2 * f * x});
    t.parts.push_back({stored_slice(*pair[1], x * f, f, false), 2 * f * x + f});
  }
  return t;
}

// Tensors every layer (and the model) must have, given the config.
std::vector<std::string> required_names(const ModelConfig& c, const std::set<std::string>& present) {
  using M = ModelTensor;
  std::vector<std::string> req = {model_tensor_name(M::kEmbedTokens), model_tensor_name(M::kFinalNorm)};
  if (!c.tied_embeddings) req.push_back(model_tensor_name(M::kLmHead));
  const bool gemma = c.inference.normalization.post_feedforward_norm;  // Gemma 2 / 3: pre- and post-FFN norms
  const bool bias = c.inference.attention.attention_bias;
  for (uint32_t l = 0; l < c.architecture.num_layers; ++l) {
    std::vector<M> want = {M::kInputNorm, M::kPostAttentionNorm};
    if (gemma) want.insert(want.end(), {M::kPreFeedforwardNorm, M::kPostFeedforwardNorm});
    if (present.count(model_tensor_name(M::kQkvProj, l)) > 0) {
      if (bias) want.push_back(M::kQkvBias);
    } else {
      for (auto [w, b] : {std::pair{M::kQProj, M::kQBias}, {M::kKProj, M::kKBias}, {M::kVProj, M::kVBias}}) {
        want.push_back(w);
        if (bias) want.push_back(b);
      }
    }
    if (c.inference.attention.query_key_norm) want.insert(want.end(), {M::kQNorm, M::kKNorm});
    want.push_back(M::kOProj);
    if (is_moe_layer(c.architecture, l)) {
      want.insert(want.end(), {M::kRouter, M::kExpertsGateUp, M::kExpertsDown});
      if (c.architecture.moe.shared_expert_intermediate_size > 0) {
        want.insert(want.end(), {M::kSharedGateProj, M::kSharedUpProj, M::kSharedDownProj});
      }
      if (c.architecture.moe.shared_expert_gated) want.push_back(M::kSharedExpertGate);
      for (M t : want) req.push_back(model_tensor_name(t, l));
      continue;
    }
    if (present.count(model_tensor_name(M::kGateUpProj, l)) == 0) {
      if (c.inference.ffn.gated) want.push_back(M::kGateProj);
      want.push_back(M::kUpProj);
    }
    want.push_back(M::kDownProj);
    for (M t : want) req.push_back(model_tensor_name(t, l));
  }
  return req;
}

}  // namespace

int64_t SourceTensor::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}
int64_t SourceTensor::cols() const { return shape.empty() ? 1 : shape.back(); }

std::string SourceTensor::source_dtype() const {
  std::string out;
  for (const SourcePart& p : parts) {
    const std::string n(quant::ggml_block_type_name(p.stored.type));
    if (out.empty()) {
      out = n;
    } else if (out.find(n) == std::string::npos) {
      out += "+" + n;
    }
  }
  return out;
}

uint64_t SourceTensor::stored_bytes() const {
  uint64_t n = 0;
  for (const SourcePart& p : parts) n += p.stored.bytes.size();
  return n;
}

std::optional<quant::DType> dtype_of(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kF32: return quant::DType::kF32;
    case GgmlBlockType::kF16: return quant::DType::kF16;
    case GgmlBlockType::kBF16: return quant::DType::kBF16;
    case GgmlBlockType::kQ8_0: return quant::DType::kQ8_0;
    case GgmlBlockType::kQ4_K: return quant::DType::kQ4_K;
    case GgmlBlockType::kQ6_K: return quant::DType::kQ6_K;
    case GgmlBlockType::kQ4_0: return quant::DType::kQ4_0;
    case GgmlBlockType::kQ5_0: return quant::DType::kQ5_0;
    case GgmlBlockType::kQ5_K: return quant::DType::kQ5_K;
    default: return std::nullopt;
  }
}

SourceModel::~SourceModel() = default;

Result<SourceModel> SourceModel::open(const fs::path& src, const SourceOptions& options) {
  std::error_code ec;
  const fs::file_status st = fs::status(src, ec);
  if (ec || !fs::exists(st)) return error(StatusCode::kNotFound, src.string() + ": no such file or folder");
  SourceModel m;
  if (fs::is_directory(st)) {
    RDRR_RETURN_IF_ERROR(m.load_safetensors(src, options));
  } else if (fs::is_regular_file(st)) {
    if (src.extension() == ".safetensors" || src.filename() == "config.json") {
      return error(StatusCode::kInvalidArgument,
                   src.string() + ": pass the Hugging Face model folder (config.json, tokenizer, weights), not one file");
    }
    RDRR_RETURN_IF_ERROR(m.load_gguf(src, options));
  } else {
    return error(StatusCode::kInvalidArgument, src.string() + ": not a folder or a regular file");
  }
  return m;
}

Status SourceModel::load_safetensors(const fs::path& folder, const SourceOptions& options) {
  format_ = SourceFormat::kSafetensors;
  RDRR_ASSIGN_OR_RETURN(config_, read_hf_model_config(folder));
  RDRR_ASSIGN_OR_RETURN(SafeTensorsModel st, SafeTensorsModel::open(folder));
  safetensors_ = std::make_unique<SafeTensorsModel>(std::move(st));
  const fs::path canonical = fs::weakly_canonical(folder);
  model_id_ = canonical.filename().string();
  if (model_id_.empty()) model_id_ = "model";
  // Provenance: every file read.
  std::vector<fs::path> read = {folder / "config.json"};
  for (const char* extra : {"generation_config.json", "tokenizer_config.json"}) {
    if (fs::is_regular_file(folder / extra)) read.push_back(folder / extra);
  }
  if (!fs::is_regular_file(folder / "model.safetensors")) read.push_back(folder / "model.safetensors.index.json");
  for (const SafeTensorsFile& f : safetensors_->files()) read.push_back(f.path());
  for (const fs::path& p : config_.tokenizer_files) read.push_back(p);
  std::set<std::string> seen;
  for (const fs::path& p : read) {
    if (seen.insert(p.filename().string()).second) files_.push_back({p, p.filename().string()});
  }
  std::map<std::string, size_t> skipped;  // first name component (vision_tower, multi_modal_projector) -> count
  std::map<std::pair<uint32_t, uint32_t>, std::array<std::optional<StoredMatrix>, 3>> experts;  // (layer, expert)
  for (const TensorView& v : safetensors_->tensors()) {
    if (const std::optional<ExpertPart> e = parse_expert_name(v.name)) {
      RDRR_ASSIGN_OR_RETURN(StoredMatrix sm, stored_matrix(v.name, block_type_of(v.dtype), v.shape, v.bytes));
      experts[{e->layer, e->expert}][static_cast<size_t>(e->which)] = std::move(sm);
      continue;
    }
    if (std::optional<std::string> router = mixtral_router_name(v.name)) {
      RDRR_ASSIGN_OR_RETURN(StoredMatrix sm, stored_matrix(v.name, block_type_of(v.dtype), v.shape, v.bytes));
      tensors_.push_back(single(std::move(*router), v.shape, std::move(sm)));
      continue;
    }
    const std::optional<std::string> name = normalize_hf_name(v.name);
    if (!name) {
      std::string_view stem(v.name);
      if (stem.rfind("model.", 0) == 0) stem.remove_prefix(6);
      ++skipped[std::string(stem.substr(0, stem.find('.')))];
      continue;
    }
    if (ends_with(*name, "rotary_emb.inv_freq")) {
      warnings_.push_back("tensor " + v.name + ": RoPE frequencies are derived from the config, skipped");
      continue;
    }
    if (is_tensor(*name, ModelTensor::kLmHead) && config_.tied_embeddings) {
      warnings_.push_back("tensor " + *name + ": the embeddings are tied, the stored head is not used");
      continue;
    }
    RDRR_ASSIGN_OR_RETURN(StoredMatrix sm, stored_matrix(v.name, block_type_of(v.dtype), v.shape, v.bytes));
    tensors_.push_back(single(*name, v.shape, std::move(sm)));
  }
  if (!skipped.empty()) {  // one line for every tensor outside the text model (a vision tower, its projector)
    size_t total = 0;
    std::string parts;
    for (const auto& [stem, n] : skipped) {
      total += n;
      parts += (parts.empty() ? "" : ", ") + stem + ".* " + std::to_string(n);
    }
    warnings_.push_back("skipped " + std::to_string(total) + " tensors outside the text model (" + parts + ")");
  }
  RDRR_ASSIGN_OR_RETURN(std::vector<SourceTensor> stacked, stack_experts(experts, config_.architecture));
  for (SourceTensor& t : stacked) tensors_.push_back(std::move(t));
  if (config_.family == "gemma3" || config_.family == "gemma2") {  // the multiplier: the embedding's dtype
    for (const SourceTensor& t : tensors_) {
      if (!is_tensor(t.name, ModelTensor::kEmbedTokens)) continue;
      const std::optional<quant::DType> d = dtype_of(t.parts[0].stored.type);
      config_.inference.output.embedding_scale =
          hf_embedding_scale(config_.architecture.hidden_size, d.value_or(quant::DType::kF32));
    }
  }
  return finish(options);
}

Status SourceModel::load_gguf(const fs::path& file, const SourceOptions& options) {
  format_ = SourceFormat::kGguf;
  RDRR_ASSIGN_OR_RETURN(GgufFile g, GgufFile::open(file));
  gguf_ = std::make_unique<GgufFile>(std::move(g));
  RDRR_ASSIGN_OR_RETURN(config_, model_config_from_gguf(*gguf_));
  RDRR_ASSIGN_OR_RETURN(std::string_view arch, gguf_->get_string("general.architecture"));
  const Result<std::string_view> name = gguf_->get_string("general.name");
  model_id_ = name.ok() && !name->empty() ? std::string(*name) : file.stem().string();
  files_.push_back({file, file.filename().string()});
  const auto& a = config_.architecture;
  std::map<uint32_t, std::array<std::optional<StoredMatrix>, 2>> gate_up_exps;  // layer -> ffn_gate_exps, ffn_up_exps
  for (const GgufTensor& t : gguf_->tensors()) {
    if (const std::optional<std::pair<uint32_t, int>> e = gguf_gate_up_exps(t.name)) {
      const std::optional<GgmlBlockType> type = quant::ggml_block_type_from_id(static_cast<uint32_t>(t.type));
      if (!type) {
        return error(StatusCode::kUnsupported, file.string() + ": tensor " + t.name + ": GGUF type " +
                                                   std::string(t.type_name()) + " cannot be decoded by rdrr-convert");
      }
      RDRR_ASSIGN_OR_RETURN(StoredMatrix sm, stored_matrix(t.name, *type, t.shape(), t.bytes));
      gate_up_exps[e->first][static_cast<size_t>(e->second)] = std::move(sm);
      continue;
    }
    const std::optional<std::string> hf = gguf_to_hf_name(t.name, arch);
    if (!hf) {
      if (is_gguf_rope_factor_tensor(t.name)) continue;  // read by model_config_from_gguf into inference.rope
      return error(StatusCode::kUnsupported, file.string() + ": tensor " + t.name +
                                                 ": not a known weight of GGUF architecture " + std::string(arch));
    }
    const std::optional<GgmlBlockType> type = quant::ggml_block_type_from_id(static_cast<uint32_t>(t.type));
    if (!type) {
      return error(StatusCode::kUnsupported, file.string() + ": tensor " + t.name + ": GGUF type " +
                                                 std::string(t.type_name()) + " cannot be decoded by rdrr-convert");
    }
    RDRR_ASSIGN_OR_RETURN(StoredMatrix sm, stored_matrix(t.name, *type, t.shape(), t.bytes));
    if (config_.qk_rows_permuted) {
      const TensorRole role = classify_tensor(*hf);
      if (role == TensorRole::kAttnQ) sm.permute_heads = a.num_attention_heads;
      if (role == TensorRole::kAttnK) sm.permute_heads = a.num_key_value_heads;
      if (sm.permute_heads > 0 && sm.rows % (2 * sm.permute_heads) != 0) {
        return error(StatusCode::kValidation, "tensor " + t.name + ": " + std::to_string(sm.rows) +
                                                  " rows cannot hold " + std::to_string(sm.permute_heads) +
                                                  " permuted heads");
      }
    }
    std::vector<int64_t> shape = t.shape();
    if (is_tensor(*hf, ModelTensor::kSharedExpertGate) && shape.size() == 1) shape.insert(shape.begin(), 1);  // [D]
    if (is_tensor(*hf, ModelTensor::kExpertsDown) && shape.size() == 3) shape = {shape[0] * shape[1], shape[2]};
    tensors_.push_back(single(*hf, std::move(shape), std::move(sm)));
  }
  for (auto& [layer, pair] : gate_up_exps) {
    RDRR_ASSIGN_OR_RETURN(SourceTensor stacked, stack_gguf_gate_up(layer, pair, a));
    tensors_.push_back(std::move(stacked));
  }
  return finish(options);
}


// Phi-3's fused qkv_proj (HF self_attn.qkv_proj, GGUF attn_qkv; rows q, then k, then v) and its bias become
// q_proj / k_proj / v_proj by row ranges of the stored matrix, so the graph's separate projections run them and
// every tensor's rows pass through unchanged.
Status SourceModel::split_qkv(const SourceOptions& options) {
  const Architecture& a = config_.architecture;
  std::set<std::string> names;
  for (const SourceTensor& t : tensors_) names.insert(t.name);
  const int64_t q = static_cast<int64_t>(a.num_attention_heads * a.head_dim);
  const int64_t kv = static_cast<int64_t>(a.num_key_value_heads * a.head_dim);
  std::vector<SourceTensor> out;
  out.reserve(tensors_.size());
  for (SourceTensor& t : tensors_) {
    const std::optional<ParsedModelTensor> p = parse_model_tensor_name(t.name);
    const bool weight = p && p->tensor == ModelTensor::kQkvProj;
    const bool bias = p && p->tensor == ModelTensor::kQkvBias;
    if ((!weight && !bias) || t.parts.size() != 1) {
      out.push_back(std::move(t));
      continue;
    }
    const ModelTensor w[] = {ModelTensor::kQProj, ModelTensor::kKProj, ModelTensor::kVProj};
    const ModelTensor b[] = {ModelTensor::kQBias, ModelTensor::kKBias, ModelTensor::kVBias};
    bool split_weight = !options.fuse_qkv;
    for (ModelTensor one : w) {  // an override that selects q_proj, k_proj or v_proj needs them separate
      split_weight = split_weight || (options.overridden && options.overridden(model_tensor_name(one, p->layer)));
    }
    if (weight && !split_weight) {  // kept fused: none of the three may be stored beside it
      for (ModelTensor one : w) {
        const std::string name = model_tensor_name(one, p->layer);
        if (names.count(name) > 0) {
          return error(StatusCode::kValidation, "tensor " + name + ": given both alone and inside " + t.name);
        }
      }
      out.push_back(std::move(t));
      continue;
    }
    const int64_t first[] = {0, q, q + kv}, rows[] = {q, kv, kv};
    if (bias && quant::ggml_block_elems(t.parts[0].stored.type) != 1) {
      return error(StatusCode::kUnsupported, "tensor " + t.name + ": a block-quantized 1-D qkv bias cannot be split");
    }
    for (int i = 0; i < 3; ++i) {
      const std::string name = model_tensor_name(weight ? w[i] : b[i], p->layer);
      if (names.count(name) > 0) {
        return error(StatusCode::kValidation, "tensor " + name + ": given both alone and inside " + t.name);
      }
      std::vector<int64_t> shape = t.shape;
      shape[0] = rows[i];
      out.push_back(single(name, std::move(shape), stored_slice(t.parts[0].stored, first[i], rows[i], bias)));
    }
  }
  tensors_ = std::move(out);
  return Status::Ok();
}

// Per layer, the tensors `parts` (each one stored matrix) become one virtual tensor `fused` with their rows stacked
// in that order. A layer whose parts differ in storage type stays unfused, so a GGUF's blocks still pass through
// as they are (e.g. llama.cpp's Q4_K_M gives some layers' v_proj Q6_K and their q_proj / k_proj Q4_K); so does
// one whose parts options.keep_separate names, or with a part options.overridden selects.
void SourceModel::fuse_rows(ModelTensor fused, std::initializer_list<ModelTensor> parts, const SourceOptions& options) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors_.size(); ++i) index[tensors_[i].name] = i;
  std::vector<bool> drop(tensors_.size(), false);
  for (uint32_t l = 0; l < config_.architecture.num_layers; ++l) {
    std::vector<size_t> at;
    std::vector<std::string> names;
    for (ModelTensor p : parts) {
      const auto it = index.find(model_tensor_name(p, l));
      if (it == index.end() || tensors_[it->second].parts.size() != 1) break;
      if (!at.empty() && tensors_[it->second].parts[0].stored.type != tensors_[at[0]].parts[0].stored.type) break;
      if (options.overridden && options.overridden(it->first)) break;
      at.push_back(it->second);
      names.push_back(it->first);
    }
    if (at.size() != parts.size() || (options.keep_separate && options.keep_separate(names, config_))) continue;
    SourceTensor& first = tensors_[at[0]];
    first.name = model_tensor_name(fused, l);
    for (size_t j = 1; j < at.size(); ++j) {
      SourceTensor& next = tensors_[at[j]];
      const int64_t row_begin = first.shape[0];
      first.shape[0] += next.shape[0];
      first.parts.push_back({std::move(next.parts[0].stored), row_begin});
      drop[at[j]] = true;
    }
  }
  size_t w = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (drop[i]) continue;
    if (w != i) tensors_[w] = std::move(tensors_[i]);
    ++w;
  }
  tensors_.resize(w);
}

// Shape checks, required tensors, qkv split, gate+up fusion, writer order.
Status SourceModel::finish(const SourceOptions& options) {
  std::set<std::string> present;
  for (const SourceTensor& t : tensors_) {
    if (!present.insert(t.name).second) {
      return error(StatusCode::kValidation, "tensor " + t.name + ": appears twice in the input");
    }
    const std::optional<std::vector<int64_t>> want = expected_shape(t.name, config_.architecture);
    if (!want) {
      return error(StatusCode::kUnsupported, "tensor " + t.name + " (" + t.parts[0].stored.name +
                                                 "): not a known weight of a " + config_.family + " model");
    }
    if (t.shape != *want) {
      return error(StatusCode::kValidation, "tensor " + t.name + ": shape " + shape_str(t.shape) +
                                                ", expected " + shape_str(*want) + " from the model config");
    }
    const int layer = layer_index(t.name);
    if (layer >= 0 && static_cast<uint32_t>(layer) >= config_.architecture.num_layers) {
      return error(StatusCode::kValidation, "tensor " + t.name + ": layer " + std::to_string(layer) +
                                                " >= numLayers " + std::to_string(config_.architecture.num_layers));
    }
  }
  for (const std::string& n : required_names(config_, present)) {
    if (present.count(n) == 0) return error(StatusCode::kNotFound, "tensor " + n + ": missing from the input");
  }
  RDRR_RETURN_IF_ERROR(split_qkv(options));
  using M = ModelTensor;
  if (options.fuse_qkv) fuse_rows(M::kQkvProj, {M::kQProj, M::kKProj, M::kVProj}, options);
  if (options.fuse_gate_up && config_.inference.ffn.gated) {
    fuse_rows(M::kGateUpProj, {M::kGateProj, M::kUpProj}, options);
  }
  std::sort(tensors_.begin(), tensors_.end(),
            [](const SourceTensor& a, const SourceTensor& b) { return order_key(a.name) < order_key(b.name); });
  std::sort(files_.begin(), files_.end(), [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
  for (const std::string& w : config_.warnings) warnings_.push_back(w);
  return Status::Ok();
}

}  // namespace rdrr::convert
