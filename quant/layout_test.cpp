#include "quant/layout.h"
#include "quant/legacy_dequant.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"

namespace rdrr::quant {
namespace {

constexpr DType kBlockTypes[] = {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K};
constexpr Layout kLayouts[] = {Layout::kFlat, Layout::kRowWise, Layout::kColumnWise};

std::vector<float> normal_values(size_t n, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::string label(DType t, Layout l, int64_t n, int64_t k) {
  return std::string(dtype_name(t)) + " " + std::string(layout_name(l)) + " " + std::to_string(n) + "x" +
         std::to_string(k);
}

std::vector<uint8_t> encode(DType t, Layout l, const std::vector<float>& w, int64_t n, int64_t k,
                            std::span<const float> importance = {}) {
  std::vector<uint8_t> q(quantized_size_bytes(t, l, n, k));
  const Status s = quantize_matrix({t, l, w, n, k, importance, q});
  EXPECT_TRUE(s.ok()) << s.to_string();
  return q;
}

std::vector<float> decode(DType t, Layout l, const std::vector<uint8_t>& q, int64_t n, int64_t k) {
  std::vector<float> y(static_cast<size_t>(n * k), std::nanf(""));
  const Status s = dequantize_matrix({t, l, q, n, k, y});
  EXPECT_TRUE(s.ok()) << s.to_string();
  return y;
}

double rel_rmse(std::span<const float> x, std::span<const float> y) {
  double se = 0, s2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    se += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    s2 += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(se / s2);
}

double rmse_bound(DType t) { return t == DType::kQ8_0 ? 0.01 : t == DType::kQ6_K ? 0.025 : 0.1; }

TEST(LayoutSizes, MatchTheLayoutFormulas) {
  struct Case {
    int64_t n, k;
  };
  for (const Case c : {Case{300, 70}, Case{1, 1}, Case{257, 513}, Case{256, 512}, Case{4096, 4096}}) {
    for (DType t : kBlockTypes) {
      const int64_t B = block_elems(t);
      const auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
      EXPECT_EQ(quantized_block_count(t, Layout::kFlat, c.n, c.k), static_cast<uint64_t>(cdiv(c.n * c.k, B)));
      EXPECT_EQ(quantized_block_count(t, Layout::kRowWise, c.n, c.k), static_cast<uint64_t>(c.n * cdiv(c.k, B)));
      EXPECT_EQ(quantized_block_count(t, Layout::kColumnWise, c.n, c.k),
                static_cast<uint64_t>(c.k * cdiv(c.n, B)));
      for (Layout l : kLayouts) {
        EXPECT_EQ(quantized_size_bytes(t, l, c.n, c.k),
                  quantized_block_count(t, l, c.n, c.k) * static_cast<uint64_t>(block_bytes(t)));
        EXPECT_EQ(tensor_size_bytes(t, l, c.n, c.k), quantized_size_bytes(t, l, c.n, c.k));
      }
    }
  }
  EXPECT_EQ(quantized_size_bytes(DType::kQ4_K, Layout::kRowWise, 4096, 4096), 4096ull * 16 * 144);
  EXPECT_EQ(plain_size_bytes(DType::kF32, 10), 40u);
  EXPECT_EQ(plain_size_bytes(DType::kF16, 10), 20u);
  EXPECT_EQ(plain_size_bytes(DType::kBF16, 10), 20u);
  EXPECT_EQ(plain_size_bytes(DType::kQ4_K, 10), 0u);
  EXPECT_EQ(tensor_size_bytes(DType::kBF16, Layout::kRowWise, 3, 5), 30u);
  EXPECT_EQ(quantized_size_bytes(DType::kF32, Layout::kRowWise, 3, 5), 0u);
  EXPECT_EQ(quantized_size_bytes(DType::kQ8_0, Layout::kRowWise, 0, 5), 0u);
}

// decode(encode(W)) is close to W for every dtype, layout and odd shape; the decode writes exactly the true
// shape (the NaN-prefilled output has no untouched value left).
TEST(LayoutRoundTrip, EveryDtypeLayoutAndOddShape) {
  struct Case {
    int64_t n, k;
  };
  for (const Case c : {Case{300, 70}, Case{1, 1}, Case{257, 513}, Case{33, 256}, Case{256, 31}}) {
    const std::vector<float> w = normal_values(static_cast<size_t>(c.n * c.k), static_cast<uint32_t>(c.n * 7 + c.k));
    for (DType t : kBlockTypes) {
      for (Layout l : kLayouts) {
        const std::vector<float> y = decode(t, l, encode(t, l, w, c.n, c.k), c.n, c.k);
        for (float v : y) ASSERT_TRUE(std::isfinite(v)) << label(t, l, c.n, c.k);
        if (c.n * c.k == 1) {
          EXPECT_NEAR(y[0], w[0], std::fabs(w[0]) * 0.02) << label(t, l, c.n, c.k);
        } else {
          EXPECT_LT(rel_rmse(w, y), rmse_bound(t)) << label(t, l, c.n, c.k);
        }
      }
    }
  }
}

// row_wise with K % 256 == 0 is GGUF's tensor data: the codec run over the whole row-major buffer. flat
// agrees with it then too.
TEST(LayoutOrder, RowWiseIsGgufOrderWhenRowsAreWholeBlocks) {
  const int64_t n = 20, k = 512;
  const std::vector<float> w = normal_values(static_cast<size_t>(n * k), 3);
  {
    std::vector<BlockQ4K> b(static_cast<size_t>(n * k / kQK_K));
    quantize_q4_k(w, b);
    const std::vector<uint8_t> q = encode(DType::kQ4_K, Layout::kRowWise, w, n, k);
    ASSERT_EQ(q.size(), b.size() * sizeof(BlockQ4K));
    EXPECT_EQ(std::memcmp(q.data(), b.data(), q.size()), 0);
    EXPECT_EQ(encode(DType::kQ4_K, Layout::kFlat, w, n, k), q);
  }
  {
    std::vector<BlockQ6K> b(static_cast<size_t>(n * k / kQK_K));
    quantize_q6_k(w, b);
    const std::vector<uint8_t> q = encode(DType::kQ6_K, Layout::kRowWise, w, n, k);
    EXPECT_EQ(std::memcmp(q.data(), b.data(), q.size()), 0);
  }
  {
    std::vector<BlockQ8_0> b(static_cast<size_t>(n * k / kQK8_0));
    quantize_q8_0(w, b);
    const std::vector<uint8_t> q = encode(DType::kQ8_0, Layout::kRowWise, w, n, k);
    EXPECT_EQ(std::memcmp(q.data(), b.data(), q.size()), 0);
  }
}

// column_wise(W) is row_wise(W^T) byte for byte: block (k, b) is the quantized b-th block of input k's row.
TEST(LayoutOrder, ColumnWiseIsRowWiseOfTheTranspose) {
  const int64_t n = 300, k = 70;
  const std::vector<float> w = normal_values(static_cast<size_t>(n * k), 4);
  std::vector<float> wt(w.size());
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) wt[c * n + r] = w[r * k + c];
  }
  for (DType t : kBlockTypes) {
    EXPECT_EQ(encode(t, Layout::kColumnWise, w, n, k), encode(t, Layout::kRowWise, wt, k, n)) << dtype_name(t);
  }
  // And the first block of input 5 is the codec applied to W[0..255, 5] directly.
  std::vector<float> col(kQK_K);
  for (int i = 0; i < kQK_K; ++i) col[i] = w[i * k + 5];
  std::vector<BlockQ4K> one(1);
  quantize_q4_k(col, one);
  const std::vector<uint8_t> q = encode(DType::kQ4_K, Layout::kColumnWise, w, n, k);
  const int64_t bpr = 2;  // ceil(300 / 256)
  EXPECT_EQ(std::memcmp(q.data() + 5 * bpr * sizeof(BlockQ4K), one.data(), sizeof(BlockQ4K)), 0);
}

// Bytes are identical for any thread count.
TEST(LayoutParallel, SameBytesForOneAndManyThreads) {
  const int64_t n = 300, k = 520;
  const std::vector<float> w = normal_values(static_cast<size_t>(n * k), 5);
  std::vector<float> imp(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) imp[c] = 0.5f + static_cast<float>(c % 7);
  // Allow 4 threads even on a 2-core machine (CI), so that the 4-thread arena really splits the work 4 ways.
  tbb::global_control allow_four(tbb::global_control::max_allowed_parallelism, 4);
  for (DType t : kBlockTypes) {
    for (Layout l : kLayouts) {
      std::vector<uint8_t> one, many;
      std::vector<float> y1, y4;
      tbb::task_arena(1).execute([&] {
        one = encode(t, l, w, n, k, imp);
        y1 = decode(t, l, one, n, k);
      });
      tbb::task_arena(4).execute([&] {
        many = encode(t, l, w, n, k, imp);
        y4 = decode(t, l, many, n, k);
      });
      EXPECT_EQ(one, many) << label(t, l, n, k);
      EXPECT_EQ(std::memcmp(y1.data(), y4.data(), y1.size() * sizeof(float)), 0) << label(t, l, n, k);
    }
  }
}

// Streaming 256-row chunks, in any order, build the same bytes as one quantize_matrix call.
TEST(LayoutStreaming, ChunksInAnyOrderEqualTheWholeMatrix) {
  const int64_t n = 520, k = 100;
  const std::vector<float> w = normal_values(static_cast<size_t>(n * k), 6);
  for (DType t : kBlockTypes) {
    for (Layout l : kLayouts) {
      const std::vector<uint8_t> whole = encode(t, l, w, n, k);
      std::vector<uint8_t> streamed(whole.size(), 0xee);
      for (int64_t r0 : {512, 0, 256}) {
        const int64_t r1 = std::min<int64_t>(n, r0 + 256);
        const std::span<const float> rows(w.data() + r0 * k, static_cast<size_t>((r1 - r0) * k));
        const Status s = quantize_rows({t, l, n, k, r0, rows, {}, streamed});
        ASSERT_TRUE(s.ok()) << s.to_string();
      }
      EXPECT_EQ(streamed, whole) << label(t, l, n, k);
    }
  }
}

// Padding (K = 300: the row's second Q4_K/Q6_K block holds 44 real values) must not disturb the real values:
// their error must be no worse than quantizing the zero-padded block as if the zeros were data, and no worse
// than the full blocks' (same distribution) by more than noise.
TEST(LayoutPadding, ZeroPaddingDoesNotDisturbTheRealValues) {
  const int64_t n = 128, k = 300;
  std::vector<float> w = normal_values(static_cast<size_t>(n * k), 8);
  for (int64_t r = 0; r < n; r += 2) {  // every other row's tail is all negative: zeros would widen the range
    for (int64_t c = 256; c < k; ++c) w[r * k + c] = -std::fabs(w[r * k + c]) - 0.01f;
  }
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    const std::vector<float> y = decode(t, Layout::kRowWise, encode(t, Layout::kRowWise, w, n, k), n, k);
    double se_tail = 0, se_naive = 0;
    for (int64_t r = 0; r < n; ++r) {
      std::vector<float> padded(kQK_K, 0.0f), naive(kQK_K);
      std::copy(w.begin() + r * k + 256, w.begin() + r * k + k, padded.begin());
      if (t == DType::kQ4_K) {
        std::vector<BlockQ4K> b(1);
        quantize_q4_k(padded, b);
        dequantize_q4_k(b, naive);
      } else {
        std::vector<BlockQ6K> b(1);
        quantize_q6_k(padded, b);
        dequantize_q6_k(b, naive);
      }
      for (int64_t c = 256; c < k; ++c) {
        const double x = w[r * k + c];
        se_tail += (x - y[r * k + c]) * (x - y[r * k + c]);
        se_naive += (x - naive[c - 256]) * (x - naive[c - 256]);
      }
    }
    // Zero is on Q6_K's grid (q = 32), so there the zeros cost nothing either way: allow noise. Q4_K's grid
    // need not contain 0, so data-like zeros would pull its range: the weighted fit must do strictly better.
    EXPECT_LE(se_tail, se_naive * (t == DType::kQ6_K ? 1.02 : 1.0)) << dtype_name(t);
    std::vector<float> head_x, head_y, tail_x, tail_y;
    for (int64_t r = 1; r < n; r += 2) {  // rows with a normal tail: compare like with like
      head_x.insert(head_x.end(), w.begin() + r * k, w.begin() + r * k + 256);
      head_y.insert(head_y.end(), y.begin() + r * k, y.begin() + r * k + 256);
      tail_x.insert(tail_x.end(), w.begin() + r * k + 256, w.begin() + r * k + k);
      tail_y.insert(tail_y.end(), y.begin() + r * k + 256, y.begin() + r * k + k);
    }
    EXPECT_LT(rel_rmse(tail_x, tail_y), 1.2 * rel_rmse(head_x, head_y)) << dtype_name(t);
  }
}

