#include "rdrr/shard_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rdrr/io_test_util.h"
#include "rdrr/sha256.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr {
namespace {

using testing_io::make_bytes;
using testing_io::read_file;
using test::TempDir;

constexpr uint64_t kS = 4096;  // small shards keep the tests fast

ShardPlanner planner(uint64_t s = kS) {
  Result<ShardPlanner> p = ShardPlanner::create(s);
  EXPECT_TRUE(p.ok());
  return std::move(p).value();
}

TensorPlacement place(ShardPlanner& p, uint64_t n) {
  Result<TensorPlacement> r = p.place(n);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : TensorPlacement{};
}

TensorPlacement one(uint32_t shard, uint64_t offset, uint64_t size) { return {{Span{shard, offset, size}}}; }

ShardWriterOptions small_options() {
  ShardWriterOptions o;
  o.max_shard_bytes = kS;
  o.buffer_bytes = 1000;  // smaller than a shard: exercises both buffered and direct writes
  o.sync_to_disk = false;
  return o;
}

TEST(ShardPlanner, RejectsBadShardSizes) {
  for (uint64_t bad : {uint64_t{0}, uint64_t{100}, uint64_t{255}, kS + 1, kS + 128}) {
    Result<ShardPlanner> p = ShardPlanner::create(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("multiple of 256"), std::string::npos) << p.status().message();
  }
  EXPECT_TRUE(ShardPlanner::create(256).ok());
}

TEST(ShardPlanner, TensorExactlyFillingAShard) {
  ShardPlanner p = planner();
  EXPECT_EQ(place(p, kS), one(0, 0, kS));
  EXPECT_EQ(place(p, 1), one(1, 0, 1));  // the full shard is closed
  EXPECT_EQ(p.shard_sizes(), (std::vector<uint64_t>{kS, 1}));
}

TEST(ShardPlanner, FillsToTheEndThenOneByteOverStartsANewShard) {
  ShardPlanner p = planner();
  EXPECT_EQ(place(p, 100), one(0, 0, 100));
  EXPECT_EQ(place(p, kS - 256), one(0, 256, kS - 256));  // ends exactly at S
  ShardPlanner q = planner();
  EXPECT_EQ(place(q, 100), one(0, 0, 100));
  EXPECT_EQ(place(q, kS - 255), one(1, 0, kS - 255));  // one byte too many for the room left
  EXPECT_EQ(q.shard_sizes(), (std::vector<uint64_t>{100, kS - 255}));  // no trailing padding
  EXPECT_EQ(place(q, 10), one(2, 0, 10));  // A = align_up(S - 255) = S: no room left
}

TEST(ShardPlanner, TensorLargerThanTwoShardsSpills) {
  ShardPlanner p = planner();
  EXPECT_EQ(place(p, 10), one(0, 0, 10));
  const TensorPlacement big = place(p, 2 * kS + 100);
  EXPECT_EQ(big, (TensorPlacement{{Span{1, 0, kS}, Span{2, 0, kS}, Span{3, 0, 100}}}));
  EXPECT_EQ(place(p, 10), one(3, 256, 10));  // the last span's shard keeps filling
  EXPECT_EQ(p.shard_sizes(), (std::vector<uint64_t>{10, kS, kS, 266}));
}

TEST(ShardPlanner, BigTensorFirstUsesTheEmptyShard) {
  ShardPlanner p = planner();
  EXPECT_EQ(place(p, 2 * kS), (TensorPlacement{{Span{0, 0, kS}, Span{1, 0, kS}}}));
  EXPECT_EQ(place(p, 1), one(2, 0, 1));
}

TEST(ShardPlanner, ZeroByteTensorsStayInTheCurrentShard) {
  ShardPlanner p = planner();
  EXPECT_EQ(place(p, 0), one(0, 0, 0));
  EXPECT_EQ(place(p, 1), one(0, 0, 1));
  EXPECT_EQ(place(p, 0), one(0, 256, 0));
  EXPECT_EQ(place(p, kS - 256), one(0, 256, kS - 256));
  EXPECT_EQ(place(p, 0), one(0, kS, 0));  // at the very end, still in bounds
  EXPECT_EQ(p.shard_sizes(), (std::vector<uint64_t>{kS}));
}

TEST(ShardPlanner, TooManyShardsIsAnErrorAndLeavesStateUnchanged) {
  ShardPlanner p = planner(256);
  EXPECT_EQ(place(p, 1), one(0, 0, 1));
  Result<TensorPlacement> r = p.place(256ull * kMaxShardCount);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("shards"), std::string::npos) << r.status().message();
  EXPECT_EQ(p.shard_sizes(), (std::vector<uint64_t>{1}));
  EXPECT_EQ(place(p, 1), one(1, 0, 1));  // A = 256 = S: the next byte needs a new shard
}

