#include "kernels/kernel_choice.h"

#include <algorithm>
#include <string>

#include "quant/blocks.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;

struct Related {
  std::string_view kernel;
  std::span<const std::string_view> others;
};
// The ticket zeroing and the multi-range merge (runtime/ops_gemv.cpp).
constexpr std::string_view kColSplit[] = {"gemv_reduce"};
// The integer-dot kernel the runtime runs where packed 8-bit dot products are native (device_gemv_kernel).
constexpr std::string_view kQ4KVec[] = {"gemv_q4_k_dot"};
// Split-K partials and their merge; the decode (one query) kernels the runtime runs where they apply.
constexpr std::string_view kAttnF16[] = {"attention_split_f16", "attn_merge", "attention_decode_f16",
                                         "attention_decode_split_f16"};
constexpr std::string_view kAttnF32[] = {"attention_split_f32", "attn_merge", "attention_decode_f32",
                                         "attention_decode_split_f32"};
constexpr std::string_view kSampleThreshold[] = {"sample_partial", "sample_final"};
constexpr std::string_view kSamplePartial[] = {"sample_threshold", "sample_final"};
constexpr std::string_view kSampleFinal[] = {"sample_threshold", "sample_partial"};
constexpr Related kCompanions[] = {
    {"attention_f16", kAttnF16},          {"attention_f32", kAttnF32},
    {"gemv_q4_k_col_split", kColSplit},   {"gemv_q4_k_vec", kQ4KVec},           {"sample_final", kSampleFinal},
    {"sample_partial", kSamplePartial},   {"sample_threshold", kSampleThreshold},
};

// Optional variants: run in place of the kernel where the device supports them and the pack pins them.
constexpr std::string_view kGemmF16Cm[] = {"gemm_f16_cm"};
constexpr std::string_view kGemmQ80Cm[] = {"gemm_q8_0_cm"};
constexpr std::string_view kGemmQ6KCm[] = {"gemm_q6_k_cm"};
constexpr std::string_view kGemmQ4KCm[] = {"gemm_q4_k_cm"};
constexpr std::string_view kGemmQ4KColCm[] = {"gemm_q4_k_col_cm"};
constexpr std::string_view kGemmQ40Cm[] = {"gemm_q4_0_cm"};
constexpr std::string_view kGemmQ50Cm[] = {"gemm_q5_0_cm"};
constexpr std::string_view kGemmQ5KCm[] = {"gemm_q5_k_cm"};
// Flash-attention prefill (a variant, not a companion: packs pinned before it stay valid and run attention.comp).
constexpr std::string_view kAttnPrefillF16[] = {"attention_prefill_f16"};
constexpr std::string_view kAttnPrefillF32[] = {"attention_prefill_f32"};
constexpr Related kVariants[] = {
    {"gemm_f16", kGemmF16Cm},   {"gemm_q4_k", kGemmQ4KCm},  {"gemm_q4_k_col", kGemmQ4KColCm},
    {"gemm_q6_k", kGemmQ6KCm},  {"gemm_q8_0", kGemmQ80Cm},  {"gemm_q4_0", kGemmQ40Cm},
    {"gemm_q5_0", kGemmQ50Cm},  {"gemm_q5_k", kGemmQ5KCm},  {"attention_f16", kAttnPrefillF16},
    {"attention_f32", kAttnPrefillF32},
};

constexpr std::string_view kCoopmatWhen =
    "passes of more than 32 rows where the device has VK_NV_cooperative_matrix (f16 16x16x16, subgroups of 32)";
constexpr DeviceChoice kDotChoice[] = {
    {"gemv_q4_k_dot", "K >= 8192 where the device's packed 8-bit integer dot products are native"}};
constexpr std::string_view kPrefillWhen =
    "prefill (several queries, no explicit split), head_dim a multiple of 4 up to 256, where its tiles fit the "
    "shared memory";
