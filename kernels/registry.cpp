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
constexpr DType kQ4_0[] = {DType::kQ4_0};
constexpr DType kQ5_0[] = {DType::kQ5_0};
constexpr DType kQ5_K[] = {DType::kQ5_K};
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
constexpr BindingInfo kRopeNormBindings[] = {
    {0, "x", Access::kRead}, {1, "pos", Access::kRead}, {2, "y", Access::kWrite}, {3, "w", Access::kRead}};
constexpr BindingInfo kRopeFreqNormBindings[] = {{0, "x", Access::kRead},
                                                 {1, "pos", Access::kRead},
                                                 {2, "y", Access::kWrite},
                                                 {3, "freqs", Access::kRead},
                                                 {4, "w", Access::kRead}};
constexpr BindingInfo kGluSplitBindings[] = {{0, "gate_up", Access::kRead}, {1, "out", Access::kWrite}};
constexpr BindingInfo kSplitQkvBindings[] = {
    {0, "qkv", Access::kRead}, {1, "q", Access::kWrite}, {2, "k", Access::kWrite}, {3, "v", Access::kWrite}};
constexpr BindingInfo kAddNormBindings[] = {
    {0, "x", Access::kReadWrite}, {1, "res", Access::kRead}, {2, "w", Access::kRead}, {3, "y", Access::kWrite}};
// Elementwise unary kernels (Op::kUnary): push {n, param, n_groups}.
constexpr BindingInfo kUnaryBindings[] = {{0, "x", Access::kRead}, {1, "y", Access::kWrite}};
constexpr BindingInfo kEmbedBindings[] = {{0, "table", Access::kRead}, {1, "ids", Access::kRead}, {2, "out", Access::kWrite}};
constexpr BindingInfo kKvAppendBindings[] = {{0, "k_src", Access::kRead},
                                             {1, "v_src", Access::kRead},
                                             {2, "k_cache", Access::kWrite},
                                             {3, "v_cache", Access::kWrite}};
constexpr BindingInfo kKvAppendRopeBindings[] = {{0, "k_src", Access::kRead},   {1, "v_src", Access::kRead},
                                                 {2, "k_cache", Access::kWrite}, {3, "v_cache", Access::kWrite},
                                                 {4, "pos", Access::kRead},      {5, "freqs", Access::kRead}};
constexpr BindingInfo kKvAppendNormRopeBindings[] = {{0, "k_src", Access::kRead},   {1, "v_src", Access::kRead},
                                                     {2, "k_cache", Access::kWrite}, {3, "v_cache", Access::kWrite},
                                                     {4, "pos", Access::kRead},      {5, "freqs", Access::kRead},
                                                     {6, "w", Access::kRead}};
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
constexpr BindingInfo kMoeRouteBindings[] = {
    {0, "logits", Access::kRead}, {1, "ids", Access::kWrite}, {2, "weights", Access::kWrite}};
constexpr BindingInfo kMoeGemvBindings[] = {
    {0, "w", Access::kRead}, {1, "x", Access::kRead}, {2, "ids", Access::kRead}, {3, "y", Access::kWrite}};
constexpr BindingInfo kMoeCombineBindings[] = {{0, "w", Access::kRead},
                                               {1, "x", Access::kRead},
                                               {2, "ids", Access::kRead},
                                               {3, "weights", Access::kRead},
                                               {4, "y", Access::kWrite}};
constexpr BindingInfo kMoeRouteGluBindings[] = {{0, "w", Access::kRead},      {1, "x", Access::kRead},
                                                {2, "router", Access::kRead}, {3, "ids", Access::kWrite},
                                                {4, "weights", Access::kWrite}, {5, "act", Access::kWrite}};
constexpr BindingInfo kGatedAddBindings[] = {{0, "g", Access::kRead}, {1, "s", Access::kRead}, {2, "y", Access::kReadWrite}};