// Importance steers the fit: the importance-weighted error drops compared with no importance.
TEST(LayoutImportance, ImportantColumnsGetLowerError) {
  const int64_t n = 64, k = 512;
  const std::vector<float> w = normal_values(static_cast<size_t>(n * k), 9);
  std::vector<float> imp(static_cast<size_t>(k));
  std::mt19937 rng(10);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : imp) v = u(rng) < 0.1f ? 100.0f : 0.01f;
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    const std::vector<float> yi = decode(t, Layout::kRowWise, encode(t, Layout::kRowWise, w, n, k, imp), n, k);
    const std::vector<float> yp = decode(t, Layout::kRowWise, encode(t, Layout::kRowWise, w, n, k), n, k);
    double ei = 0, ep = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const double m = imp[i % static_cast<size_t>(k)];
      ei += m * (w[i] - yi[i]) * (w[i] - yi[i]);
      ep += m * (w[i] - yp[i]) * (w[i] - yp[i]);
    }
    EXPECT_LT(ei, 0.9 * ep) << dtype_name(t);
  }
  // A column that is never activated (importance 0) still gets a sane fit.
  std::vector<float> zero_imp(static_cast<size_t>(k), 0.0f);
  const std::vector<float> yz =
      decode(DType::kQ6_K, Layout::kRowWise, encode(DType::kQ6_K, Layout::kRowWise, w, n, k, zero_imp), n, k);
  EXPECT_LT(rel_rmse(w, yz), rmse_bound(DType::kQ6_K));
}

