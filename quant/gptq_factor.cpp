// gptq_factor (quant/gptq.h): GPTQ's factor T (H = T T^T, T upper) through the BLAS, tiled so that oneTBB spreads the
// tiles and every tile is one single-threaded BLAS call on a fixed grid: the same bits at any thread count.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cmath>
#include <string>
#include <utility>

#include "quant/blas.h"
#include "quant/gptq.h"

extern "C" void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t uplo_len);

namespace rdrr::quant {
namespace {

constexpr int64_t kTile = 256;         // Cholesky tiles (rows and columns)

// Lower Cholesky factor of a (row-major n x n, lower triangle used, in place), right-looking over kTile
// tiles: factor the diagonal tile, solve the tiles below it, update the trailing tiles. Returns the first
// non-positive pivot, or -1.
int64_t cholesky_lower(float* a, int64_t n) {
  const int ni = static_cast<int>(n);
  for (int64_t j0 = 0; j0 < n; j0 += kTile) {
    const int64_t jb = std::min(kTile, n - j0);
    float* d = a + j0 * n + j0;
    // Row-major lower == column-major upper of the same memory.
    int info = 0;
    const int jbi = static_cast<int>(jb);
    spotrf_("U", &jbi, d, &ni, &info, 1);
    if (info != 0) return j0 + info - 1;
    const int64_t below = (n - j0 - jb + kTile - 1) / kTile;
    tbb::parallel_for(int64_t{0}, below, [&](int64_t t) {  // L[i, j] = A[i, j] L[j, j]^-T
      const int64_t i0 = j0 + jb + t * kTile, ib = std::min(kTile, n - i0);
      cblas_strsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, static_cast<int>(ib), jbi, 1.0f,
                  d, ni, a + i0 * n + j0, ni);
    });
    const int64_t pairs = below * (below + 1) / 2;
    tbb::parallel_for(int64_t{0}, pairs, [&](int64_t p) {  // A[i, k] -= L[i, j] L[k, j]^T, k <= i
      int64_t ti = static_cast<int64_t>((std::sqrt(8.0 * static_cast<double>(p) + 1.0) - 1.0) / 2.0);
      while (ti * (ti + 1) / 2 > p) --ti;
      while ((ti + 1) * (ti + 2) / 2 <= p) ++ti;
      const int64_t tk = p - ti * (ti + 1) / 2;
      const int64_t i0 = j0 + jb + ti * kTile, k0 = j0 + jb + tk * kTile;
      const int64_t ib = std::min(kTile, n - i0), kb = std::min(kTile, n - k0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(ib), static_cast<int>(kb), jbi, -1.0f,
                  a + i0 * n + j0, ni, a + k0 * n + j0, ni, 1.0f, a + i0 * n + k0, ni);
    });
  }
  return -1;
}

// h := P H P^T in place, from H's lower triangle (row-major n x n): position i takes input src(i). H is first
// made symmetric, then its rows are moved along the permutation's cycles and each row's values permuted, with
// one row of extra memory per task (so a factor's peak is H's own memory plus its packed panels).
template <typename Src>
void permute_symmetric(UninitVector<float>& h, int64_t n, const Src& src) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 64), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      for (int64_t j = i + 1; j < n; ++j) h[i * n + j] = h[j * n + i];  // upper from lower: disjoint
    }
  });
  std::vector<uint8_t> moved(static_cast<size_t>(n), 0);
  std::vector<float> row(static_cast<size_t>(n));
  const auto row_at = [&](int64_t i) { return h.begin() + i * n; };
  for (int64_t s = 0; s < n; ++s) {
    if (moved[s] != 0) continue;
    std::copy(row_at(s), row_at(s) + n, row.begin());
    for (int64_t i = s;;) {
      moved[i] = 1;
      const int64_t from = src(i);
      if (from == s) {
        std::copy(row.begin(), row.end(), row_at(i));
        break;
      }
      std::copy(row_at(from), row_at(from) + n, row_at(i));
      i = from;
    }
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 64), [&](const tbb::blocked_range<int64_t>& r) {
    std::vector<float> tmp(static_cast<size_t>(n));
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      float* hi = h.data() + i * n;
      for (int64_t j = 0; j < n; ++j) tmp[j] = hi[src(j)];
      std::copy(tmp.begin(), tmp.end(), hi);
    }
  });
}

}  // namespace

