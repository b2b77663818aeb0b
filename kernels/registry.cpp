#include "kernels/registry.h"

#include <algorithm>
#include <array>

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;

constexpr DType kF32[] = {DType::kF32};
constexpr DType kF16[] = {DType::kF16};
constexpr DType kQ8_0[] = {DType::kQ8_0};
constexpr DType kQ6_K[] = {DType::kQ6_K};
constexpr DType kQ4_K[] = {DType::kQ4_K};
constexpr Layout kRowLayouts[] = {Layout::kFlat, Layout::kRowWise};
constexpr Layout kColumnWise[] = {Layout::kColumnWise};

constexpr BindingInfo kDequantBindings[] = {{0, "src", Access::kRead}, {1, "dst", Access::kWrite}};
constexpr BindingInfo kGemvBindings[] = {{0, "w", Access::kRead}, {1, "x", Access::kRead}, {2, "y", Access::kWrite}};
constexpr BindingInfo kGemvColBindings[] = {
    {0, "w", Access::kRead}, {1, "x", Access::kRead}, {2, "y", Access::kReadWrite}};
constexpr BindingInfo kGemvSplitBindings[] = {
    {0, "w", Access::kRead}, {1, "x", Access::kRead}, {2, "scratch", Access::kReadWrite}, {3, "y", Access::kWrite}};
constexpr BindingInfo kGemvReduceBindings[] = {{0, "partials", Access::kRead}, {1, "y", Access::kWrite}};
constexpr BindingInfo kNormBindings[] = {{0, "x", Access::kRead}, {1, "w", Access::kRead}, {2, "y", Access::kWrite}};
constexpr BindingInfo kAddBindings[] = {{0, "a", Access::kRead}, {1, "b", Access::kRead}, {2, "out", Access::kWrite}};
constexpr BindingInfo kGluBindings[] = {
    {0, "gate", Access::kRead}, {1, "up", Access::kRead}, {2, "out", Access::kWrite}};
constexpr BindingInfo kRopeBindings[] = {{0, "x", Access::kRead}, {1, "pos", Access::kRead}, {2, "y", Access::kWrite}};
constexpr BindingInfo kRopeFreqBindings[] = {
    {0, "x", Access::kRead}, {1, "pos", Access::kRead}, {2, "y", Access::kWrite}, {3, "freqs", Access::kRead}};
constexpr BindingInfo kGluSplitBindings[] = {{0, "gate_up", Access::kRead}, {1, "out", Access::kWrite}};
constexpr BindingInfo kAddNormBindings[] = {
    {0, "x", Access::kReadWrite}, {1, "res", Access::kRead}, {2, "w", Access::kRead}, {3, "y", Access::kWrite}};
constexpr BindingInfo kSoftcapBindings[] = {{0, "x", Access::kRead}, {1, "y", Access::kWrite}};
constexpr BindingInfo kEmbedBindings[] = {{0, "table", Access::kRead}, {1, "ids", Access::kRead}, {2, "out", Access::kWrite}};
constexpr BindingInfo kKvAppendBindings[] = {{0, "k_src", Access::kRead},
                                             {1, "v_src", Access::kRead},
                                             {2, "k_cache", Access::kWrite},
                                             {3, "v_cache", Access::kWrite}};
constexpr BindingInfo kKvAppendRopeBindings[] = {{0, "k_src", Access::kRead},   {1, "v_src", Access::kRead},
                                                 {2, "k_cache", Access::kWrite}, {3, "v_cache", Access::kWrite},
                                                 {4, "pos", Access::kRead},      {5, "freqs", Access::kRead}};
constexpr BindingInfo kAttnBindings[] = {
    {0, "q", Access::kRead}, {1, "k_cache", Access::kRead}, {2, "v_cache", Access::kRead}, {3, "out", Access::kWrite}};
constexpr BindingInfo kAttnSplitBindings[] = {
    {0, "q", Access::kRead}, {1, "k_cache", Access::kRead}, {2, "v_cache", Access::kRead}, {3, "partials", Access::kWrite}};