// --- Errors ---------------------------------------------------------------------------------------------------

void expect_error(const Status& s, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.to_string();
}

TEST(LayoutErrors, ShapeAndDtype) {
  expect_error(check_matrix_shape(DType::kF16, Layout::kRowWise, 4, 4), StatusCode::kUnsupported,
               "F16 has no block layout");
  expect_error(check_matrix_shape(DType::kQ4_K, static_cast<Layout>(9), 4, 4), StatusCode::kUnsupported,
               "unknown layout 9");
  expect_error(check_matrix_shape(DType::kQ4_K, Layout::kRowWise, 0, 4), StatusCode::kInvalidArgument,
               "shape [0, 4] must be at least [1, 1]");
  expect_error(check_matrix_shape(DType::kQ8_0, Layout::kFlat, int64_t{1} << 40, int64_t{1} << 40),
               StatusCode::kInvalidArgument, "overflows");
  EXPECT_TRUE(check_matrix_shape(DType::kQ6_K, Layout::kColumnWise, 3, 5).ok());
}

TEST(LayoutErrors, QuantizeArguments) {
  const std::vector<float> w = normal_values(6 * 40, 11);
  std::vector<uint8_t> dst(quantized_size_bytes(DType::kQ8_0, Layout::kRowWise, 6, 40));
  expect_error(quantize_matrix({DType::kQ8_0, Layout::kRowWise, std::span(w).first(200), 6, 40, {}, dst}),
               StatusCode::kInvalidArgument, "src has 200 values, expected 240 for [6, 40]");
  std::vector<uint8_t> small(dst.size() - 1);
  expect_error(quantize_matrix({DType::kQ8_0, Layout::kRowWise, w, 6, 40, {}, small}),
               StatusCode::kInvalidArgument, "dst has 407 bytes, expected 408 for Q8_0 row_wise [6, 40]");
  std::vector<float> imp(39, 1.0f);
  expect_error(quantize_matrix({DType::kQ8_0, Layout::kRowWise, w, 6, 40, imp, dst}), StatusCode::kInvalidArgument,
               "importance has 39 values, expected k_cols = 40");
  imp.assign(40, 1.0f);
  imp[3] = -1.0f;
  expect_error(quantize_matrix({DType::kQ8_0, Layout::kRowWise, w, 6, 40, imp, dst}), StatusCode::kInvalidArgument,
               "importance[3] = -1.000000 is negative");
  imp[3] = std::nanf("");
  expect_error(quantize_matrix({DType::kQ8_0, Layout::kRowWise, w, 6, 40, imp, dst}), StatusCode::kNonFinite,
               "importance[3] is not finite");
  expect_error(quantize_matrix({DType::kBF16, Layout::kRowWise, w, 6, 40, {}, dst}), StatusCode::kUnsupported,
               "BF16 has no block layout");
  // The pass-through types decode but are never encoded.
  for (DType t : {DType::kQ4_0, DType::kQ5_0, DType::kQ5_K}) {
    std::vector<uint8_t> out(quantized_size_bytes(t, Layout::kRowWise, 6, 40));
    expect_error(quantize_matrix({t, Layout::kRowWise, w, 6, 40, {}, out}), StatusCode::kUnsupported,
                 std::string(dtype_name(t)) + " is a pass-through type");
  }
}

