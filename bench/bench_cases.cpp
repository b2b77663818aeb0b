// bench_kernels' case lists (bench_cases.h).
#include "bench/bench_cases.h"

#include <cstdio>

namespace rdrr::bench {
namespace {

using quant::DType;
using quant::Layout;
using runtime::GemmTuning;
using runtime::GemvTuning;

std::string tune_label(const char* a, uint32_t va, const char* b, uint32_t vb) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%u%s%u", a, va, b, vb);
  return buf;
}

std::string num_label(const char* a, uint32_t va) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%u", a, va);
  return buf;
}

}  // namespace

// Prefill matmuls: the automatic tile (f32 products, and the cooperative-matrix kernels where the device has
// them) and, with --tune, other tiles {local_size_x, local_size_y, RM, RN, TK, dbuf, wn} (TM = local_size_y * RM
// tokens, TN = local_size_x * RN outputs per workgroup; cooperative matrices: local_size_y subgroups of 32, wn
// of them across N).
std::vector<GemmCase> gemm_cases(bool tune) {
  std::vector<GemmCase> c = {{DType::kQ4_K, Layout::kRowWise, {}, ""},
                             {DType::kQ4_K, Layout::kColumnWise, {}, ""},
                             {DType::kQ6_K, Layout::kRowWise, {}, ""},
                             {DType::kQ4_K, Layout::kRowWise, {}, "cm", true},
                             {DType::kQ4_K, Layout::kColumnWise, {}, "cm", true},
                             {DType::kQ6_K, Layout::kRowWise, {}, "cm", true},
                             {DType::kQ8_0, Layout::kRowWise, {}, "cm", true},
                             {DType::kF16, Layout::kRowWise, {}, "cm", true}};
  if (!tune) return c;
  // Cooperative-matrix tiles {0, subgroups, RM, RN, TK, dbuf (1: one shared stage, 2: two), wn}: TM 64 / 128,
  // TN 64 / 128, 4 / 8 subgroups, TK 32 / 64 (TK 64 with one stage: two exceed 48 KiB at TM 128 x TN 128).
  const std::pair<GemmTuning, const char*> cm_tiles[] = {
      {{0, 8, 16, 4, 64, 1, 2}, "cm 8sg tk64"},  {{0, 4, 16, 2, 32, 2, 2}, "cm tm64 tn64"},
      {{0, 4, 32, 4, 32, 2, 2}, "cm 4sg"},       {{0, 8, 16, 4, 32, 2, 2}, "cm 8sg tk32"},
      {{0, 8, 16, 4, 64, 1, 4}, "cm 8sg tk64 wn4"}, {{0, 4, 16, 4, 32, 2, 2}, "cm tm64"}};
  for (const auto& [t, label] : cm_tiles) c.push_back({DType::kQ4_K, Layout::kRowWise, t, label, true});
  for (size_t i : {0, 1, 2}) {
    c.push_back({DType::kQ4_K, Layout::kColumnWise, cm_tiles[i].first, cm_tiles[i].second, true});
    c.push_back({DType::kQ6_K, Layout::kRowWise, cm_tiles[i].first, cm_tiles[i].second, true});
    c.push_back({DType::kF16, Layout::kRowWise, cm_tiles[i].first, cm_tiles[i].second, true});
  }
  const GemmTuning tiles[] = {{16, 8, 4, 4, 32}, {16, 8, 8, 4, 32}, {32, 4, 8, 2, 32}, {16, 16, 4, 8, 32},
                              {32, 8, 4, 4, 32}, {16, 16, 8, 8, 32}};
  for (const GemmTuning& t : tiles) {
    const std::string label =
        tune_label("lx", t.local_size_x, "_ly", t.local_size_y) + tune_label("_rm", t.rm, "_rn", t.rn);
    c.push_back({DType::kQ4_K, Layout::kRowWise, t, label});
    c.push_back({DType::kQ4_K, Layout::kColumnWise, t, label});
  }
  return c;
}

