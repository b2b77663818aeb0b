#include "quant/status.h"

#include <gtest/gtest.h>

namespace rdrr {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return error(StatusCode::kInvalidArgument, "value " + std::to_string(v) + " <= 0");
  return v;
}

Result<int> doubled(int v) {
  RDRR_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

TEST(Status, ContextChainsFrames) {
  Status s = error(StatusCode::kValidation, "offset end 91234 > shard size 90000");
  Status chained = s.context("tensor blk.4.ffn_up").context("shard 3");
  EXPECT_EQ(chained.code(), StatusCode::kValidation);
  EXPECT_EQ(chained.message(), "shard 3: tensor blk.4.ffn_up: offset end 91234 > shard size 90000");
  EXPECT_EQ(chained.to_string(), "VALIDATION: " + chained.message());
  EXPECT_TRUE(Status::Ok().context("ignored").ok());
}

TEST(Result, PropagatesErrorsAndValues) {
  Result<int> good = doubled(21);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  Result<int> bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("-1 <= 0"), std::string::npos);
}

}  // namespace
}  // namespace rdrr
