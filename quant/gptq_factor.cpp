// gptq_factor (quant/gptq.h): GPTQ's factor U (U^T U = H^-1) through the BLAS, tiled so that oneTBB spreads the
// tiles and every tile is one single-threaded BLAS call on a fixed grid: the same bits at any thread count.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <utility>

#include "quant/blas.h"
#include "quant/gptq.h"

extern "C" void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t uplo_len);

namespace rdrr::quant {
namespace {

constexpr int64_t kTile = 256;         // Cholesky tiles (rows and columns)
constexpr int64_t kInverseCols = 128;  // columns of M^-1 solved per task

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

}  // namespace

Result<GptqFactor> gptq_factor(std::span<const double> hessian, int64_t k_cols, double damp, bool act_order) {
  for (size_t i = 0; i < hessian.size(); ++i) {
    if (!std::isfinite(hessian[i])) {
      const auto n = static_cast<size_t>(std::max<int64_t>(k_cols, 1));
      return Status(StatusCode::kNonFinite, "gptq: hessian[" + std::to_string(i / n) + "][" +
                                                std::to_string(i % n) + "] is not finite");
    }
  }
  return gptq_factor(std::vector<float>(hessian.begin(), hessian.end()), k_cols, damp, act_order);
}

Result<GptqFactor> gptq_factor(std::vector<float> hessian, int64_t k_cols, double damp, bool act_order) {
  if (k_cols < 1 || hessian.size() != static_cast<size_t>(k_cols) * static_cast<size_t>(k_cols)) {
    return Status(StatusCode::kInvalidArgument, "gptq: hessian has " + std::to_string(hessian.size()) +
                                                    " values, expected k_cols^2 with k_cols " + std::to_string(k_cols));
  }
  if (!(damp > 0.0) || !std::isfinite(damp)) {
    return Status(StatusCode::kInvalidArgument, "gptq: damp must be > 0, got " + std::to_string(damp));
  }
  use_single_threaded_blas();
  const int64_t n = k_cols;
  for (size_t i = 0; i < hessian.size(); ++i) {
    if (!std::isfinite(hessian[i])) {
      return Status(StatusCode::kNonFinite, "gptq: hessian[" + std::to_string(i / n) + "][" +
                                                std::to_string(i % n) + "] is not finite");
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
  // A = J H J (J reverses the processing order): if A = M M^T then U = J M^-1 J is upper triangular with
  // U^T U = H^-1, so one Cholesky and one triangular inverse give GPTQ's factor.
  std::vector<float> a(static_cast<size_t>(n * n));
  const auto added = static_cast<float>(damp * mean_diag);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 64), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      const int64_t row = at(n - 1 - i);
      for (int64_t j = 0; j <= i; ++j) {  // H's lower triangle only
        const int64_t c = at(n - 1 - j);
        a[i * n + j] = row >= c ? hessian[row * n + c] : hessian[c * n + row];
      }
      float& d = a[i * n + i];
      if (!(d > 0.0f)) d = 1.0f;
      d += added;
    }
  });
  hessian = {};
  if (const int64_t bad = cholesky_lower(a.data(), n); bad >= 0) {
    return Status(StatusCode::kValidation, "gptq: hessian is not positive definite after damping (pivot " +
                                               std::to_string(at(n - 1 - bad)) + ")");
  }
  f.u.assign(static_cast<size_t>(n * n), 0.0f);
  // Columns [c0, c0 + cb) of M^-1: rows >= c0 solve M[c0:, c0:] X = I[c0:, c0:c0+cb] (rows above are zero).
  const int64_t tasks = (n + kInverseCols - 1) / kInverseCols;
  tbb::parallel_for(int64_t{0}, tasks, [&](int64_t t) {
    const int64_t c0 = t * kInverseCols, cb = std::min(kInverseCols, n - c0), rows = n - c0;
    std::vector<float> x(static_cast<size_t>(rows * cb), 0.0f);
    for (int64_t c = 0; c < cb; ++c) x[c * cb + c] = 1.0f;
    cblas_strsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, static_cast<int>(rows),
                static_cast<int>(cb), 1.0f, a.data() + c0 * n + c0, static_cast<int>(n), x.data(),
                static_cast<int>(cb));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < cb && c <= i; ++c) {
        f.u[(n - 1 - (c0 + i)) * n + (n - 1 - (c0 + c))] = x[i * cb + c];
      }
    }
  });
  return f;
}

}  // namespace rdrr::quant