constexpr BindingInfo kAttnDecodeSplitBindings[] = {{0, "q", Access::kRead},
                                                     {1, "k_cache", Access::kRead},
                                                     {2, "v_cache", Access::kRead},
                                                     {3, "scratch", Access::kReadWrite},
                                                     {4, "out", Access::kWrite}};
constexpr BindingInfo kMergeBindings[] = {{0, "partials", Access::kRead}, {1, "out", Access::kWrite}};
constexpr BindingInfo kThresholdBindings[] = {{0, "logits", Access::kRead}, {1, "scratch", Access::kWrite}};
constexpr BindingInfo kPartialBindings[] = {{0, "logits", Access::kRead}, {1, "scratch", Access::kReadWrite}};
constexpr BindingInfo kFinalBindings[] = {{0, "scratch", Access::kRead}, {1, "token", Access::kWrite}};

constexpr SpecInfo kSpec128[] = {{0, "local_size_x", 128, SpecRole::kLocalSizeX}};
constexpr SpecInfo kSpec256[] = {{0, "local_size_x", 256, SpecRole::kLocalSizeX}};
constexpr SpecInfo kSpec64[] = {{0, "local_size_x", 64, SpecRole::kLocalSizeX}};
// Defaults measured on an H200 (bench_kernels tuning sweeps): one row per 64-invocation workgroup; the
// column path wants many input slices per output (runtime/ops raises local_size_y to the device limit).
constexpr SpecInfo kGemvSpec[] = {{0, "local_size_x", 64, SpecRole::kLocalSizeX},
                                  {1, "NUM_ROWS", 1, SpecRole::kTuning}};
constexpr SpecInfo kGemvColSpec[] = {{0, "local_size_x", 32, SpecRole::kLocalSizeX},
                                     {1, "local_size_y", 8, SpecRole::kLocalSizeY}};
// Vectorized Q4_K (gemv_q4k.comp): rows path reuses each x load for NUM_ROWS rows; the column split path
// has local_size_x items (32 outputs each) x local_size_y input slices per workgroup.
constexpr SpecInfo kGemvVecSpec[] = {{0, "local_size_x", 64, SpecRole::kLocalSizeX},
                                     {1, "NUM_ROWS", 4, SpecRole::kTuning},
                                     {2, "DIAG", 0, SpecRole::kTuning},
                                     {3, "UNROLL", 1, SpecRole::kTuning}};
// Q6_K on 32-bit words (gemv_q6k.comp).
constexpr SpecInfo kGemvWordsSpec[] = {{0, "local_size_x", 64, SpecRole::kLocalSizeX},
                                       {1, "NUM_ROWS", 2, SpecRole::kTuning}};
constexpr SpecInfo kGemvSplitSpec[] = {{0, "local_size_x", 8, SpecRole::kLocalSizeX},
                                       {1, "local_size_y", 32, SpecRole::kLocalSizeY},
                                       {2, "DIAG", 0, SpecRole::kTuning},
                                       {3, "UNROLL", 4, SpecRole::kTuning}};
constexpr SpecInfo kAttnDecodeSpec[] = {{0, "local_size_x", 128, SpecRole::kLocalSizeX},
                                        {1, "HEAD_DIM", 128, SpecRole::kTuning},
                                        {2, "PAIRS_PER_LANE", 2, SpecRole::kTuning}};
constexpr SpecInfo kGemvDotSpec[] = {{0, "local_size_x", 64, SpecRole::kLocalSizeX},
                                     {1, "local_size_y", 4, SpecRole::kLocalSizeY},
                                     {2, "NUM_ROWS", 4, SpecRole::kTuning},
                                     {3, "XCHUNK", 8192, SpecRole::kTuning}};
// gemm.comp tiles: TM = local_size_y * RM rows, TN = local_size_x * RN outputs, TK inputs per shared tile.
constexpr SpecInfo kGemmSpec[] = {{0, "local_size_x", 16, SpecRole::kLocalSizeX},
                                  {1, "local_size_y", 8, SpecRole::kLocalSizeY},
                                  {2, "RM", 2, SpecRole::kTuning},
                                  {3, "RN", 4, SpecRole::kTuning},
                                  {4, "TK", 32, SpecRole::kTuning}};