// Pass-through types decode through ggml's decoders in every row layout: a row_wise matrix of whole blocks is
// the blocks' values in order, and a padded row_wise matrix drops each row's padding.
TEST(LayoutPassThrough, DecodesGgmlBlocks) {
  std::mt19937 rng(5);
  for (DType t : {DType::kQ4_0, DType::kQ5_0, DType::kQ5_K}) {
    const int64_t B = block_elems(t), n = 3, k = 2 * B;
    std::vector<uint8_t> bytes(quantized_size_bytes(t, Layout::kRowWise, n, k));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    for (int64_t blk = 0; blk < n * 2; ++blk) {  // finite f16 scales (d, and dmin for Q5_K)
      bytes[static_cast<size_t>(blk * block_bytes(t)) + 1] = 0x20;
      if (t == DType::kQ5_K) bytes[static_cast<size_t>(blk * block_bytes(t)) + 3] = 0x20;
    }
    std::vector<float> want(static_cast<size_t>(n * k));
    const GgmlBlockType g = t == DType::kQ4_0 ? GgmlBlockType::kQ4_0 : t == DType::kQ5_0 ? GgmlBlockType::kQ5_0
                                                                                           : GgmlBlockType::kQ5_K;
    ASSERT_TRUE(dequantize_ggml_blocks(g, std::as_bytes(std::span(bytes)), want).ok());
    EXPECT_EQ(decode(t, Layout::kRowWise, bytes, n, k), want) << dtype_name(t);
    const std::vector<float> first = decode(t, Layout::kRowWise, bytes, n, k - 1);  // last value of each row is padding
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c + 1 < k; ++c) EXPECT_EQ(first[r * (k - 1) + c], want[r * k + c]);
    }
  }
}