std::vector<GemvCase> gemv_cases(bool tune) {
  std::vector<GemvCase> c = {
      {DType::kF32, Layout::kRowWise, {}, ""},         {DType::kF16, Layout::kRowWise, {}, ""},
      {DType::kQ8_0, Layout::kRowWise, {}, ""},        {DType::kQ8_0, Layout::kFlat, {}, ""},
      {DType::kQ6_K, Layout::kRowWise, {}, ""},        {DType::kQ6_K, Layout::kFlat, {}, ""},
      {DType::kQ4_K, Layout::kFlat, {}, ""},           {DType::kQ4_K, Layout::kRowWise, {}, ""},
      {DType::kQ4_K, Layout::kColumnWise, {}, ""},     {DType::kQ5_K, Layout::kRowWise, {}, ""},
  };
  // Independent calls (no barrier between them): how much of a call is the fixed dispatch cost.
  for (DType d : {DType::kF16, DType::kQ8_0, DType::kQ6_K, DType::kQ4_K}) c.push_back({d, Layout::kRowWise, {}, "indep", true});
  c.push_back({DType::kQ4_K, Layout::kColumnWise, {}, "indep", true});
  if (!tune) return c;
  GemvTuning f32_decode;
  f32_decode.decode = 1;
  c.push_back({DType::kQ4_K, Layout::kRowWise, f32_decode, "f32 indep", true});
  GemvTuning dot_decode;
  dot_decode.decode = 2;
  c.push_back({DType::kQ4_K, Layout::kRowWise, dot_decode, "dot indep", true});
  GemvTuning col_stream;  // column split, the weight stream alone (not a real GEMV)
  col_stream.diag = 18;
  c.push_back({DType::kQ4_K, Layout::kColumnWise, col_stream, "diag18 indep", true});
  // Specialization sweeps. Rows path {local_size_x, num_rows, -, -, diag, unroll}; diag rows are not real
  // GEMVs (1: no x reads, 2: no decode, 3: neither) and show which resource bounds the kernel.
  const GemvTuning row_tunes[] = {{128, 4, 0, 0, 0, 0}, {64, 4, 0, 0, 0, 0}, {32, 4, 0, 0, 0, 0},
                                  {64, 8, 0, 0, 0, 0},  {32, 4, 0, 0, 0, 2}, {64, 4, 0, 0, 1, 0},
                                  {64, 4, 0, 0, 2, 0},  {64, 4, 0, 0, 3, 0},
                                  {32, 8, 0, 0, 0, 0},  {32, 2, 0, 0, 0, 0}};
  // Integer-dot rows kernel: {local_size_x, num_rows, -, -, -, -, decode 2, row groups}; and the f32 decode.
  const GemvTuning dot_tunes[] = {{0, 0, 0, 0, 0, 0, 1, 0}, {64, 8, 0, 0, 0, 0, 2, 4}, {64, 2, 0, 0, 0, 0, 2, 8},
                                  {64, 2, 0, 0, 0, 0, 2, 4}, {64, 4, 0, 0, 0, 0, 2, 2}, {64, 8, 0, 0, 0, 0, 2, 2},
                                  {64, 4, 0, 0, 0, 0, 2, 8}};
  // The generic row kernel (gemv.comp) of F32 / F16 / Q8_0 {local_size_x, NUM_ROWS}: invocations per row against
  // the rows in flight.
  const GemvTuning generic_tunes[] = {{32, 1}, {128, 1}, {256, 1}, {64, 2}, {128, 2}, {256, 2}};
  for (DType d : {DType::kF32, DType::kF16, DType::kQ8_0}) {
    for (const GemvTuning& t : generic_tunes) {
      c.push_back({d, Layout::kRowWise, t, tune_label("wg", t.local_size_x, "_rows", t.num_rows)});
    }
  }
  // Q6_K rows on words (gemv_q6k.comp) {local_size_x, NUM_ROWS}.
  const GemvTuning q6_tunes[] = {{64, 1}, {64, 4}, {32, 2}, {128, 2}, {128, 1}, {32, 4}};
  for (const GemvTuning& t : q6_tunes) {
    c.push_back({DType::kQ6_K, Layout::kRowWise, t, tune_label("wg", t.local_size_x, "_rows", t.num_rows)});
  }
  for (const GemvTuning& t : dot_tunes) {
    std::string v = t.decode == 1 ? "f32" : tune_label("dot_rg", t.row_groups, "_rows", t.num_rows);
    c.push_back({DType::kQ4_K, Layout::kRowWise, t, v});
    if (t.decode == 2) c.push_back({DType::kQ4_K, Layout::kRowWise, t, v + " indep", true});
  }
  for (GemvTuning t : row_tunes) {
    t.decode = 1;  // the f32 decode's sweeps
    std::string v = tune_label("wg", t.local_size_x, "_rows", t.num_rows);
    if (t.diag) v += num_label("_diag", t.diag);
    if (t.unroll) v += num_label("_u", t.unroll);
    c.push_back({DType::kQ4_K, Layout::kRowWise, t, v});
    c.push_back({DType::kQ4_K, Layout::kRowWise, t, v + " indep", true});
  }
  // Column split path {items per workgroup, -, input slices, inputs per split (0 = auto), diag, unroll}, each
  // serialized and independent; diag 2: no decode, 16: no epilogue (slice sums, partials, merge), 18: neither.
  // Longer splits trade latency for throughput: fewer partials and merges, fewer workgroups per call.
  const GemvTuning col_tunes[] = {{8, 0, 32, 0, 16},   {8, 0, 32, 0, 18},   {8, 0, 32, 0, 2},  {8, 0, 32, 1024},
                                  {8, 0, 32, 2048},    {8, 0, 32, 4096},    {8, 0, 32, 512},   {8, 0, 16, 2048},
                                  {8, 0, 16, 0},       {8, 0, 32, 0, 0, 2}, {8, 0, 16, 0, 0, 2}};
  for (const GemvTuning& t : col_tunes) {
    std::string v = tune_label("x", t.local_size_x, "_ks", t.k_split);
    if (t.k_chunk) v += num_label("_kc", t.k_chunk);
    if (t.diag) v += num_label("_diag", t.diag);
    if (t.unroll) v += num_label("_u", t.unroll);
    c.push_back({DType::kQ4_K, Layout::kColumnWise, t, v});
    c.push_back({DType::kQ4_K, Layout::kColumnWise, t, v + " indep", true});
  }
  return c;
}

