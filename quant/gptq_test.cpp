#include "quant/gptq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/layout.h"

namespace rdrr::quant {
namespace {

struct Problem {
  int64_t n = 0, k = 0, t = 0;
  std::vector<float> w;       // n x k
  std::vector<double> x;      // t x k calibration inputs
  std::vector<double> h;      // k x k
};

// Correlated inputs (x = z A with a random mixing A, a few strong channels) as in real activations.
Problem make_problem(int64_t n, int64_t k, int64_t t, uint32_t seed) {
  Problem p{n, k, t, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  p.w.resize(static_cast<size_t>(n * k));
  for (float& v : p.w) v = 0.02f * nd(rng);
  std::vector<double> a(static_cast<size_t>(k * k));
  for (double& v : a) v = nd(rng) / std::sqrt(static_cast<double>(k));
  for (int64_t i = 0; i < k; ++i) a[i * k + i] += (i % 17 == 0) ? 4.0 : 1.0;
  p.x.assign(static_cast<size_t>(t * k), 0.0);
  std::vector<double> z(static_cast<size_t>(k));
  for (int64_t s = 0; s < t; ++s) {
    for (double& v : z) v = nd(rng);
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < k; ++j) p.x[s * k + j] += z[i] * a[i * k + j];
    }
  }
  p.h.assign(static_cast<size_t>(k * k), 0.0);
  for (int64_t s = 0; s < t; ++s) {
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < k; ++j) p.h[i * k + j] += p.x[s * k + i] * p.x[s * k + j] / static_cast<double>(t);
    }
  }
  return p;
}

// Mean squared output error ||(W - Wq) x||^2 over the calibration inputs.
double output_error(const Problem& p, std::span<const uint8_t> q, Layout layout) {
  std::vector<float> d(p.w.size());
  EXPECT_TRUE(dequantize_matrix({DType::kQ4_K, layout, q, p.n, p.k, d}).ok());
  double e = 0;
  for (int64_t s = 0; s < p.t; ++s) {
    for (int64_t r = 0; r < p.n; ++r) {
      double y = 0;
      for (int64_t j = 0; j < p.k; ++j) y += (p.w[r * p.k + j] - d[r * p.k + j]) * p.x[s * p.k + j];
      e += y * y;
    }
  }
  return e / static_cast<double>(p.t * p.n);
}

std::vector<uint8_t> plain(const Problem& p, Layout layout) {
  std::vector<uint8_t> q(quantized_size_bytes(DType::kQ4_K, layout, p.n, p.k));
  EXPECT_TRUE(quantize_matrix({DType::kQ4_K, layout, p.w, p.n, p.k, {}, q}).ok());
  return q;
}

std::vector<uint8_t> gptq(const Problem& p, Layout layout, const GptqFactor& f, int64_t chunk_rows) {
  std::vector<uint8_t> q(quantized_size_bytes(DType::kQ4_K, layout, p.n, p.k));
  for (int64_t r0 = 0; r0 < p.n; r0 += chunk_rows) {
    const int64_t r1 = std::min(p.n, r0 + chunk_rows);
    const std::span<const float> rows(p.w.data() + r0 * p.k, static_cast<size_t>((r1 - r0) * p.k));
    EXPECT_TRUE(quantize_rows_gptq({layout, p.n, p.k, r0, rows, &f, q}).ok());
  }
  return q;
}

