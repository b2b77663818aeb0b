#include "rdrr/placement.h"

#include <gtest/gtest.h>

namespace rdrr {
namespace {

TEST(Placement, ShardFilenameHasFiveDigits) {
  EXPECT_EQ(shard_filename(0), "shard_00000.bin");
  EXPECT_EQ(shard_filename(42), "shard_00042.bin");
}

TEST(Placement, TotalBytesSumsSpans) {
  TensorPlacement p{{Span{0, 256, 1000}, Span{1, 0, 24}}};
  EXPECT_EQ(p.total_bytes(), 1024u);
}

}  // namespace
}  // namespace rdrr