Result<GptqFactor> gptq_factor(std::span<const double> hessian, int64_t k_cols, double damp, bool act_order) {
  // NaN and Inf stay so in float (and doubles beyond float's range become Inf): the float overload reports them.
  UninitVector<float> h(hessian.size());
  std::transform(hessian.begin(), hessian.end(), h.begin(), [](double v) { return static_cast<float>(v); });
  return gptq_factor(std::move(h), k_cols, damp, act_order);
}

Result<GptqFactor> gptq_factor(UninitVector<float> hessian, int64_t k_cols, double damp, bool act_order) {
  if (k_cols < 1 || hessian.size() != static_cast<size_t>(k_cols) * static_cast<size_t>(k_cols)) {
    return Status(StatusCode::kInvalidArgument, "gptq: hessian has " + std::to_string(hessian.size()) +
                                                    " values, expected k_cols^2 with k_cols " + std::to_string(k_cols));
  }
  if (!(damp > 0.0) || !std::isfinite(damp)) {
    return Status(StatusCode::kInvalidArgument, "gptq: damp must be > 0, got " + std::to_string(damp));
  }
  use_single_threaded_blas();
  const int64_t n = k_cols;
  for (int64_t i = 0; i < n; ++i) {  // the lower triangle (the upper one is never read)
    for (int64_t j = 0; j <= i; ++j) {
      if (!std::isfinite(hessian[i * n + j])) {
        return Status(StatusCode::kNonFinite,
                      "gptq: hessian[" + std::to_string(i) + "][" + std::to_string(j) + "] is not finite");
      }
    }
  }
  GptqFactor f;
  f.k_cols = n;
  f.importance.resize(static_cast<size_t>(n));
  double mean_diag = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float h = hessian[i * n + i];
    f.importance[i] = std::max(h, 0.0f);
    mean_diag += h > 0.0f ? h : 1.0;
  }
  mean_diag /= static_cast<double>(n);
  if (act_order) {  // inputs by decreasing H[i][i] (ties: lower index first)
    f.order.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) f.order[i] = i;
    std::stable_sort(f.order.begin(), f.order.end(),
                     [&](int64_t x, int64_t y) { return hessian[x * n + x] > hessian[y * n + y]; });
  }
  const auto at = [&](int64_t i) { return f.order.empty() ? i : f.order[i]; };
  // A = J H J (J reverses the processing order): if A = M M^T (M lower) then T = J M J is upper triangular
  // with H = T T^T, so one Cholesky gives GPTQ's factor in the form quantize_rows_gptq uses (no inverse).
  // A is made in H's own memory: position i of A holds input at(n - 1 - i).
  permute_symmetric(hessian, n, [&](int64_t i) { return at(n - 1 - i); });
  const auto added = static_cast<float>(damp * mean_diag);
  for (int64_t i = 0; i < n; ++i) {
    float& d = hessian[i * n + i];
    if (!(d > 0.0f)) d = 1.0f;
    d += added;
  }
  if (const int64_t bad = cholesky_lower(hessian.data(), n); bad >= 0) {
    return Status(StatusCode::kValidation, "gptq: hessian is not positive definite after damping (pivot " +
                                               std::to_string(at(n - 1 - bad)) + ")");
  }
  // t[i][j] = T[i][j] / T[j][j] = M[n-1-i][n-1-j] / M[n-1-j][n-1-j], packed in row panels (quant/gptq.h).
  const float* m = hessian.data();
  const int64_t panels = (n + kGptqPanelRows - 1) / kGptqPanelRows;
  f.t.resize(f.panel_offset(panels));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 64), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      const int64_t p = i / kGptqPanelRows, c0 = p * kGptqPanelRows, ld = n - c0;
      float* dst = f.t.data() + f.panel_offset(p) + (i - c0) * ld;
      const float* src = m + (n - 1 - i) * n + (n - 1);  // M[n-1-i][n-1-j] = src[-j]
      for (int64_t j = c0; j < n; ++j) dst[j - c0] = j < i ? 0.0f : src[-j] / m[(n - 1 - j) * (n + 1)];
    }
  });
  return f;
}

}  // namespace rdrr::quant