// The cooperative-matrix variants (gemm.comp COOPMAT) run only this tile: 4 subgroups of 32, TM 64, TN 128.
// DBUF (H100, bench_kernels gemm): K tiles loaded just in time for the block formats (Q4_K 14336x4096 M = 512:
// 1167 us against 1436 double-buffered), double-buffered for F16 (309 against 466 us at 4096x4096 M = 256).
constexpr std::array<SpecInfo, 6> gemm_cm_spec(uint32_t dbuf) {
  return {{{0, "local_size_x", 32, SpecRole::kLocalSizeX},
           {1, "local_size_y", 4, SpecRole::kLocalSizeY},
           {2, "RM", 16, SpecRole::kTuning},
           {3, "RN", 4, SpecRole::kTuning},
           {4, "TK", 32, SpecRole::kTuning},
           {5, "DBUF", dbuf, SpecRole::kTuning}}};
}
constexpr std::array<SpecInfo, 6> kGemmCmSpec = gemm_cm_spec(0);
constexpr std::array<SpecInfo, 6> kGemmCmF16Spec = gemm_cm_spec(1);
constexpr SpecInfo kGluSpec[] = {{0, "local_size_x", 256, SpecRole::kLocalSizeX}, {1, "ACT", 0, SpecRole::kTuning}};

constexpr std::string_view kElemGrid = "ceil(n / local_size_x) workgroups, folded into x and y";
constexpr std::string_view kAttnDecodeGrid = "n_heads * n_splits workgroups, folded into x and y";
constexpr std::string_view kGemvGrid = "ceil(n_rows / NUM_ROWS) workgroups, folded into x and y";
constexpr std::string_view kGemmGrid = "ceil(M / TM) * ceil(n_rows / TN) workgroups, folded into x and y";
constexpr std::string_view kRowGrid = "one workgroup per row, folded into x and y";
constexpr std::string_view kRopeGrid = "ceil(n_tokens * n_heads * head_dim / 2 / local_size_x) workgroups, folded into x and y";
constexpr std::string_view kEmbedGrid = "ceil(n_tokens * dim / local_size_x) workgroups, folded into x and y";
constexpr std::string_view kKvGrid = "ceil(n_tokens * n_kv_heads * head_dim / 2 / local_size_x) workgroups, folded";
constexpr std::string_view kAttnGrid = "n_q * n_heads * n_splits workgroups, folded into x and y";
constexpr std::string_view kOneGroup = "one workgroup";