constexpr SpecInfo kSpec128[] = {{0, "local_size_x", 128, SpecRole::kLocalSizeX}};
constexpr SpecInfo kSpec256[] = {{0, "local_size_x", 256, SpecRole::kLocalSizeX}};
constexpr SpecInfo kSpec64[] = {{0, "local_size_x", 64, SpecRole::kLocalSizeX}};
// Defaults from bench_kernels tuning sweeps (bench/README.md): one row per 64-invocation workgroup; the
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
// gemv_q4k.comp ROWS MOE ROUTE_GLU: NUM_ROWS / 2 gate / up row pairs per workgroup (4 pairs: bench/README.md), ACT
// the gated activation.
constexpr SpecInfo kGemvRouteGluSpec[] = {{0, "local_size_x", 64, SpecRole::kLocalSizeX},
                                          {1, "NUM_ROWS", 8, SpecRole::kTuning},
                                          {2, "DIAG", 0, SpecRole::kTuning},
                                          {3, "UNROLL", 1, SpecRole::kTuning},
                                          {4, "ACT", 0, SpecRole::kTuning}};
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
// attention_prefill.comp: ROWS = local_size_x / 4 query rows, BK positions per tile (the runtime sizes both to
// the device's shared memory).
constexpr SpecInfo kAttnPrefillSpec[] = {{0, "local_size_x", 128, SpecRole::kLocalSizeX},
                                         {1, "HEAD_DIM", 128, SpecRole::kTuning},
                                         {2, "BK", 16, SpecRole::kTuning}};
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
// The cooperative-matrix variants (gemm.comp COOPMAT): subgroups of 32 (local_size_x), TM = local_size_y * RM,
// TN = 32 * RN, WN subgroups across N. Registry tile: 8 subgroups of 32 x 64, TM 128 x TN 128, TK 64, one shared
// stage (two stages of TK 64 exceed 48 KiB); record_gemm runs other tiles for short passes and large grids
// (runtime/ops_gemm.cpp cm_auto_tile, bench/README.md GEMM).
constexpr SpecInfo kGemmCmSpec[] = {{0, "local_size_x", 32, SpecRole::kLocalSizeX},
                                    {1, "local_size_y", 8, SpecRole::kLocalSizeY},
                                    {2, "RM", 16, SpecRole::kTuning},
                                    {3, "RN", 4, SpecRole::kTuning},
                                    {4, "TK", 64, SpecRole::kTuning},
                                    {5, "DBUF", 0, SpecRole::kTuning},
                                    {6, "WN", 2, SpecRole::kTuning}};
constexpr SpecInfo kGluSpec[] = {{0, "local_size_x", 256, SpecRole::kLocalSizeX}, {1, "ACT", 0, SpecRole::kTuning}};

constexpr std::string_view kElemGrid = "ceil(n / local_size_x) workgroups, folded into x and y";
constexpr std::string_view kAttnDecodeGrid = "n_heads * n_splits workgroups, folded into x and y";
constexpr std::string_view kGemvGrid = "ceil(n_rows / NUM_ROWS) workgroups, folded into x and y";
constexpr std::string_view kGemmGrid = "ceil(M / TM) * ceil(n_rows / TN) workgroups, folded into x and y";
constexpr std::string_view kRowGrid = "one workgroup per row, folded into x and y";
constexpr std::string_view kRopeGrid = "ceil(n_tokens * n_heads * head_dim / 2 / local_size_x) workgroups, folded into x and y";
constexpr std::string_view kEmbedGrid = "ceil(n_tokens * dim / local_size_x) workgroups, folded into x and y";
constexpr std::string_view kHeadRowGrid = "n_tokens * n_heads workgroups (one head each), folded into x and y";
constexpr std::string_view kKvGrid = "ceil(n_tokens * n_kv_heads * head_dim / 2 / local_size_x) workgroups, folded";
constexpr std::string_view kAttnGrid = "n_q * n_heads * n_splits workgroups, folded into x and y";
constexpr std::string_view kAttnPrefillGrid =
    "n_kv_heads * ceil(n_q * n_heads / n_kv_heads / (local_size_x / 4)) workgroups, folded into x and y";
constexpr std::string_view kOneGroup = "one workgroup";
constexpr std::string_view kMoeGemvGrid = "ceil(n_rows / NUM_ROWS) * M * T workgroups, folded into x and y";
constexpr std::string_view kMoeCombineGrid = "ceil(n_rows / NUM_ROWS) * M workgroups, folded into x and y";
constexpr std::string_view kMoeRouteGluGrid =
    "ceil(n_rows / 2 / (NUM_ROWS / 2)) * M * T workgroups, folded into x and y";

constexpr std::span<const Layout> kNoLayouts{};  // layouts do not apply (not a weight-reading kernel)

// The kernel list (kernels/kernel_list.inc, also read by CMake), every field.
#define RDRR_KERNEL(name, file, defines, op, dtypes, layouts, bindings, spec, push, grid) \
  {#name, file, "main", defines, Op::op, dtypes, layouts, bindings, spec, push, grid},
constexpr KernelInfo kKernels[] = {
#include "kernels/kernel_list.inc"
};
#undef RDRR_KERNEL

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
    case Op::kUnary: return "unary";
    case Op::kEmbed: return "embed";
    case Op::kKvAppend: return "kv_append";
    case Op::kAttention: return "attention";
    case Op::kAttentionMerge: return "attention_merge";
    case Op::kSample: return "sample";
    case Op::kGemvReduce: return "gemv_reduce";
    case Op::kGemm: return "gemm";
    case Op::kKvAppendRope: return "kv_append_rope";
    case Op::kSplit: return "split";
    case Op::kMoeRoute: return "moe_route";
    case Op::kMoeGemv: return "moe_gemv";
    case Op::kMoeGemvCombine: return "moe_gemv_combine";
    case Op::kMoeGemvRouteGlu: return "moe_gemv_route_glu";
    case Op::kGatedAdd: return "gated_add";
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