TEST(ShardPlanner, ManyTinyTensorsAreAlignedInBoundsAndDisjoint) {
  ShardPlanner p = planner();
  std::vector<TensorPlacement> all;
  for (uint64_t i = 0; i < 300; ++i) all.push_back(place(p, 1 + (i * 37) % 700));
  uint64_t prev_end = 0;
  uint32_t prev_shard = 0;
  for (const TensorPlacement& t : all) {
    ASSERT_EQ(t.spans.size(), 1u);
    const Span& s = t.spans[0];
    EXPECT_EQ(s.offset_bytes % kTensorAlignmentBytes, 0u);
    EXPECT_LE(s.offset_bytes + s.size_bytes, kS);
    if (s.shard_index == prev_shard) {
      EXPECT_GE(s.offset_bytes, prev_end);
      EXPECT_LT(s.offset_bytes - prev_end, kTensorAlignmentBytes);
    } else {
      EXPECT_EQ(s.shard_index, prev_shard + 1);
      EXPECT_EQ(s.offset_bytes, 0u);
    }
    prev_shard = s.shard_index;
    prev_end = s.offset_bytes + s.size_bytes;
  }
  EXPECT_GT(p.shard_sizes().size(), 20u);
}

// ---- ShardWriter ----

struct Written {
  std::vector<TensorPlacement> placements;
  std::vector<ShardInfo> shards;
};

std::vector<std::vector<std::byte>> sample_tensors() {
  std::vector<std::vector<std::byte>> t;
  const uint64_t sizes[] = {100, kS - 256, 1, kS, 2 * kS + 100, 10, 0, 3000, 3000, 5 * kS + 7, 256, 255};
  uint64_t seed = 1;
  for (uint64_t n : sizes) t.push_back(make_bytes(seed++, n));
  return t;
}

Written write_one_shot(const std::filesystem::path& dir, const std::vector<std::vector<std::byte>>& tensors) {
  Result<ShardWriter> w = ShardWriter::create(dir, small_options());
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  Written out;
  for (const auto& t : tensors) {
    Result<TensorPlacement> p = w->add_tensor(t);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    out.placements.push_back(*p);
  }
  Result<std::vector<ShardInfo>> shards = w->finish();
  EXPECT_TRUE(shards.ok()) << shards.status().to_string();
  out.shards = *shards;
  return out;
}

Written write_streamed(const std::filesystem::path& dir, const std::vector<std::vector<std::byte>>& tensors) {
  Result<ShardWriter> w = ShardWriter::create(dir, small_options());
  EXPECT_TRUE(w.ok());
  Written out;
  size_t chunk = 1;
  for (const auto& t : tensors) {
    EXPECT_TRUE(w->begin_tensor(t.size()).ok());
    std::span<const std::byte> rest(t);
    while (!rest.empty()) {
      const size_t n = std::min(rest.size(), chunk);
      EXPECT_TRUE(w->append(rest.first(n)).ok());
      rest = rest.subspan(n);
      chunk = chunk * 3 % 5003 + 1;  // varied chunk sizes, crossing shard boundaries
    }
    Result<TensorPlacement> p = w->end_tensor();
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    out.placements.push_back(*p);
  }
  Result<std::vector<ShardInfo>> shards = w->finish();
  EXPECT_TRUE(shards.ok());
  out.shards = *shards;
  return out;
}

