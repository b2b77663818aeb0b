#include "rdrr/manifest.h"

#include <algorithm>
#include <array>
#include <utility>

#include "quant/layout.h"

namespace rdrr {
namespace {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

template <typename E, size_t N>
std::string_view enum_name(const NameTable<E, N>& table, E v) {
  for (const auto& [value, name] : table) {
    if (value == v) return name;
  }
  return "?";
}

template <typename E, size_t N>
std::optional<E> enum_parse(const NameTable<E, N>& table, std::string_view s) {
  for (const auto& [value, name] : table) {
    if (name == s) return value;
  }
  return std::nullopt;
}

constexpr NameTable<ArchFamily, 10> kArchFamilies{{{ArchFamily::kLlama, "llama"},
                                                  {ArchFamily::kMistral, "mistral"},
                                                  {ArchFamily::kQwen2, "qwen2"},
                                                  {ArchFamily::kQwen3, "qwen3"},
                                                  {ArchFamily::kGemma3, "gemma3"},
                                                  {ArchFamily::kPhi3, "phi3"},
                                                  {ArchFamily::kGemma2, "gemma2"},
                                                  {ArchFamily::kMixtral, "mixtral"},
                                                  {ArchFamily::kQwen2Moe, "qwen2_moe"},
                                                  {ArchFamily::kQwen3Moe, "qwen3_moe"}}};
constexpr NameTable<SourceFormat, 2> kSourceFormats{
    {{SourceFormat::kSafetensors, "safetensors"}, {SourceFormat::kGguf, "gguf"}}};
constexpr NameTable<LayerType, 2> kLayerTypes{
    {{LayerType::kFullAttention, "full_attention"}, {LayerType::kSlidingAttention, "sliding_attention"}}};
constexpr NameTable<NormType, 1> kNormTypes{{{NormType::kRmsNorm, "rmsnorm"}}};
constexpr NameTable<Activation, 2> kActivations{{{Activation::kSilu, "silu"}, {Activation::kGeluTanh, "gelu_tanh"}}};
constexpr NameTable<RopeScalingType, 6> kRopeScalingTypes{{{RopeScalingType::kNone, "none"},
                                                           {RopeScalingType::kLinear, "linear"},
                                                           {RopeScalingType::kLlama3, "llama3"},
                                                           {RopeScalingType::kYarn, "yarn"},
                                                           {RopeScalingType::kLongRope, "longrope"},
                                                           {RopeScalingType::kFreqFactors, "freq_factors"}}};
constexpr NameTable<RopeConvention, 2> kRopeConventions{
    {{RopeConvention::kRotateHalf, "rotate_half"}, {RopeConvention::kInterleaved, "interleaved"}}};
constexpr NameTable<TensorRole, 5> kTensorRoles{{{TensorRole::kEmbedding, "embedding"},
                                                 {TensorRole::kLmHead, "lm_head"},
                                                 {TensorRole::kNorm, "norm"},
                                                 {TensorRole::kMatmul, "matmul"},
                                                 {TensorRole::kBias, "bias"}}};

// a * b, or nullopt past kMaxJsonInteger.
std::optional<uint64_t> mul_bounded(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxJsonInteger) return std::nullopt;
  return r;
}

}  // namespace

std::string_view arch_family_name(ArchFamily v) { return enum_name(kArchFamilies, v); }
std::optional<ArchFamily> parse_arch_family(std::string_view s) { return enum_parse(kArchFamilies, s); }
std::string_view source_format_name(SourceFormat v) { return enum_name(kSourceFormats, v); }
std::optional<SourceFormat> parse_source_format(std::string_view s) { return enum_parse(kSourceFormats, s); }
std::string_view layer_type_name(LayerType v) { return enum_name(kLayerTypes, v); }
std::optional<LayerType> parse_layer_type(std::string_view s) { return enum_parse(kLayerTypes, s); }
std::string_view norm_type_name(NormType v) { return enum_name(kNormTypes, v); }
std::optional<NormType> parse_norm_type(std::string_view s) { return enum_parse(kNormTypes, s); }
std::string_view activation_name(Activation v) { return enum_name(kActivations, v); }
std::optional<Activation> parse_activation(std::string_view s) { return enum_parse(kActivations, s); }
std::string_view rope_scaling_type_name(RopeScalingType v) { return enum_name(kRopeScalingTypes, v); }
std::optional<RopeScalingType> parse_rope_scaling_type(std::string_view s) { return enum_parse(kRopeScalingTypes, s); }
std::string_view rope_convention_name(RopeConvention v) { return enum_name(kRopeConventions, v); }
std::optional<RopeConvention> parse_rope_convention(std::string_view s) { return enum_parse(kRopeConventions, s); }
std::string_view tensor_role_name(TensorRole v) { return enum_name(kTensorRoles, v); }
std::optional<TensorRole> parse_tensor_role(std::string_view s) { return enum_parse(kTensorRoles, s); }

