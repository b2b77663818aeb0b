// Internal: the per-block kernels of the Q4_K quantizer, in a scalar and an AVX2 version (not public API).
//
// A Q4_K block has 8 sub-blocks of 32 values; every kernel works on all 8 at once with sub-block j in "lane" j
// (one AVX2 register holds one value of each sub-block), so the AVX2 kernels need no horizontal reductions and
// the scalar kernels reproduce them exactly by running the same per-lane operations in the same order. Both
// versions must give bit-identical results (no FMA; same rounding, same min/max/NaN semantics:
// min(a, b) = a < b ? a : b, max(a, b) = a > b ? a : b, round = nearest-even).
#pragma once

#include <cstdint>

namespace rdrr::quant::detail {

inline constexpr int kQ4KLanes = 8;   // sub-blocks per block
inline constexpr int kQ4KRows = 32;   // values per sub-block

using LaneF = float[kQ4KLanes];
using LaneI = int32_t[kQ4KLanes];
using BlockF = float[kQ4KRows][kQ4KLanes];  // [i][j] = value i of sub-block j

// One block, transposed: x[i][j] = src[32*j + i]; w likewise (objective weights, only read when weighted).
struct alignas(32) Q4KWork {
  BlockF x;
  BlockF w;
  bool weighted = false;
};

// make_qkx2's result for the 8 sub-blocks of one block.
struct alignas(32) Q4KRefFit {
  LaneF scale;     // >= 0 (0 for a flat sub-block)
  LaneF the_min;   // >= 0, the value subtracted
  BlockF levels;   // 0..15 as floats
};

// The encoder's continuous fit of one block: per sub-block x ~ D*q - M (D, M >= 0), and the sums of the
// block that the code search reuses.
struct alignas(32) Q4KFit {
  LaneF D, M;
  LaneF sw, sx, sxx;  // sum w, sum w*x, sum w*x^2 (w = 1 when unweighted)
};

// The encoder's choice for one block: 6-bit codes (0..63 as floats) and the levels (0..15 as floats).
struct alignas(32) Q4KCodes {
  LaneF sc, m;
  BlockF q;
};

struct Q4KKernels {
  // Transposes one block (and its weights, when not null) into wk.
  void (*load)(const float* src, const float* weights, Q4KWork& wk);
  // llama.cpp's make_qkx2_quants(32, 15, x, w = rms + |x|, rmin -1, rdelta 0.1, nstep 20) on each lane of
  // n_blocks (1 or 2; two are interleaved to hide latency) blocks, bit-exact.
  void (*ref_search)(const Q4KWork* wk, int n_blocks, Q4KRefFit* out);
  // llama.cpp's requantisation of every lane against D[j] = d*sc[j], M[j] = dmin*m[j]:
  // q = clamp(round((x + M) / D), 0, 15).
  void (*requant)(const Q4KWork& wk, const LaneF D, const LaneF M, BlockF q);
  // The encoder (see q4_k_search.inc): the continuous fit of every sub-block, then, for the block scales
  // d and dmin the caller derived from it, the 6-bit codes and levels.
  void (*fit)(const Q4KWork& wk, Q4KFit& out);
  void (*codes)(const Q4KWork& wk, const Q4KFit& fit, float d, float dmin, Q4KCodes& out);
  // Packs levels (0..15 as floats) into BlockQ4K::qs order: byte 32c + l = q[l][2c] | q[l][2c+1] << 4.
  void (*pack)(const BlockF q, uint8_t* qs);
};

const Q4KKernels& q4k_kernels_scalar();
const Q4KKernels& q4k_kernels_avx2();  // x86 builds only (RDRR_QUANT_X86); call only when cpu_has_avx2()

}  // namespace rdrr::quant::detail