TEST(LayoutErrors, NonFiniteWeightsAreNamed) {
  for (Layout l : kLayouts) {
    for (DType t : kBlockTypes) {
      std::vector<float> w = normal_values(300 * 70, 12);
      w[3 * 70 + 5] = INFINITY;
      w[290 * 70 + 1] = std::nanf("");
      std::vector<uint8_t> dst(quantized_size_bytes(t, l, 300, 70));
      expect_error(quantize_matrix({t, l, w, 300, 70, {}, dst}), StatusCode::kNonFinite, "W[3, 5] is not finite");
      // In a streamed chunk the row is still the matrix's row.
      const std::span<const float> rows(w.data() + 256 * 70, 44 * 70);
      expect_error(quantize_rows({t, l, 300, 70, 256, rows, {}, dst}), StatusCode::kNonFinite,
                   "W[290, 1] is not finite");
    }
  }
}

TEST(LayoutErrors, ChunkBoundaries) {
  const std::vector<float> w = normal_values(600 * 3, 13);
  std::vector<uint8_t> dst(quantized_size_bytes(DType::kQ4_K, Layout::kColumnWise, 600, 3));
  const auto rows = [&](int64_t r0, int64_t r1) {
    return std::span<const float>(w.data() + r0 * 3, static_cast<size_t>((r1 - r0) * 3));
  };
  expect_error(quantize_rows({DType::kQ4_K, Layout::kColumnWise, 600, 3, 100, rows(100, 356), {}, dst}),
               StatusCode::kInvalidArgument, "chunk rows [100, 356): column_wise Q4_K chunks must start on a "
                                             "multiple of 256 rows");
  expect_error(quantize_rows({DType::kQ4_K, Layout::kColumnWise, 600, 3, 256, rows(256, 300), {}, dst}),
               StatusCode::kInvalidArgument, "chunk rows [256, 300)");
  EXPECT_TRUE(quantize_rows({DType::kQ4_K, Layout::kColumnWise, 600, 3, 512, rows(512, 600), {}, dst}).ok());
  std::vector<uint8_t> flat(quantized_size_bytes(DType::kQ8_0, Layout::kFlat, 600, 3));
  expect_error(quantize_rows({DType::kQ8_0, Layout::kFlat, 600, 3, 1, rows(1, 33), {}, flat}),
               StatusCode::kInvalidArgument, "flat Q8_0 chunks must start and end on a block boundary");
  EXPECT_TRUE(quantize_rows({DType::kQ8_0, Layout::kFlat, 600, 3, 32, rows(32, 64), {}, flat}).ok());
  std::vector<uint8_t> rw(quantized_size_bytes(DType::kQ8_0, Layout::kRowWise, 600, 3));
  EXPECT_TRUE(quantize_rows({DType::kQ8_0, Layout::kRowWise, 600, 3, 7, rows(7, 11), {}, rw}).ok());
  expect_error(quantize_rows({DType::kQ8_0, Layout::kRowWise, 600, 3, 590, rows(0, 20), {}, rw}),
               StatusCode::kInvalidArgument, "chunk rows [590, 610) outside the matrix's 600 rows");
  expect_error(quantize_rows({DType::kQ8_0, Layout::kRowWise, 600, 3, 0, std::span(w).first(4), {}, rw}),
               StatusCode::kInvalidArgument, "chunk has 4 values, expected a positive multiple of k_cols = 3");
  expect_error(quantize_rows({DType::kQ8_0, Layout::kRowWise, 600, 3, 0, {}, {}, rw}),
               StatusCode::kInvalidArgument, "chunk has 0 values");
}

TEST(LayoutErrors, DequantizeArguments) {
  std::vector<uint8_t> src(quantized_size_bytes(DType::kQ6_K, Layout::kColumnWise, 10, 20));
  std::vector<float> dst(200);
  EXPECT_TRUE(dequantize_matrix({DType::kQ6_K, Layout::kColumnWise, src, 10, 20, dst}).ok());
  expect_error(dequantize_matrix({DType::kQ6_K, Layout::kColumnWise, std::span(src).first(src.size() - 2), 10, 20,
                                  dst}),
               StatusCode::kInvalidArgument, "src has 4198 bytes, expected 4200 for Q6_K column_wise [10, 20]");
  expect_error(dequantize_matrix({DType::kQ6_K, Layout::kColumnWise, src, 10, 20, std::span(dst).first(199)}),
               StatusCode::kInvalidArgument, "dst has 199 values, expected 200 for [10, 20]");
  expect_error(dequantize_matrix({DType::kF32, Layout::kColumnWise, src, 10, 20, dst}), StatusCode::kUnsupported,
               "F32 has no block layout");
}

}  // namespace
}  // namespace rdrr::quant
