// CPU references for the kernel differential tests: random packed weights in every dtype/layout the GEMV
// kernels accept (the pass-through types Q4_0 / Q5_0 / Q5_K decoded by ggml's decoders, quant/legacy_dequant.h), and their dequantized values in double (the reference the GPU result is compared to);
// the double references shared by several tests (GEMV, RMSNorm, gated activations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "quant/blocks.h"
#include "quant/dtype.h"

namespace rdrr::kernels::testing {

// Random blocks with finite, moderate scales; every code and scale byte random (padding included).
std::vector<quant::BlockQ4K> random_q4k_blocks(std::mt19937& rng, size_t n);
std::vector<quant::BlockQ6K> random_q6k_blocks(std::mt19937& rng, size_t n);
std::vector<quant::BlockQ8_0> random_q80_blocks(std::mt19937& rng, size_t n);

// Block decode in llama.cpp's order of operations (quant/ decoders when the build has them).
void decode_q4k(std::span<const quant::BlockQ4K> src, std::span<float> dst);
void decode_q6k(std::span<const quant::BlockQ6K> src, std::span<float> dst);
void decode_q80(std::span<const quant::BlockQ8_0> src, std::span<float> dst);

struct PackedWeight {
  std::vector<std::byte> bytes;  // what the GPU gets
  std::vector<double> w;         // W [n_rows, k] row-major, exactly the decoded values
};
// Random weight of the given dtype and layout (F32 / F16: plain row-major, layout ignored).
PackedWeight random_weight(std::mt19937& rng, quant::DType dtype, quant::Layout layout, uint32_t n_rows, uint32_t k);

// y = W x in double.
std::vector<double> reference_gemv(const PackedWeight& w, std::span<const float> x, uint32_t n_rows, uint32_t k);

// RMSNorm of the rows of d values of x: x / sqrt(mean(x^2) + eps) * (w + offset) (offset 1: Gemma), in double.
std::vector<double> reference_rms_norm(std::span<const double> x, std::span<const float> w, uint32_t d, float eps,
                                       float offset);
// Gate activations in double: SiLU g / (1 + e^-g) and GELU with the tanh approximation.
double silu(double g);
double gelu_tanh(double g);

// The router in double: per row of E logits softmax, the top k (stable: ties to the lower index) and their
// probabilities, renormalised to sum 1 when `normalize`.
struct RouteRef {
  std::vector<uint32_t> ids;     // [m_rows * k]
  std::vector<double> weights;   // [m_rows * k]
};
RouteRef reference_route(std::span<const float> logits, uint32_t m_rows, uint32_t e, uint32_t k, bool normalize);

// Router logits [m_rows, e] in [-4, 4], at least 8 / e apart (a random permutation of a grid), then the ties of
// `ties` (row, expert, value).
struct Tie {
  uint32_t row, expert;
  float value;
};
std::vector<float> route_logits(std::mt19937& rng, uint32_t m_rows, uint32_t e, std::span<const Tie> ties);

}  // namespace rdrr::kernels::testing