TEST(ShardWriter, WritesWhatThePlannerPlansAndShardInfosMatchFiles) {
  TempDir tmp;
  const auto tensors = sample_tensors();
  const Written w = write_one_shot(tmp.path(), tensors);
  ShardPlanner p = planner();
  for (size_t i = 0; i < tensors.size(); ++i) EXPECT_EQ(w.placements[i], place(p, tensors[i].size())) << i;

  ASSERT_EQ(w.shards.size(), p.shard_sizes().size());
  uint64_t offset = 0;
  for (uint32_t i = 0; i < w.shards.size(); ++i) {
    const ShardInfo& s = w.shards[i];
    EXPECT_EQ(s.index, i);
    EXPECT_EQ(s.filename, shard_filename(i));
    EXPECT_EQ(s.size_bytes, p.shard_sizes()[i]);
    EXPECT_EQ(s.size_bytes, std::filesystem::file_size(tmp.path() / s.filename));
    EXPECT_LE(s.size_bytes, kS);
    EXPECT_EQ(s.stream_offset_bytes, offset);
    offset += s.size_bytes;
    Result<std::string> hex = sha256_file(tmp.path() / s.filename);
    ASSERT_TRUE(hex.ok());
    EXPECT_EQ(s.sha256_hex, *hex) << s.filename;
  }
  EXPECT_EQ(testing_io::list_dir(tmp.path()).size(), w.shards.size());
}

TEST(ShardWriter, BytesLandAtPlacementsAndPaddingIsZero) {
  TempDir tmp;
  const auto tensors = sample_tensors();
  const Written w = write_one_shot(tmp.path(), tensors);
  std::vector<std::vector<std::byte>> files;
  std::vector<std::vector<bool>> covered;
  for (const ShardInfo& s : w.shards) {
    files.push_back(read_file(tmp.path() / s.filename));
    covered.emplace_back(files.back().size(), false);
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t pos = 0;
    for (const Span& s : w.placements[i].spans) {
      ASSERT_LE(s.offset_bytes + s.size_bytes, files[s.shard_index].size());
      for (uint64_t b = 0; b < s.size_bytes; ++b) {
        ASSERT_EQ(files[s.shard_index][s.offset_bytes + b], tensors[i][pos + b]) << "tensor " << i;
        covered[s.shard_index][s.offset_bytes + b] = true;
      }
      pos += s.size_bytes;
    }
  }
  size_t padding = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    for (size_t b = 0; b < files[f].size(); ++b) {
      if (covered[f][b]) continue;
      ++padding;
      ASSERT_EQ(files[f][b], std::byte{0}) << "shard " << f << " byte " << b;
    }
  }
  EXPECT_GT(padding, 0u);  // the sample has unaligned sizes, so padding exists
}

TEST(ShardWriter, StreamingAndOneShotAreByteIdentical) {
  TempDir a;
  TempDir b;
  const auto tensors = sample_tensors();
  const Written one_shot = write_one_shot(a.path(), tensors);
  const Written streamed = write_streamed(b.path(), tensors);
  EXPECT_EQ(one_shot.placements, streamed.placements);
  EXPECT_EQ(one_shot.shards, streamed.shards);
  for (const ShardInfo& s : one_shot.shards) {
    EXPECT_EQ(read_file(a.path() / s.filename), read_file(b.path() / s.filename)) << s.filename;
  }
}

TEST(ShardWriter, NoTensorsMeansNoShards) {
  TempDir tmp;
  Result<ShardWriter> w = ShardWriter::create(tmp.path(), small_options());
  ASSERT_TRUE(w.ok());
  Result<std::vector<ShardInfo>> shards = w->finish();
  ASSERT_TRUE(shards.ok());
  EXPECT_TRUE(shards->empty());
  EXPECT_TRUE(testing_io::list_dir(tmp.path()).empty());
  EXPECT_EQ(w->add_tensor(make_bytes(1, 1)).status().code(), StatusCode::kInvalidArgument);  // finished
}

