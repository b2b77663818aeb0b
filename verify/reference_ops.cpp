#include "verify/reference_ops.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rdrr::verify {
namespace {

// Dot product of an f32 weight row and a double activation row, four fixed partial sums (deterministic).
double dot(const float* w, const double* x, size_t n) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += static_cast<double>(w[i]) * x[i];
    s1 += static_cast<double>(w[i + 1]) * x[i + 1];
    s2 += static_cast<double>(w[i + 2]) * x[i + 2];
    s3 += static_cast<double>(w[i + 3]) * x[i + 3];
  }
  for (; i < n; ++i) s0 += static_cast<double>(w[i]) * x[i];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

Matrix linear(const Matrix& x, const Linear& w) {
  Matrix y(x.rows, w.out_features);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, w.out_features, 16), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t o = r.begin(); o != r.end(); ++o) {
      const float* wr = w.weight.data() + o * w.in_features;
      const double b = w.bias.empty() ? 0.0 : static_cast<double>(w.bias[o]);
      for (size_t t = 0; t < x.rows; ++t) y.data[t * y.cols + o] = dot(wr, x.row(t).data(), w.in_features) + b;
    }
  });
  return y;
}

void rms_norm(Matrix& x, std::span<const float> weight, double eps, double offset, size_t group_elems) {
  for (size_t t = 0; t < x.rows; ++t) {
    std::span<double> row = x.row(t);
    for (size_t g = 0; g + group_elems <= row.size(); g += group_elems) {
      double sum_sq = 0.0;
      for (size_t i = 0; i < group_elems; ++i) sum_sq += row[g + i] * row[g + i];
      const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(group_elems) + eps);
      for (size_t i = 0; i < group_elems; ++i) row[g + i] *= inv * (offset + static_cast<double>(weight[i]));
    }
  }
}

void apply_rope(Matrix& x, size_t head_dim, const RopeTables& rope, size_t first_pos) {
  if (x.rows == 0) return;
  const std::vector<double>& inv_freq = rope.table(first_pos + x.rows - 1);
  const size_t pairs = inv_freq.size();
  for (size_t t = 0; t < x.rows; ++t) {
    std::span<double> row = x.row(t);
    const double pos = static_cast<double>(first_pos + t);
    for (size_t h = 0; h + head_dim <= row.size(); h += head_dim) {
      for (size_t i = 0; i < pairs; ++i) {
        const double angle = pos * inv_freq[i];
        const double c = std::cos(angle) * rope.attention_factor;
        const double s = std::sin(angle) * rope.attention_factor;
        const size_t a = rope.interleaved ? h + 2 * i : h + i;
        const size_t b = rope.interleaved ? h + 2 * i + 1 : h + i + pairs;
        const double xa = row[a], xb = row[b];
        row[a] = xa * c - xb * s;
        row[b] = xb * c + xa * s;
      }
    }
  }
}

Matrix attention(const Matrix& q, const Matrix& k, const Matrix& v, const AttentionParams& p, size_t first_pos) {
  const size_t n = q.rows, hd = p.head_dim, group = p.num_heads / p.num_kv_heads;
  Matrix out(n, p.num_heads * hd);
  tbb::parallel_for(size_t{0}, p.num_heads * n, [&](size_t job) {
    const size_t h = job / n, row = job % n, i = first_pos + row, kvh = h / group;
    const double* qi = q.row(row).data() + h * hd;
    const size_t first = (p.window == 0 || i < p.window) ? 0 : i - p.window + 1;
    std::vector<double> scores(i + 1 - first);
    double max_score = -INFINITY;
    for (size_t j = first; j <= i; ++j) {
      const double* kj = k.row(j).data() + kvh * hd;
      double s = 0.0;
      for (size_t d = 0; d < hd; ++d) s += qi[d] * kj[d];
      s *= p.scale;
      if (p.softcap > 0.0) s = p.softcap * std::tanh(s / p.softcap);
      scores[j - first] = s;
      max_score = std::max(max_score, s);
    }
    double denom = 0.0;
    for (double& s : scores) denom += (s = std::exp(s - max_score));
    double* oi = out.row(row).data() + h * hd;
    for (size_t j = first; j <= i; ++j) {
      const double* vj = v.row(j).data() + kvh * hd;
      const double w = scores[j - first] / denom;
      for (size_t d = 0; d < hd; ++d) oi[d] += w * vj[d];
    }
  });
  return out;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

}  // namespace rdrr::verify