constexpr DeviceChoice kAttnF16Choice[] = {{"attention_decode_f16", "decode (one query), head_dim a multiple of 8 up to 256"}};
constexpr DeviceChoice kAttnF32Choice[] = {{"attention_decode_f32", "decode (one query), head_dim a multiple of 4 up to 256"}};
// The companions a runtime runs in a pinned kernel's place (the variants' choices follow from kVariants).
struct Choices {
  std::string_view kernel;
  std::span<const DeviceChoice> choices;
};
constexpr Choices kCompanionChoices[] = {
    {"attention_f16", kAttnF16Choice}, {"attention_f32", kAttnF32Choice}, {"gemv_q4_k_vec", kDotChoice}};

std::span<const std::string_view> lookup(std::span<const Related> table, std::string_view kernel_name) {
  for (const Related& r : table) {
    if (r.kernel == kernel_name) return r.others;
  }
  return {};
}

}  // namespace

std::span<const std::string_view> kernel_companions(std::string_view kernel_name) {
  return lookup(kCompanions, kernel_name);
}

std::span<const std::string_view> kernel_variants(std::string_view kernel_name) { return lookup(kVariants, kernel_name); }

bool is_optional_variant(std::string_view kernel_name) {
  for (const Related& r : kVariants) {
    for (std::string_view v : r.others) {
      if (v == kernel_name) return true;
    }
  }
  return false;
}

std::vector<DeviceChoice> device_choices(std::string_view pinned_kernel) {
  std::vector<DeviceChoice> out;
  for (const Choices& c : kCompanionChoices) {
    if (c.kernel == pinned_kernel) out.assign(c.choices.begin(), c.choices.end());
  }
  // The optional variants: the cooperative-matrix GEMMs (device_gemm_kernel) and the prefill attention.
  for (std::string_view v : kernel_variants(pinned_kernel)) {
    out.push_back({v, is_coopmat_kernel(v) ? kCoopmatWhen : kPrefillWhen});
  }
  return out;
}

std::string_view rope_kernel(bool freq_table, bool head_norm) {
  if (head_norm) return freq_table ? "rope_freqs_norm" : "rope_norm";
  return freq_table ? "rope_freqs" : "rope";
}

bool fuses_head_norm(std::string_view kernel) {
  return kernel == "rope_norm" || kernel == "rope_freqs_norm" || kernel.starts_with("kv_append_norm_rope_");
}

bool is_coopmat_kernel(std::string_view name) { return name.ends_with("_cm"); }

const KernelInfo* pinned_matmul_kernel(MatmulPass pass, DType dtype, Layout layout, uint64_t k) {
  if (pass == MatmulPass::kDecode) {
    // The vectorized GEMVs where their block rules hold (matmul_kernel_fits).
    std::string_view vec;
    if (dtype == DType::kQ4_K) vec = layout == Layout::kColumnWise ? "gemv_q4_k_col_split" : "gemv_q4_k_vec";
    if (dtype == DType::kQ6_K && layout != Layout::kColumnWise) vec = "gemv_q6_k_vec";
    if (dtype == DType::kQ5_K && layout != Layout::kColumnWise) vec = "gemv_q5_k_vec";
    const KernelInfo* info = vec.empty() ? nullptr : find_kernel(vec);
    if (info != nullptr && matmul_kernel_fits(*info, layout, k)) return info;
  }
  // The generic kernel of the pass (the registry lists each op's generic kernels first).
  return find_kernel(pass == MatmulPass::kPrefill ? Op::kGemm : Op::kGemv, dtype, layout);
}

// The registry kernel `name` where it reads `layout` and fits K (matmul_kernel_fits), else nullptr.
static const KernelInfo* kernel_if_fits(std::string_view name, Layout layout, uint64_t k) {
  const KernelInfo* info = name.empty() ? nullptr : find_kernel(name);
  if (info == nullptr || std::find(info->layouts.begin(), info->layouts.end(), layout) == info->layouts.end() ||
      !matmul_kernel_fits(*info, layout, k)) {
    return nullptr;
  }
  return info;
}

