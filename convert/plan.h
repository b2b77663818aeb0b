// Conversion planning: which dtype and layout each output tensor gets, per preset.
//
// Presets (llama.cpp users' expectations):
//   f32 | f16 | bf16 : every 2-D weight in that type; 1-D tensors (norms, biases) stay F32.
//   q8_0             : every 2-D weight Q8_0; 1-D F32.
//   q4_k             : every 2-D matmul weight Q4_K (output head included); embeddings F16; 1-D F32.
//   q4_k_m           : llama.cpp's Q4_K_M mixture: Q6_K for the output head (or a tied embedding, which
//                      serves as the head), Q6_K for v_proj / qkv_proj / down_proj on the layers that
//                      use_more_bits(i, n) picks, Q4_K for every other 2-D weight, F32 for 1-D tensors;
//                      models of exactly 8 experts (Mixtral) get Q8_0 k_proj / v_proj as llama.cpp gives
//                      them (its Q5_K o_proj for those models stays Q4_K: rdrr encodes no Q5_K).
// A GGUF tensor stored block-quantized (gguf_source_choice): under a block-quantized preset type, a Q4_K, Q6_K or
// Q8_0 source keeps its type (bit-exact in row_wise; a fused tensor of two such types takes the wider), since
// re-encoding it into any other block type adds error and no information; any other block type (Q4_0, Q4_1,
// Q5_0, Q5_1, Q2_K, Q3_K, Q5_K: no rdrr kernel) takes the preset's type when that has more bits per weight,
// else is widened to Q8_0 (never narrowed). So --quantize q4_k_m / q4_k / q8_0 apply to float tensors;
// f32 / f16 / bf16 presets still widen everything.
// `--tensor-type REGEX=TYPE` overrides win over the preset and that rule (the first matching override applies).
// Block-quantized tensors record a layout: Q4_K uses the requested --q4k-layout (padding explicit, never a
// silent fallback to another type); Q6_K and Q8_0 are row_wise.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "quant/dtype.h"
#include "quant/legacy_dequant.h"
#include "quant/status.h"

namespace rdrr::convert {

enum class Preset { kF32, kF16, kBF16, kQ8_0, kQ4_K, kQ4_K_M };

std::string_view preset_name(Preset p);  // "f32", "f16", "bf16", "q8_0", "q4_k", "q4_k_m"
std::optional<Preset> parse_preset(std::string_view name);
bool preset_is_quantized(Preset p);  // q8_0, q4_k, q4_k_m: gate+up fused by default

// What a tensor is for, derived from its canonical (Hugging Face style) name.
enum class TensorRole {
  kEmbedding, kLmHead, kNorm, kAttnQ, kAttnK, kAttnV, kAttnQkv, kAttnOut, kFfnGate, kFfnUp,
  kFfnGateUp, kFfnDown, kBias, kOther,
  // Mixture of experts: the router and the shared expert's gate stay F32; stacked experts are row_wise
  // (the expert kernels read row layouts); routed experts and the shared expert's down_proj are rounded plainly
  // (convert/calibration.cpp).
  kMoeRouter, kFfnExpertsGateUp, kFfnExpertsDown, kFfnSharedGate, kFfnSharedUp, kFfnSharedDown,
};
std::string_view role_name(TensorRole r);
TensorRole classify_tensor(std::string_view name);
// Layer index parsed from "model.layers.N.", or -1.
int layer_index(std::string_view name);

// llama.cpp's rule for giving some layers' attn_v / ffn_down more bits (Q6_K) in Q4_K_M.
bool use_more_bits(int layer, int n_layers);

struct TensorTypeOverride {
  std::string pattern;  // ECMAScript regex, matched against the whole tensor name
  std::regex regex;
  quant::DType dtype;
};
// Parses "REGEX=TYPE" (TYPE: f32, f16, bf16, q8_0, q4_k, q6_k; case-insensitive).
Result<TensorTypeOverride> parse_tensor_type_override(std::string_view spec);

struct PlanInput {
  std::string name;             // canonical output name (after any fusion)
  std::vector<int64_t> shape;   // logical shape, HF order ([out, in] for matmuls)
  std::vector<quant::GgmlBlockType> source_types = {};  // storage type of each source part (none: float)
};

// The type a block-quantized source takes instead of `preset` (the preset's choice for the tensor) and why;
// nullopt where the preset's choice stands (float sources, float presets, a kernel-less source whose preset
// type holds more bits per weight).
struct SourceChoice {
  quant::DType dtype;
  std::string reason;
  bool widened = false;  // a kernel-less source type widened to Q8_0
};
std::optional<SourceChoice> gguf_source_choice(const std::vector<quant::GgmlBlockType>& source_types,
                                               quant::DType preset);

struct PlanOptions {
  Preset preset = Preset::kQ4_K_M;
  quant::Layout q4k_layout = quant::Layout::kColumnWise;
  int n_layers = 0;
  bool tied_embeddings = false;  // no lm_head: the embedding is the output head
  uint32_t n_experts = 0;        // architecture.moe.numExperts (0: dense)
  std::vector<TensorTypeOverride> overrides;
};

struct PlanEntry {
  std::string name;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::kOther;
  quant::DType dtype = quant::DType::kF32;
  std::optional<quant::Layout> layout;  // set for block-quantized 2-D tensors only
  std::string reason;                   // why this type: "preset q4_k_m: output head", "override ..."
  bool widened = false;                 // a GGUF type without an rdrr kernel widened to Q8_0
  uint64_t size_bytes = 0;              // bytes in the pack (layout padding included)
};

// Plans every tensor. Errors: an override to a block type for a 1-D tensor, a shape with zero elements.
Result<std::vector<PlanEntry>> plan_tensors(const std::vector<PlanInput>& inputs, const PlanOptions& options);

// Bytes a tensor of `dtype` with logical `shape` takes in `layout` (1-D block tensors use flat).
uint64_t planned_size_bytes(quant::DType dtype, std::optional<quant::Layout> layout,
                            const std::vector<int64_t>& shape);

}  // namespace rdrr::convert
