#include "quant/dtype.h"

#include <gtest/gtest.h>

namespace rdrr::quant {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kQ4_0,
                  DType::kQ5_0, DType::kQ5_K}) {
    auto parsed = parse_dtype(dtype_name(t));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_FALSE(parse_dtype("Q4_1").has_value());
  for (Layout l : {Layout::kFlat, Layout::kRowWise, Layout::kColumnWise}) {
    EXPECT_EQ(parse_layout(layout_name(l)), l);
  }
  EXPECT_FALSE(parse_layout("col").has_value());
}

TEST(DType, BlockGeometryMatchesGguf) {
  EXPECT_EQ(block_bytes(DType::kQ4_K), 144);
  EXPECT_EQ(block_elems(DType::kQ4_K), 256);
  EXPECT_EQ(block_bytes(DType::kQ6_K), 210);
  EXPECT_EQ(block_bytes(DType::kQ8_0), 34);
  EXPECT_EQ(block_elems(DType::kQ8_0), 32);
  EXPECT_EQ(block_bytes(DType::kBF16), 2);
  EXPECT_FALSE(is_block_quantized(DType::kF16));
  EXPECT_TRUE(is_block_quantized(DType::kQ6_K));
  EXPECT_EQ(block_bytes(DType::kQ4_0), 18);
  EXPECT_EQ(block_bytes(DType::kQ5_0), 22);
  EXPECT_EQ(block_bytes(DType::kQ5_K), 176);
  EXPECT_EQ(block_elems(DType::kQ5_K), 256);
  EXPECT_TRUE(is_pass_through(DType::kQ5_0));
  EXPECT_FALSE(is_pass_through(DType::kQ4_K));
}

}  // namespace
}  // namespace rdrr::quant