TEST(ShardWriter, MisuseIsInvalidArgument) {
  TempDir tmp;
  Result<ShardWriter> w = ShardWriter::create(tmp.path(), small_options());
  ASSERT_TRUE(w.ok());
  const auto data = make_bytes(1, 100);
  EXPECT_EQ(w->append(data).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w->end_tensor().status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(w->begin_tensor(50).ok());
  EXPECT_EQ(w->begin_tensor(10).code(), StatusCode::kInvalidArgument);
  const Status too_much = w->append(data);
  EXPECT_EQ(too_much.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_much.message().find("exceed"), std::string::npos) << too_much.message();
  ASSERT_TRUE(w->append(std::span(data).first(20)).ok());
  const Result<TensorPlacement> short_end = w->end_tensor();
  EXPECT_EQ(short_end.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_end.status().message().find("20 of 50"), std::string::npos) << short_end.status().message();
  EXPECT_EQ(w->finish().status().code(), StatusCode::kInvalidArgument);  // tensor still open
  ASSERT_TRUE(w->append(std::span(data).first(30)).ok());                // recoverable
  EXPECT_TRUE(w->end_tensor().ok());
  EXPECT_TRUE(w->finish().ok());
}

TEST(ShardWriter, MissingDirectoryAndBadShardSize) {
  TempDir tmp;
  Result<ShardWriter> missing = ShardWriter::create(tmp.path() / "nope", small_options());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  ShardWriterOptions o = small_options();
  o.max_shard_bytes = 1000;
  EXPECT_EQ(ShardWriter::create(tmp.path(), o).status().code(), StatusCode::kInvalidArgument);
}

TEST(ShardWriter, StaleShardFileIsAlreadyExists) {
  TempDir tmp;
  testing_io::write_file(tmp.path() / "shard_00001.bin", "stale");
  Result<ShardWriter> w = ShardWriter::create(tmp.path(), small_options());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->add_tensor(make_bytes(1, kS)).ok());
  const Result<TensorPlacement> second = w->add_tensor(make_bytes(2, 10));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find("shard_00001.bin"), std::string::npos) << second.status().message();
  EXPECT_EQ(w->finish().status().code(), StatusCode::kAlreadyExists);  // the failure is sticky
}

TEST(ShardWriter, FileSizeLimitIsNoSpaceNamingTheShard) {
  TempDir tmp;
  ShardWriterOptions o = small_options();
  o.max_shard_bytes = 64 * 1024;
  Result<ShardWriter> w = ShardWriter::create(tmp.path(), o);
  ASSERT_TRUE(w.ok());
  Status failure;
  {
    testing_io::ScopedFileSizeLimit limit(10000);  // SIGXFSZ ignored inside
    ASSERT_TRUE(limit.ok());
    for (int i = 0; i < 8 && failure.ok(); ++i) failure = w->add_tensor(make_bytes(i, 3000)).status();
    if (failure.ok()) failure = w->finish().status();
  }
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.code(), StatusCode::kNoSpace);
  EXPECT_NE(failure.message().find("shard_00000.bin: write failed"), std::string::npos) << failure.message();
  EXPECT_EQ(w->finish().status().code(), StatusCode::kNoSpace);  // sticky, even with the limit lifted
}

TEST(ShardWriter, SyncToDiskProducesTheSameShards) {
  TempDir a;
  TempDir b;
  const auto tensors = sample_tensors();
  const Written plain = write_one_shot(a.path(), tensors);
  ShardWriterOptions o = small_options();
  o.sync_to_disk = true;
  o.buffer_bytes = 8u << 20;
  Result<ShardWriter> w = ShardWriter::create(b.path(), o);
  ASSERT_TRUE(w.ok());
  for (const auto& t : tensors) ASSERT_TRUE(w->add_tensor(t).ok());
  Result<std::vector<ShardInfo>> shards = w->finish();
  ASSERT_TRUE(shards.ok());
  EXPECT_EQ(*shards, plain.shards);
}

}  // namespace
}  // namespace rdrr