const KernelInfo* pinned_moe_kernel(Op op, DType dtype, Layout layout, uint64_t k) {
  std::string_view vec;
  if (dtype == DType::kQ4_K) vec = op == Op::kMoeGemvCombine ? "moe_gemv_combine_q4_k_vec" : "moe_gemv_q4_k_vec";
  if (dtype == DType::kQ6_K) vec = op == Op::kMoeGemvCombine ? "moe_gemv_combine_q6_k_vec" : "moe_gemv_q6_k_vec";
  if (dtype == DType::kQ5_K) vec = op == Op::kMoeGemvCombine ? "moe_gemv_combine_q5_k_vec" : "moe_gemv_q5_k_vec";
  if (const KernelInfo* info = kernel_if_fits(vec, layout, k)) return info;
  return find_kernel(op, dtype, layout);  // the generic entry (listed first)
}

const KernelInfo* pinned_moe_route_glu_kernel(DType dtype, Layout layout, uint64_t k) {
  if (dtype == DType::kQ4_K) return kernel_if_fits("moe_gemv_route_glu_q4_k_vec", layout, k);
  if (dtype == DType::kQ5_K) return kernel_if_fits("moe_gemv_route_glu_q5_k_vec", layout, k);
  return nullptr;
}

bool matmul_kernel_fits(const KernelInfo& kernel, Layout layout, uint64_t k, std::string_view* why) {
  const bool whole_blocks = layout == Layout::kRowWise || k % quant::kQK_K == 0;
  bool fits = true;
  std::string_view rule;
  if (kernel.name == "gemv_q4_k_vec" || kernel.name == "gemv_q4_k_dot" || kernel.name == "gemv_q5_k_vec") {
    fits = whole_blocks;
    rule = "rows not whole blocks or blocks not 16-byte aligned";
  } else if (kernel.name == "gemv_q6_k_vec") {
    fits = whole_blocks && k % 4 == 0;
    rule = "rows not whole blocks or K not a multiple of 4";
  } else if (kernel.name.ends_with("_vec") && (kernel.op == Op::kMoeGemv || kernel.op == Op::kMoeGemvCombine ||
                                               kernel.op == Op::kMoeGemvRouteGlu)) {
    fits = whole_blocks && k % 4 == 0;
    rule = "rows not whole blocks or K not a multiple of 4";
  } else if ((kernel.op == Op::kMoeGemv || kernel.op == Op::kMoeGemvCombine) && layout == Layout::kFlat &&
             kernel.dtypes.size() == 1 && quant::is_block_quantized(kernel.dtypes[0])) {
    fits = k % static_cast<uint64_t>(quant::block_elems(kernel.dtypes[0])) == 0;
    rule = "flat expert rows must start on a block boundary (K a multiple of the block)";
  }
  if (!fits && why != nullptr) *why = rule;
  return fits;
}

Result<const KernelInfo*> device_gemv_kernel(const KernelInfo& pinned, uint32_t k, const DeviceFacts& device,
                                             Q4KDecode decode) {
  const bool vec = pinned.name == "gemv_q4_k_vec";
  const bool want_dot = pinned.name == "gemv_q4_k_dot" || (vec && decode == Q4KDecode::kIntDot);
  if (want_dot && !device.int_dot_usable) {
    return error(StatusCode::kUnsupported, "gemv_q4_k_dot needs shaderIntegerDotProduct and subgroups that divide 64 "
                                           "invocations");
  }
  const bool dot = want_dot || (vec && device.int_dot_usable && decode == Q4KDecode::kAuto && device.int_dot_fast &&
                                k >= kIntDotMinK);
  if (!dot || pinned.name == "gemv_q4_k_dot") return &pinned;
  const KernelInfo* info = find_kernel("gemv_q4_k_dot");
  if (info == nullptr) return error(StatusCode::kInternal, "gemv_q4_k_dot is not registered");
  return info;
}

}  // namespace rdrr::kernels
