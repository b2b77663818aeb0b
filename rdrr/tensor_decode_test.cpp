// decode_tensor_rows_f32: every aligned row range of every dtype and layout decodes to the same values as the
// whole tensor (decode_tensor_f32), bit for bit; misaligned or out-of-range requests are refused.
#include "rdrr/tensor_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/f16.h"
#include "quant/layout.h"

namespace rdrr {
namespace {

constexpr std::string_view kName = "model.layers.0.mlp.down_proj.weight";

struct Encoded {
  TensorEntry entry;
  std::vector<std::byte> bytes;
};

Encoded encode(quant::DType dtype, std::optional<quant::Layout> layout, uint64_t n, uint64_t k) {
  std::vector<float> w(n * k);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 0.05);
  Encoded e;
  e.entry.name = std::string(kName);
  e.entry.dtype = dtype;
  e.entry.shape = {n, k};
  e.entry.layout = layout;
  if (dtype == quant::DType::kF32) {
    e.bytes.resize(w.size() * 4);
    std::memcpy(e.bytes.data(), w.data(), e.bytes.size());
  } else if (dtype == quant::DType::kF16 || dtype == quant::DType::kBF16) {
    std::vector<uint16_t> h(w.size());
    if (dtype == quant::DType::kF16) {
      quant::f32_to_f16(w, h);
    } else {
      quant::f32_to_bf16(w, h);
    }
    e.bytes.resize(h.size() * 2);
    std::memcpy(e.bytes.data(), h.data(), e.bytes.size());
  } else {
    const int64_t ni = static_cast<int64_t>(n), ki = static_cast<int64_t>(k);
    e.bytes.resize(quant::quantized_size_bytes(dtype, *layout, ni, ki));
    const Status s = quant::quantize_matrix({.dtype = dtype, .layout = *layout, .src = w, .n_rows = ni, .k_cols = ki,
                                             .importance = {},
                                             .dst = {reinterpret_cast<uint8_t*>(e.bytes.data()), e.bytes.size()}});
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  e.entry.size_bytes = e.bytes.size();
  return e;
}

void expect_rows_match_whole(const Encoded& e) {
  const uint64_t n = e.entry.shape[0], k = e.entry.shape[1];
  std::vector<float> whole(n * k);
  ASSERT_TRUE(decode_tensor_f32(e.entry, e.bytes, whole).ok());
  const uint64_t align = tensor_row_alignment(e.entry);
  for (uint64_t step : {align, 2 * align, 3 * align}) {
    for (uint64_t r0 = 0; r0 < n; r0 += step) {
      const uint64_t rows = std::min(step, n - r0);
      std::vector<float> out(rows * k, NAN);
      const Status s = decode_tensor_rows_f32(e.entry, e.bytes, r0, rows, out);
      ASSERT_TRUE(s.ok()) << s.to_string();
      ASSERT_EQ(0, std::memcmp(out.data(), whole.data() + r0 * k, out.size() * 4))
          << quant::dtype_name(e.entry.dtype) << " rows " << r0 << "+" << rows << " of " << n;
    }
  }
}

TEST(TensorDecodeRows, EveryDtypeAndLayoutMatchesTheWholeTensor) {
  using quant::DType;
  using quant::Layout;
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) expect_rows_match_whole(encode(d, std::nullopt, 37, 48));
  for (DType d : {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    for (Layout l : {Layout::kFlat, Layout::kRowWise, Layout::kColumnWise}) {
      expect_rows_match_whole(encode(d, l, 600, 512));  // column_wise: 3 groups, the last one partial
      expect_rows_match_whole(encode(d, l, 40, 320));   // K not a multiple of 256: flat decodes whole
    }
  }
}

TEST(TensorDecodeRows, AlignmentFollowsTheLayout) {
  using quant::DType;
  using quant::Layout;
  EXPECT_EQ(tensor_row_alignment(encode(DType::kF16, std::nullopt, 4, 8).entry), 1u);
  EXPECT_EQ(tensor_row_alignment(encode(DType::kQ4_K, Layout::kRowWise, 4, 320).entry), 1u);
  EXPECT_EQ(tensor_row_alignment(encode(DType::kQ4_K, Layout::kFlat, 4, 512).entry), 1u);
  EXPECT_EQ(tensor_row_alignment(encode(DType::kQ4_K, Layout::kFlat, 4, 320).entry), 4u);
  EXPECT_EQ(tensor_row_alignment(encode(DType::kQ4_K, Layout::kColumnWise, 4, 256).entry), 256u);
  EXPECT_EQ(tensor_row_alignment(encode(DType::kQ8_0, Layout::kColumnWise, 4, 256).entry), 32u);
}

TEST(TensorDecodeRows, RefusesMisalignedOutOfRangeAndWrongOutput) {
  const Encoded col = encode(quant::DType::kQ4_K, quant::Layout::kColumnWise, 600, 256);
  std::vector<float> out(256 * 256);
  Status s = decode_tensor_rows_f32(col.entry, col.bytes, 100, 256, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor " + std::string(kName)), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("aligned to 256"), std::string::npos) << s.to_string();
  EXPECT_EQ(decode_tensor_rows_f32(col.entry, col.bytes, 512, 256, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(decode_tensor_rows_f32(col.entry, col.bytes, 0, 256, std::span<float>(out).first(5)).code(),
            StatusCode::kInvalidArgument);
  const Encoded f = encode(quant::DType::kF32, std::nullopt, 4, 8);
  std::vector<float> two(16);
  EXPECT_EQ(decode_tensor_rows_f32(f.entry, f.bytes, 3, 2, two).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(decode_tensor_rows_f32(f.entry, std::span(f.bytes).first(10), 0, 2, two).code(),
            StatusCode::kValidation);
}

}  // namespace
}  // namespace rdrr