constexpr KernelInfo kKernels[] = {
    {"dequant_q4_k", "dequant.comp", "main", "D_Q4_K", Op::kDequant, kQ4_K, {}, kDequantBindings, kSpec128, 8, kElemGrid},
    {"dequant_q6_k", "dequant.comp", "main", "D_Q6_K", Op::kDequant, kQ6_K, {}, kDequantBindings, kSpec128, 8, kElemGrid},
    {"dequant_q8_0", "dequant.comp", "main", "D_Q8_0", Op::kDequant, kQ8_0, {}, kDequantBindings, kSpec128, 8, kElemGrid},
    {"dequant_f16", "dequant.comp", "main", "D_F16", Op::kDequant, kF16, {}, kDequantBindings, kSpec128, 8, kElemGrid},
    {"gemv_f32", "gemv.comp", "main", "W_F32", Op::kGemv, kF32, kRowLayouts, kGemvBindings, kGemvSpec, 32, kGemvGrid},
    {"gemv_f16", "gemv.comp", "main", "W_F16", Op::kGemv, kF16, kRowLayouts, kGemvBindings, kGemvSpec, 32, kGemvGrid},
    {"gemv_q8_0", "gemv.comp", "main", "W_Q8_0", Op::kGemv, kQ8_0, kRowLayouts, kGemvBindings, kGemvSpec, 32, kGemvGrid},
    {"gemv_q6_k", "gemv.comp", "main", "W_Q6_K", Op::kGemv, kQ6_K, kRowLayouts, kGemvBindings, kGemvSpec, 32, kGemvGrid},
    {"gemv_q4_k", "gemv.comp", "main", "W_Q4_K", Op::kGemv, kQ4_K, kRowLayouts, kGemvBindings, kGemvSpec, 32, kGemvGrid},
    {"gemv_q4_k_col", "gemv.comp", "main", "W_Q4_K COLUMN_WISE", Op::kGemv, kQ4_K, kColumnWise, kGemvColBindings,
     kGemvColSpec, 32, "ceil(N / local_size_x) workgroups of local_size_x outputs x local_size_y input slices, folded"},
    // Picked by record_gemv (runtime/ops_gemv.cpp) when blocks are 16-byte aligned (and, for column_wise, a
    // split-K scratch is given); find_kernel returns the generic entries above.
    {"gemv_q4_k_vec", "gemv_q4k.comp", "main", "ROWS", Op::kGemv, kQ4_K, kRowLayouts, kGemvBindings, kGemvVecSpec, 32,
     kGemvGrid},
    {"gemv_q6_k_vec", "gemv_q6k.comp", "main", "", Op::kGemv, kQ6_K, kRowLayouts, kGemvBindings, kGemvWordsSpec, 32,
     kGemvGrid},
    {"gemv_q4_k_col_split", "gemv_q4k.comp", "main", "COLUMN_SPLIT", Op::kGemv, kQ4_K, kColumnWise, kGemvSplitBindings,
     kGemvSplitSpec, 64, "n_item_groups * ceil(k / k_chunk) workgroups, folded into x and y"},
    {"gemv_q4_k_dot", "gemv_q4k_dot.comp", "main", "", Op::kGemv, kQ4_K, kRowLayouts, kGemvBindings, kGemvDotSpec,
     32, "ceil(n_rows / (local_size_y * NUM_ROWS)) workgroups, folded into x and y"},
    {"gemv_reduce", "gemv_reduce.comp", "main", "", Op::kGemvReduce, kF32, {}, kGemvReduceBindings, kSpec256, 16,
     kElemGrid},
    {"gemm_f32", "gemm.comp", "main", "W_F32", Op::kGemm, kF32, kRowLayouts, kGemvBindings, kGemmSpec, 64, kGemmGrid},
    {"gemm_f16", "gemm.comp", "main", "W_F16", Op::kGemm, kF16, kRowLayouts, kGemvBindings, kGemmSpec, 64, kGemmGrid},
    {"gemm_q8_0", "gemm.comp", "main", "W_Q8_0", Op::kGemm, kQ8_0, kRowLayouts, kGemvBindings, kGemmSpec, 64, kGemmGrid},
    {"gemm_q6_k", "gemm.comp", "main", "W_Q6_K", Op::kGemm, kQ6_K, kRowLayouts, kGemvBindings, kGemmSpec, 64, kGemmGrid},
    {"gemm_q4_k", "gemm.comp", "main", "W_Q4_K", Op::kGemm, kQ4_K, kRowLayouts, kGemvBindings, kGemmSpec, 64, kGemmGrid},
    {"gemm_q4_k_col", "gemm.comp", "main", "W_Q4_K COLUMN_WISE", Op::kGemm, kQ4_K, kColumnWise, kGemvColBindings,
     kGemmSpec, 64, kGemmGrid},
    // Cooperative-matrix variants (f16 products, f32 sums): picked by record_gemm (runtime/ops_gemm.cpp) where
    // the device has VK_NV_cooperative_matrix's 16x16x16 f16 shape and the pack pins them; find_kernel returns
    // the entries above.
    {"gemm_f16_cm", "gemm.comp", "main", "W_F16 COOPMAT", Op::kGemm, kF16, kRowLayouts, kGemvBindings, kGemmCmF16Spec,
     64, kGemmGrid},
    {"gemm_q8_0_cm", "gemm.comp", "main", "W_Q8_0 COOPMAT", Op::kGemm, kQ8_0, kRowLayouts, kGemvBindings, kGemmCmSpec,
     64, kGemmGrid},
    {"gemm_q6_k_cm", "gemm.comp", "main", "W_Q6_K COOPMAT", Op::kGemm, kQ6_K, kRowLayouts, kGemvBindings, kGemmCmSpec,
     64, kGemmGrid},
    {"gemm_q4_k_cm", "gemm.comp", "main", "W_Q4_K COOPMAT", Op::kGemm, kQ4_K, kRowLayouts, kGemvBindings, kGemmCmSpec,
     64, kGemmGrid},
    {"gemm_q4_k_col_cm", "gemm.comp", "main", "W_Q4_K COLUMN_WISE COOPMAT", Op::kGemm, kQ4_K, kColumnWise,
     kGemvColBindings, kGemmCmSpec, 64, kGemmGrid},
    {"rms_norm", "rmsnorm.comp", "main", "", Op::kRmsNorm, kF32, {}, kNormBindings, kSpec128, 20, kRowGrid},
    {"add", "add.comp", "main", "", Op::kAdd, kF32, {}, kAddBindings, kSpec256, 8, kElemGrid},
    {"add_bias", "add.comp", "main", "BROADCAST", Op::kAdd, kF32, {}, kAddBindings, kSpec256, 16, kElemGrid},
    {"glu", "glu.comp", "main", "", Op::kGatedAct, kF32, {}, kGluBindings, kGluSpec, 8, kElemGrid},
    {"rope", "rope.comp", "main", "", Op::kRope, kF32, {}, kRopeBindings, kSpec128, 36, kRopeGrid},
    {"rope_freqs", "rope.comp", "main", "FREQ_TABLE", Op::kRope, kF32, {}, kRopeFreqBindings, kSpec128, 36, kRopeGrid},
    {"glu_split", "glu.comp", "main", "SPLIT", Op::kGatedAct, kF32, {}, kGluSplitBindings, kGluSpec, 12, kElemGrid},
    {"add_rms_norm", "add_rmsnorm.comp", "main", "", Op::kAddRmsNorm, kF32, {}, kAddNormBindings, kSpec128, 20, kRowGrid},
    {"softcap", "softcap.comp", "main", "", Op::kSoftcap, kF32, {}, kSoftcapBindings, kSpec256, 12, kElemGrid},
    {"embed_f32", "embed.comp", "main", "E_F32", Op::kEmbed, kF32, kRowLayouts, kEmbedBindings, kSpec128, 48, kEmbedGrid},
    {"embed_f16", "embed.comp", "main", "E_F16", Op::kEmbed, kF16, kRowLayouts, kEmbedBindings, kSpec128, 48, kEmbedGrid},
    {"embed_q8_0", "embed.comp", "main", "E_Q8_0", Op::kEmbed, kQ8_0, kRowLayouts, kEmbedBindings, kSpec128, 48, kEmbedGrid},
    {"embed_q6_k", "embed.comp", "main", "E_Q6_K", Op::kEmbed, kQ6_K, kRowLayouts, kEmbedBindings, kSpec128, 48, kEmbedGrid},
    {"embed_q4_k", "embed.comp", "main", "E_Q4_K", Op::kEmbed, kQ4_K, kRowLayouts, kEmbedBindings, kSpec128, 48, kEmbedGrid},
    {"embed_q4_k_col", "embed.comp", "main", "E_Q4_K COLUMN_WISE", Op::kEmbed, kQ4_K, kColumnWise, kEmbedBindings,
     kSpec128, 48, kEmbedGrid},
    {"kv_append_f32", "kv_append.comp", "main", "KV_F32", Op::kKvAppend, kF32, {}, kKvAppendBindings, kSpec128, 24, kKvGrid},
    {"kv_append_f16", "kv_append.comp", "main", "KV_F16", Op::kKvAppend, kF16, {}, kKvAppendBindings, kSpec128, 24, kKvGrid},
    {"kv_append_rope_f32", "kv_append.comp", "main", "KV_F32 ROPE", Op::kKvAppendRope, kF32, {}, kKvAppendRopeBindings,
     kSpec128, 48, kKvGrid},
    {"kv_append_rope_f16", "kv_append.comp", "main", "KV_F16 ROPE", Op::kKvAppendRope, kF16, {}, kKvAppendRopeBindings,
     kSpec128, 48, kKvGrid},
    {"attention_f32", "attention.comp", "main", "KV_F32", Op::kAttention, kF32, {}, kAttnBindings, kSpec128, 48, kAttnGrid},
    {"attention_f16", "attention.comp", "main", "KV_F16", Op::kAttention, kF16, {}, kAttnBindings, kSpec128, 48, kAttnGrid},
    {"attention_split_f32", "attention.comp", "main", "KV_F32 SPLIT", Op::kAttention, kF32, {}, kAttnSplitBindings,
     kSpec128, 48, kAttnGrid},
    {"attention_split_f16", "attention.comp", "main", "KV_F16 SPLIT", Op::kAttention, kF16, {}, kAttnSplitBindings,
     kSpec128, 48, kAttnGrid},
    {"attention_decode_f32", "attention_decode.comp", "main", "KV_F32", Op::kAttention, kF32, {}, kAttnBindings,
     kAttnDecodeSpec, 48, kAttnDecodeGrid},
    {"attention_decode_f16", "attention_decode.comp", "main", "KV_F16", Op::kAttention, kF16, {}, kAttnBindings,
     kAttnDecodeSpec, 48, kAttnDecodeGrid},
    {"attention_decode_split_f32", "attention_decode.comp", "main", "KV_F32 SPLIT", Op::kAttention, kF32, {},
     kAttnDecodeSplitBindings, kAttnDecodeSpec, 64, kAttnDecodeGrid},
    {"attention_decode_split_f16", "attention_decode.comp", "main", "KV_F16 SPLIT", Op::kAttention, kF16, {},
     kAttnDecodeSplitBindings, kAttnDecodeSpec, 64, kAttnDecodeGrid},
    {"attn_merge", "attn_merge.comp", "main", "", Op::kAttentionMerge, kF32, {}, kMergeBindings, kSpec64, 16, kRowGrid},
    {"sample_threshold", "sample.comp", "main", "STAGE_THRESHOLD", Op::kSample, kF32, {}, kThresholdBindings, kSpec256,
     16, kOneGroup},
    {"sample_partial", "sample.comp", "main", "STAGE_PARTIAL", Op::kSample, kF32, {}, kPartialBindings, kSpec256, 32,
     "ceil(n / chunk) workgroups, folded into x and y"},
    {"sample_final", "sample.comp", "main", "STAGE_FINAL", Op::kSample, kF32, {}, kFinalBindings, kSpec256, 16, kOneGroup},
};

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kDequant: return "dequant";
    case Op::kGemv: return "gemv";
    case Op::kRmsNorm: return "rms_norm";
    case Op::kAdd: return "add";
    case Op::kGatedAct: return "gated_act";
    case Op::kRope: return "rope";
    case Op::kAddRmsNorm: return "add_rms_norm";
    case Op::kSoftcap: return "softcap";
    case Op::kEmbed: return "embed";
    case Op::kKvAppend: return "kv_append";
    case Op::kAttention: return "attention";
    case Op::kAttentionMerge: return "attention_merge";
    case Op::kSample: return "sample";
    case Op::kGemvReduce: return "gemv_reduce";
    case Op::kGemm: return "gemm";
    case Op::kKvAppendRope: return "kv_append_rope";
  }
  return "?";
}

std::span<const KernelInfo> all_kernels() { return kKernels; }

const KernelInfo* find_kernel(std::string_view name) {
  for (const KernelInfo& k : kKernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const KernelInfo* find_kernel(Op op, quant::DType dtype, quant::Layout layout) {
  for (const KernelInfo& k : kKernels) {
    if (k.op != op) continue;
    if (std::find(k.dtypes.begin(), k.dtypes.end(), dtype) == k.dtypes.end()) continue;
    if (!k.layouts.empty() && std::find(k.layouts.begin(), k.layouts.end(), layout) == k.layouts.end()) continue;
    return &k;
  }
  return nullptr;
}

const SpirvBlob* kernel_spirv(const KernelInfo& k) { return find_spirv(k.name); }

const SpirvBlob* find_spirv(std::string_view name) {
  for (const SpirvBlob& b : spirv_blobs()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

}  // namespace rdrr::kernels
