#include "quant/q8_0.h"

#include <cassert>
#include <cmath>
#include <cstddef>

#include "quant/f16.h"

namespace rdrr::quant {

namespace {

constexpr uint16_t kF16MaxFinite = 0x7bff;

void quantize_block(const float* x, BlockQ8_0* y) {
  float amax = 0.0f;
  for (int j = 0; j < kQK8_0; ++j) {
    const float a = std::fabs(x[j]);
    amax = a > amax ? a : amax;
  }
  uint16_t dh = f32_to_f16(amax / 127.0f);
  if ((dh & 0x7fffu) >= 0x7c00u) dh = kF16MaxFinite;  // saturate: keeps the block finite
  const float d = f16_to_f32(dh);
  y->d = dh;
  if (d == 0.0f) {
    for (int j = 0; j < kQK8_0; ++j) y->qs[j] = 0;
    return;
  }
  for (int j = 0; j < kQK8_0; ++j) {
    float v = x[j] / d;
    v = v < -127.0f ? -127.0f : v;  // a subnormal d can overshoot
    v = v > 127.0f ? 127.0f : v;
    y->qs[j] = static_cast<int8_t>(static_cast<int>((v + 12582912.0f) - 12582912.0f));  // round half to even
  }
}

}  // namespace

void quantize_q8_0(std::span<const float> src, std::span<BlockQ8_0> dst) {
  assert(src.size() == dst.size() * kQK8_0);
  for (size_t b = 0; b < dst.size(); ++b) quantize_block(src.data() + b * kQK8_0, &dst[b]);
}

void dequantize_q8_0(std::span<const BlockQ8_0> src, std::span<float> dst) {
  assert(dst.size() == src.size() * kQK8_0);
  for (size_t b = 0; b < src.size(); ++b) {
    const float d = f16_to_f32(src[b].d);
    float* y = dst.data() + b * kQK8_0;
    for (int j = 0; j < kQK8_0; ++j) y[j] = d * static_cast<float>(src[b].qs[j]);
  }
}

}  // namespace rdrr::quant