// Expert GEMVs: the automatic kernel of each mode and dtype, the generic kernel beside the vectorized one, the
// fused route + gather + activation of Q4_K, and, with --tune, {local_size_x, NUM_ROWS, UNROLL} sweeps of the
// vectorized kernels.
std::vector<MoeCase> moe_cases(bool tune) {
  std::vector<MoeCase> c;
  for (bool combine : {false, true}) {
    for (DType d : {DType::kQ4_K, DType::kQ6_K}) {
      c.push_back({d, combine, {}, "", ""});
      const std::string generic = std::string(combine ? "moe_gemv_combine_" : "moe_gemv_") +
                                  (d == DType::kQ4_K ? "q4_k" : "q6_k");
      c.push_back({d, combine, {}, "generic", generic});
    }
    c.push_back({DType::kQ8_0, combine, {}, "", ""});
    if (!combine) c.push_back({DType::kQ4_K, false, {}, "", "", true});
    if (!tune) continue;
    for (uint32_t lx : {32u, 64u, 128u}) {
      for (uint32_t rows : {1u, 2u, 4u, 8u}) {
        for (uint32_t unroll : {1u, 2u}) {
          const std::string label = tune_label("wg", lx, "_rows", rows) + "_u" + std::to_string(unroll);
          c.push_back({DType::kQ4_K, combine, {lx, rows, unroll}, label, ""});
          if (!combine && rows % 2 == 0) c.push_back({DType::kQ4_K, false, {lx, rows, unroll}, label, "", true});
        }
        if (rows <= 4) c.push_back({DType::kQ6_K, combine, {lx, rows}, tune_label("wg", lx, "_rows", rows), ""});
      }
    }
  }
  return c;
}

}  // namespace rdrr::bench
