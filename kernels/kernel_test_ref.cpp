#include "kernels/kernel_test_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "quant/f16.h"
#include "quant/legacy_dequant.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#if RDRR_QUANT_HAS_Q4K
#include "quant/q4_k.h"
#endif

namespace rdrr::kernels::testing {
namespace {

uint16_t f16_uniform(std::mt19937& rng, float lo, float hi) {
  return quant::f32_to_f16(std::uniform_real_distribution<float>(lo, hi)(rng));
}

template <typename T>
void random_bytes(std::mt19937& rng, T* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(rng() & 0xffu);
}

template <typename Block>
std::vector<std::byte> as_bytes(const std::vector<Block>& blocks) {
  std::vector<std::byte> out(blocks.size() * sizeof(Block));
  std::memcpy(out.data(), blocks.data(), out.size());
  return out;
}

}  // namespace

std::vector<quant::BlockQ4K> random_q4k_blocks(std::mt19937& rng, size_t n) {
  std::vector<quant::BlockQ4K> b(n);
  for (quant::BlockQ4K& x : b) {
    x.d = f16_uniform(rng, 0.001f, 0.02f);
    x.dmin = f16_uniform(rng, 0.0f, 0.01f);
    random_bytes(rng, x.scales, sizeof x.scales);
    random_bytes(rng, x.qs, sizeof x.qs);
  }
  return b;
}

std::vector<quant::BlockQ6K> random_q6k_blocks(std::mt19937& rng, size_t n) {
  std::vector<quant::BlockQ6K> b(n);
  for (quant::BlockQ6K& x : b) {
    random_bytes(rng, x.ql, sizeof x.ql);
    random_bytes(rng, x.qh, sizeof x.qh);
    random_bytes(rng, x.scales, sizeof x.scales);
    x.d = f16_uniform(rng, -0.004f, 0.004f);
  }
  return b;
}

std::vector<quant::BlockQ8_0> random_q80_blocks(std::mt19937& rng, size_t n) {
  std::vector<quant::BlockQ8_0> b(n);
  for (quant::BlockQ8_0& x : b) {
    x.d = f16_uniform(rng, -0.01f, 0.01f);
    for (int8_t& q : x.qs) q = static_cast<int8_t>(static_cast<int>(rng() % 255u) - 127);
  }
  return b;
}

void decode_q4k(std::span<const quant::BlockQ4K> src, std::span<float> dst) {
#if RDRR_QUANT_HAS_Q4K
  quant::dequantize_q4_k(src, dst);
#else
  // llama.cpp dequantize_row_q4_K with get_scale_min_k4.
  float* y = dst.data();
  for (const quant::BlockQ4K& b : src) {
    const float d = quant::f16_to_f32(b.d);
    const float dmin = quant::f16_to_f32(b.dmin);
    auto scale_min = [&](int j, uint8_t& sc, uint8_t& m) {
      const uint8_t* q = b.scales;
      if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
      } else {
        sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
      }
    };
    for (int chunk = 0; chunk < 4; ++chunk) {
      uint8_t sc = 0, m = 0;
      scale_min(2 * chunk, sc, m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      scale_min(2 * chunk + 1, sc, m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      const uint8_t* q = b.qs + 32 * chunk;
      for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
      y += 64;
    }
  }
#endif
}

void decode_q6k(std::span<const quant::BlockQ6K> src, std::span<float> dst) { quant::dequantize_q6_k(src, dst); }
void decode_q80(std::span<const quant::BlockQ8_0> src, std::span<float> dst) { quant::dequantize_q8_0(src, dst); }

PackedWeight random_weight(std::mt19937& rng, quant::DType dtype, quant::Layout layout, uint32_t n_rows, uint32_t k) {
  PackedWeight out;
  const uint64_t elems = uint64_t{n_rows} * k;
  out.w.resize(elems);
  if (dtype == quant::DType::kF32 || dtype == quant::DType::kF16) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> f(elems);
    std::vector<uint16_t> h(elems);
    for (uint64_t i = 0; i < elems; ++i) {
      h[i] = quant::f32_to_f16(dist(rng));
      f[i] = dtype == quant::DType::kF16 ? quant::f16_to_f32(h[i]) : dist(rng);
      out.w[i] = f[i];
    }
    out.bytes.resize(dtype == quant::DType::kF16 ? elems * 2 : elems * 4);
    std::memcpy(out.bytes.data(), dtype == quant::DType::kF16 ? static_cast<const void*>(h.data()) : f.data(),
                out.bytes.size());
    return out;
  }
  const uint64_t be = static_cast<uint64_t>(quant::block_elems(dtype));
  auto ceil_div = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
  uint64_t blocks = 0;
  switch (layout) {
    case quant::Layout::kFlat: blocks = ceil_div(elems, be); break;
    case quant::Layout::kRowWise: blocks = n_rows * ceil_div(k, be); break;
    case quant::Layout::kColumnWise: blocks = k * ceil_div(n_rows, be); break;
  }
  std::vector<float> dec(blocks * be);
  if (dtype == quant::DType::kQ4_K) {
    auto b = random_q4k_blocks(rng, blocks);
    decode_q4k(b, dec);
    out.bytes = as_bytes(b);
  } else if (dtype == quant::DType::kQ6_K) {
    auto b = random_q6k_blocks(rng, blocks);
    decode_q6k(b, dec);
    out.bytes = as_bytes(b);
  } else if (dtype == quant::DType::kQ4_0) {
    std::vector<quant::BlockQ4_0> b(blocks);
    for (quant::BlockQ4_0& x : b) {
      x.d = f16_uniform(rng, -0.02f, 0.02f);
      random_bytes(rng, x.qs, sizeof x.qs);
    }
    quant::dequantize_q4_0(b, dec);
    out.bytes = as_bytes(b);
  } else if (dtype == quant::DType::kQ5_0) {
    std::vector<quant::BlockQ5_0> b(blocks);
    for (quant::BlockQ5_0& x : b) {
      x.d = f16_uniform(rng, -0.01f, 0.01f);
      random_bytes(rng, x.qh, sizeof x.qh);
      random_bytes(rng, x.qs, sizeof x.qs);
    }
    quant::dequantize_q5_0(b, dec);
    out.bytes = as_bytes(b);
  } else if (dtype == quant::DType::kQ5_K) {
    std::vector<quant::BlockQ5K> b(blocks);
    for (quant::BlockQ5K& x : b) {
      x.d = f16_uniform(rng, 0.0005f, 0.01f);
      x.dmin = f16_uniform(rng, 0.0f, 0.01f);
      random_bytes(rng, x.scales, sizeof x.scales);
      random_bytes(rng, x.qh, sizeof x.qh);
      random_bytes(rng, x.qs, sizeof x.qs);
    }
    quant::dequantize_q5_k(b, dec);
    out.bytes = as_bytes(b);
  } else {
    auto b = random_q80_blocks(rng, blocks);
    decode_q80(b, dec);
    out.bytes = as_bytes(b);
  }
  for (uint64_t r = 0; r < n_rows; ++r) {
    for (uint64_t c = 0; c < k; ++c) {
      uint64_t idx = 0;
      switch (layout) {
        case quant::Layout::kFlat: idx = r * k + c; break;
        case quant::Layout::kRowWise: idx = r * ceil_div(k, be) * be + c; break;
        case quant::Layout::kColumnWise: idx = (c * ceil_div(n_rows, be) + r / be) * be + r % be; break;
      }
      out.w[r * k + c] = dec[idx];
    }
  }
  return out;
}

std::vector<double> reference_gemv(const PackedWeight& w, std::span<const float> x, uint32_t n_rows, uint32_t k) {
  std::vector<double> y(n_rows, 0.0);
  for (uint64_t r = 0; r < n_rows; ++r) {
    double acc = 0.0;
    for (uint64_t c = 0; c < k; ++c) acc += w.w[r * k + c] * static_cast<double>(x[c]);
    y[r] = acc;
  }
  return y;
}

std::vector<double> reference_rms_norm(std::span<const double> x, std::span<const float> w, uint32_t d, float eps,
                                       float offset) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double ss = 0.0;
    for (uint32_t i = 0; i < d; ++i) ss += x[r * d + i] * x[r * d + i];
    const double scale = 1.0 / std::sqrt(ss / d + double(eps));
    for (uint32_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] * scale * (double(w[i]) + offset);
  }
  return y;
}

