#include "runtime/binding_split.h"

#include <gtest/gtest.h>

namespace rdrr::runtime {
namespace {

// Invariants every split must satisfy: aligned offsets, ranges within the limit, granules contiguous and
// complete, every granule's bytes inside its range.
void check_split(const BindingSplitRequest& req, const std::vector<BindingRange>& ranges) {
  const uint64_t granules = (req.total_bytes + req.granule_bytes - 1) / req.granule_bytes;
  uint64_t next = 0;
  for (const BindingRange& r : ranges) {
    EXPECT_EQ(r.bind_offset_bytes % req.offset_alignment, 0u);
    EXPECT_LE(r.bind_size_bytes, req.max_range_bytes);
    EXPECT_LT(r.skip_bytes, req.offset_alignment);
    EXPECT_EQ(r.first_granule, next);
    EXPECT_GT(r.granule_count, 0u);
    const uint64_t start = req.base_offset_bytes + r.first_granule * req.granule_bytes;
    const uint64_t end =
        std::min(req.base_offset_bytes + req.total_bytes, start + r.granule_count * req.granule_bytes);
    EXPECT_EQ(r.bind_offset_bytes + r.skip_bytes, start);
    EXPECT_EQ(r.bind_offset_bytes + r.bind_size_bytes, end);
    next += r.granule_count;
  }
  EXPECT_EQ(next, granules);
}

TEST(BindingSplit, SmallTensorIsOneRange) {
  const BindingSplitRequest req{256, 1000, 100, 1 << 20, 16};
  Result<std::vector<BindingRange>> r = split_binding(req);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].bind_offset_bytes, 256u);
  EXPECT_EQ((*r)[0].bind_size_bytes, 1000u);
  check_split(req, *r);
}

TEST(BindingSplit, LargeTensorSplitsAtGranulesWithAlignmentSkip) {
  // Q4_K rows of 16 blocks (2304 bytes), 128 MiB limit, 10000 rows: 23 MB -> forced down to a 1 MiB cap.
  const BindingSplitRequest req{4096 + 144, 10000ull * 2304, 2304, 1 << 20, 64};
  Result<std::vector<BindingRange>> r = split_binding(req);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->size(), 20u);
  check_split(req, *r);
  EXPECT_EQ((*r)[0].skip_bytes, 144u % 64u);
}

TEST(BindingSplit, ShortLastGranule) {
  const BindingSplitRequest req{0, 1050, 100, 300, 4};  // 11 granules, the last one 50 bytes
  Result<std::vector<BindingRange>> r = split_binding(req);
  ASSERT_TRUE(r.ok());
  check_split(req, *r);
  EXPECT_EQ(r->back().bind_offset_bytes + r->back().bind_size_bytes, 1050u);
}

TEST(BindingSplit, OddGranulesAgainstLargeAlignment) {
  for (uint64_t base : {0ull, 2ull, 210ull, 4094ull}) {
    const BindingSplitRequest req{base, 210ull * 997, 210, 4096, 256};  // Q6_K-sized granules
    Result<std::vector<BindingRange>> r = split_binding(req);
    ASSERT_TRUE(r.ok());
    check_split(req, *r);
  }
}

TEST(BindingSplit, Errors) {
  Result<std::vector<BindingRange>> r = split_binding({0, 1000, 600, 512, 16});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("granule 0 (600 bytes + 0 alignment skip) exceeds maxStorageBufferRange 512"),
            std::string::npos)
      << r.status().message();
  r = split_binding({0, 1000, 100, 512, 12});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("offset_alignment 12 is not a power of two"), std::string::npos);
  r = split_binding({0, 0, 100, 512, 16});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("total_bytes is 0"), std::string::npos);
  r = split_binding({0, 100, 0, 512, 16});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("granule_bytes is 0"), std::string::npos);
}

}  // namespace
}  // namespace rdrr::runtime