constexpr NameTable<KvDtype, 2> kKvDtypes{{{KvDtype::kF16, "f16"}, {KvDtype::kF32, "f32"}}};
std::string_view kv_dtype_name(KvDtype v) { return enum_name(kKvDtypes, v); }
std::optional<KvDtype> parse_kv_dtype(std::string_view s) { return enum_parse(kKvDtypes, s); }
quant::DType kv_storage_dtype(KvDtype v) { return v == KvDtype::kF32 ? quant::DType::kF32 : quant::DType::kF16; }
std::optional<KvDtype> kv_dtype_of(quant::DType storage) {
  if (storage == quant::DType::kF16) return KvDtype::kF16;
  if (storage == quant::DType::kF32) return KvDtype::kF32;
  return std::nullopt;
}

bool is_moe_layer(const Architecture& a, uint32_t layer) {
  return a.moe.present() && !std::binary_search(a.moe.dense_layers.begin(), a.moe.dense_layers.end(), layer);
}

bool rope_needs_freq_table(const RopeConfig& rope) {
  return rope.scaling_type != RopeScalingType::kNone && rope.scaling_type != RopeScalingType::kLinear;
}

std::string shape_to_string(std::span<const uint64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += "]";
  return out;
}

Result<uint64_t> expected_tensor_size_bytes(quant::DType dtype, std::span<const uint64_t> shape,
                                            std::optional<quant::Layout> layout) {
  const std::string what = std::string(quant::dtype_name(dtype)) + " " + shape_to_string(shape);
  if (shape.empty() || shape.size() > kMaxTensorDims) {
    return error(StatusCode::kValidation,
                 what + ": shape must have 1 to 4 dimensions, has " + std::to_string(shape.size()));
  }
  for (uint64_t d : shape) {
    if (d == 0) return error(StatusCode::kValidation, what + ": zero dimension");
  }
  const bool blocked = quant::is_block_quantized(dtype);
  if (!blocked && layout) {
    return error(StatusCode::kValidation,
                 what + ": layout " + std::string(quant::layout_name(*layout)) + " given for a non-block dtype");
  }
  if (blocked && !layout) return error(StatusCode::kValidation, what + ": block-quantized tensor without layout");
  if (blocked && shape.size() != 2) {
    return error(StatusCode::kValidation, what + ": block-quantized tensor must be 2-D [N, K]");
  }
  if (quant::is_pass_through(dtype) && layout == quant::Layout::kColumnWise) {
    return error(StatusCode::kValidation, what + ": layout column_wise, expected row_wise or flat (a pass-through "
                                                 "type keeps a GGUF's block order)");
  }
  std::optional<uint64_t> bytes = 1;
  if (!blocked) {
    bytes = static_cast<uint64_t>(quant::block_bytes(dtype));
    for (uint64_t d : shape) {
      bytes = mul_bounded(*bytes, d);
      if (!bytes) break;
    }
  } else {  // quant/layout.h owns the layout size math; 0 means the shape overflows 64 bits
    const uint64_t b =
        quant::quantized_size_bytes(dtype, *layout, static_cast<int64_t>(shape[0]), static_cast<int64_t>(shape[1]));
    bytes = b == 0 || b > kMaxJsonInteger ? std::nullopt : std::optional<uint64_t>(b);
  }
  if (!bytes) return error(StatusCode::kValidation, what + ": byte size exceeds 2^53");
  return *bytes;
}

void fill_derived_fields(Manifest& m) {
  uint64_t stream = 0;
  for (ShardInfo& s : m.shards) {
    s.stream_offset_bytes = stream;
    stream += s.size_bytes;
  }
  m.total_size_bytes = stream;
  m.quantization_info.tensor_counts.clear();
  m.quantization_info.layout_counts.clear();
  for (const TensorEntry& t : m.tensors) {
    ++m.quantization_info.tensor_counts[t.dtype];
    if (t.layout) ++m.quantization_info.layout_counts[*t.layout];
  }
}

void canonicalize(Manifest& m) {
  auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  std::stable_sort(m.tensors.begin(), m.tensors.end(), by_name);
  std::stable_sort(m.tokenizer.files.begin(), m.tokenizer.files.end(), by_name);
  std::stable_sort(m.metadata.source.files.begin(), m.metadata.source.files.end(), by_name);
  std::stable_sort(m.goldens.begin(), m.goldens.end(), by_name);
}

const TensorEntry* find_tensor(const Manifest& m, std::string_view name) {
  for (const TensorEntry& t : m.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TensorIndex::TensorIndex(const Manifest& m) {
  by_name_.reserve(m.tensors.size());
  for (const TensorEntry& t : m.tensors) by_name_.emplace(t.name, &t);
}

const TensorEntry* TensorIndex::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace rdrr