// t^-1 (H + damp) t^-T is diagonal (H = T T^T with T = t diag(T[j][j]), t unit upper triangular), for one
// tile and for several (the tiled Cholesky, kTile 256, with a partial last tile), in input order and in act
// order (t is then in processing order: P H P^T). Measured as the largest off-diagonal |Y[i][j]| /
// sqrt(Y[i][i] Y[j][j]) of Y = t^-1 H t^-T. Tolerance: float factors of a matrix whose damped condition
// number is ~1e2 here lose ~K * cond * 2^-24 relative; 1e-4 (K = 40) and 2e-3 (K = 600) leave a wide
// margin over what a correct factor gives (~1e-6).
void expect_cholesky_factor(int64_t k, bool act_order, double tolerance) {
  const Problem p = make_problem(4, k, 2 * k + 100, 1);
  Result<GptqFactor> f = gptq_factor(p.h, p.k, 0.01, act_order);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto at = [&](int64_t i) { return f->order.empty() ? i : f->order[i]; };
  const int64_t n = p.k;
  std::vector<double> y(p.h.size());  // P (H + damp) P^T
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += p.h[i * n + i] / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) y[i * n + j] = p.h[at(i) * n + at(j)];
    y[i * n + i] += 0.01 * mean;
  }
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(f->value(i, i), 1.0f) << i;
  }
  // y := t^-1 y^T twice (back substitution on every column): t^-1 (t^-1 H)^T = t^-1 H t^-T (H symmetric).
  const auto solve_transposed = [&](std::vector<double>& m) {
    std::vector<double> out(m.size());
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t i = n - 1; i >= 0; --i) {
        double v = m[c * n + i];  // column c of m^T
        for (int64_t j = i + 1; j < n; ++j) v -= f->value(i, j) * out[j * n + c];
        out[i * n + c] = v;
      }
    }
    m = std::move(out);
  };
  solve_transposed(y);
  solve_transposed(y);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GT(y[i * n + i], 0.0) << i;
    for (int64_t j = 0; j < n; ++j) {
      if (i != j) worst = std::max(worst, std::fabs(y[i * n + j]) / std::sqrt(y[i * n + i] * y[j * n + j]));
    }
  }
  std::printf("K %lld act order %d: worst off-diagonal of t^-1 H t^-T %.3g\n", static_cast<long long>(k), act_order,
              worst);
  EXPECT_LT(worst, tolerance);
}

TEST(Gptq, FactorIsTheCholeskyFactorOfTheReversedHessian) {
  expect_cholesky_factor(40, false, 1e-4);
  expect_cholesky_factor(40, true, 1e-4);
  expect_cholesky_factor(600, false, 2e-3);
  expect_cholesky_factor(600, true, 2e-3);
}

class GptqOrder : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(ActOrder, GptqOrder, ::testing::Bool());

TEST_P(GptqOrder, LowersTheOutputErrorInEveryLayout) {
  const Problem p = make_problem(300, 512, 1500, 2);
  Result<GptqFactor> f = gptq_factor(p.h, p.k, 0.01, GetParam());
  ASSERT_TRUE(f.ok());
  for (Layout layout : {Layout::kRowWise, Layout::kColumnWise, Layout::kFlat}) {
    const double e_plain = output_error(p, plain(p, layout), layout);
    const double e_gptq = output_error(p, gptq(p, layout, *f, 256), layout);
    std::printf("%s: output MSE plain %.4g, gptq %.4g (%.3f)\n", std::string(layout_name(layout)).c_str(), e_plain,
                e_gptq, e_gptq / e_plain);
    EXPECT_LT(e_gptq, 0.8 * e_plain) << layout_name(layout);
  }
}

TEST_P(GptqOrder, ChunksGiveTheSameBytes) {
  const Problem p = make_problem(520, 300, 400, 3);
  Result<GptqFactor> f = gptq_factor(p.h, p.k, 0.01, GetParam());
  ASSERT_TRUE(f.ok());
  for (Layout layout : {Layout::kRowWise, Layout::kColumnWise, Layout::kFlat}) {
    EXPECT_EQ(gptq(p, layout, *f, 256), gptq(p, layout, *f, 1024)) << layout_name(layout);
  }
}

TEST(Gptq, Errors) {
  std::vector<double> h(9, 0.0);
  EXPECT_EQ(gptq_factor(h, 4).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gptq_factor(h, 3, 0.0).status().code(), StatusCode::kInvalidArgument);
  h[4] = NAN;
  EXPECT_EQ(gptq_factor(h, 3).status().code(), StatusCode::kNonFinite);
  h = {1, 2, 0, 2, 1, 0, 0, 0, 1};  // indefinite: eigenvalue -1
  EXPECT_EQ(gptq_factor(h, 3).status().code(), StatusCode::kValidation);
  std::vector<float> w(4 * 256, 0.5f);
  std::vector<uint8_t> q(quantized_size_bytes(DType::kQ4_K, Layout::kRowWise, 4, 256));
  EXPECT_EQ(quantize_rows_gptq({Layout::kRowWise, 4, 256, 0, w, nullptr, q}).code(), StatusCode::kInvalidArgument);
  std::vector<double> h1(256 * 256, 0.0);
  for (int i = 0; i < 256; ++i) h1[i * 256 + i] = 1.0;
  Result<GptqFactor> f = gptq_factor(h1, 256);
  ASSERT_TRUE(f.ok());
  w[7] = NAN;
  EXPECT_EQ(quantize_rows_gptq({Layout::kRowWise, 4, 256, 0, w, &*f, q}).code(), StatusCode::kNonFinite);
}

}  // namespace
}  // namespace rdrr::quant