double silu(double g) { return g / (1.0 + std::exp(-g)); }

double gelu_tanh(double g) {
  return 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
}

RouteRef reference_route(std::span<const float> logits, uint32_t m_rows, uint32_t e, uint32_t k, bool normalize) {
  RouteRef r;
  for (uint32_t m = 0; m < m_rows; ++m) {
    const float* l = &logits[uint64_t{m} * e];
    const double mx = *std::max_element(l, l + e);
    std::vector<double> p(e);
    double sum = 0.0;
    for (uint32_t i = 0; i < e; ++i) sum += p[i] = std::exp(double(l[i]) - mx);
    for (double& v : p) v /= sum;
    std::vector<uint32_t> order(e);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
    double sel = 0.0;
    for (uint32_t j = 0; j < k; ++j) sel += p[order[j]];
    for (uint32_t j = 0; j < k; ++j) {
      r.ids.push_back(order[j]);
      r.weights.push_back(normalize ? p[order[j]] / sel : p[order[j]]);
    }
  }
  return r;
}

std::vector<float> route_logits(std::mt19937& rng, uint32_t m_rows, uint32_t e, std::span<const Tie> ties) {
  std::vector<float> l(uint64_t{m_rows} * e);
  std::vector<uint32_t> perm(e);
  for (uint32_t m = 0; m < m_rows; ++m) {
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (uint32_t i = 0; i < e; ++i) l[uint64_t{m} * e + i] = -4.0f + 8.0f * float(perm[i]) / float(e);
  }
  for (const Tie& t : ties) l[uint64_t{t.row} * e + t.expert] = t.value;
  return l;
}

}  // namespace rdrr::kernels::testing
