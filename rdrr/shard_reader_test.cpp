#include "rdrr/shard_reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "rdrr/io_test_util.h"
#include "rdrr/sha256.h"
#include "rdrr/shard_writer.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr {
namespace {

using testing_io::make_bytes;
using test::TempDir;

constexpr uint64_t kS = 4096;

// A small pack's shards: tensors "t0".."t4"; t2 spans three shards.
struct Fixture {
  TempDir tmp;
  std::vector<std::string> names{"t0", "t1", "t2", "t3", "t4"};
  std::vector<std::vector<std::byte>> data;
  std::vector<TensorPlacement> placements;
  std::vector<ShardInfo> shards;

  Fixture() {
    const uint64_t sizes[] = {1000, 3000, 2 * kS + 500, 700, 1};
    ShardWriterOptions o;
    o.max_shard_bytes = kS;
    o.sync_to_disk = false;
    Result<ShardWriter> w = ShardWriter::create(tmp.path(), o);
    EXPECT_TRUE(w.ok());
    for (size_t i = 0; i < names.size(); ++i) {
      data.push_back(make_bytes(100 + i, sizes[i]));
      Result<TensorPlacement> p = w->add_tensor(data.back());
      EXPECT_TRUE(p.ok());
      placements.push_back(*p);
    }
    Result<std::vector<ShardInfo>> s = w->finish();
    EXPECT_TRUE(s.ok());
    shards = *s;
  }

  ShardReader open() const {
    Result<ShardReader> r = ShardReader::open(tmp.path(), shards);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(r).value();
  }

  void flip_byte(uint32_t shard, uint64_t offset) const {
    std::fstream f(tmp.path() / shard_filename(shard), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x5A));
  }
};

TEST(ShardReader, LayoutOfTheFixture) {
  Fixture fx;
  // t0 and t1 (at 1024) in shard 0; t2 > S starts shard 1 and spills into 2 and 3; t3, t4 follow it.
  EXPECT_EQ(fx.placements[1], (TensorPlacement{{Span{0, 1024, 3000}}}));
  EXPECT_EQ(fx.placements[2], (TensorPlacement{{Span{1, 0, kS}, Span{2, 0, kS}, Span{3, 0, 500}}}));
  EXPECT_EQ(fx.placements[4], (TensorPlacement{{Span{3, 1280, 1}}}));
  EXPECT_EQ(fx.shards.size(), 4u);
}

TEST(ShardReader, RoundTripSingleSpanIsZeroCopyMultiSpanIsGathered) {
  Fixture fx;
  ShardReader reader = fx.open();
  ASSERT_TRUE(reader.check_sizes().ok());
  for (size_t i = 0; i < fx.names.size(); ++i) {
    Result<TensorBytes> t = reader.tensor_bytes(fx.names[i], fx.placements[i]);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    const std::span<const std::byte> got = t->bytes();
    ASSERT_EQ(got.size(), fx.data[i].size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), fx.data[i].begin())) << fx.names[i];
    EXPECT_EQ(t->is_copy(), fx.placements[i].spans.size() > 1) << fx.names[i];
  }
  // The zero-copy view points into the mapping of the shard.
  Result<TensorBytes> t0 = reader.tensor_bytes("t0", fx.placements[0]);
  ASSERT_TRUE(t0.ok());
  Result<std::span<const std::byte>> raw = reader.span_bytes(fx.placements[0].spans[0]);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(t0->bytes().data(), raw->data());

  // Moving a gathered copy keeps its bytes.
  Result<TensorBytes> t2 = reader.tensor_bytes("t2", fx.placements[2]);
  ASSERT_TRUE(t2.ok());
  TensorBytes moved = std::move(t2).value();
  EXPECT_TRUE(std::equal(moved.bytes().begin(), moved.bytes().end(), fx.data[2].begin()));
  EXPECT_EQ(moved.bytes().size(), fx.data[2].size());
}

TEST(ShardReader, SpanListReadIntoBufferAndTensorHash) {
  Fixture fx;
  ShardReader reader = fx.open();
  Result<std::vector<std::span<const std::byte>>> spans = reader.tensor_spans("t2", fx.placements[2]);
  ASSERT_TRUE(spans.ok());
  ASSERT_EQ(spans->size(), 3u);
  EXPECT_EQ((*spans)[0].size(), kS);

  std::vector<std::byte> out(fx.data[2].size());
  ASSERT_TRUE(reader.read_tensor("t2", fx.placements[2], out).ok());
  EXPECT_EQ(out, fx.data[2]);
  std::vector<std::byte> wrong(10);
  const Status bad = reader.read_tensor("t2", fx.placements[2], wrong);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("tensor t2: output buffer 10 bytes"), std::string::npos) << bad.message();

  Result<std::string> hex = reader.tensor_sha256("t2", fx.placements[2]);
  ASSERT_TRUE(hex.ok());
  EXPECT_EQ(*hex, sha256_hex(fx.data[2]));
}

TEST(ShardReader, TruncatedShardNamesTensorSpanAndShard) {
  Fixture fx;
  // t2's second span is [0, 4096) of shard 2; truncate shard 2 to 4000 bytes.
  std::filesystem::resize_file(fx.tmp.path() / "shard_00002.bin", 4000);
  ShardReader reader = fx.open();
  const Result<TensorBytes> t = reader.tensor_bytes("t2", fx.placements[2]);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kValidation);
  EXPECT_EQ(t.status().message(), "tensor t2: span 1: offset end 4096 > shard_00002.bin size 4000");

  const Status sizes = reader.check_sizes();
  EXPECT_EQ(sizes.code(), StatusCode::kValidation);
  EXPECT_EQ(sizes.message(), "shard_00002.bin: file size 4000 != expected size 4096");
  const Status verify = reader.verify_shard(2);
  EXPECT_EQ(verify.code(), StatusCode::kIntegrity);
  EXPECT_NE(verify.message().find("shard_00002.bin: size 4000 bytes, expected 4096"), std::string::npos);
  EXPECT_TRUE(reader.tensor_bytes("t0", fx.placements[0]).ok());  // other shards still readable
}

TEST(ShardReader, BadPlacementsAreValidationErrors) {
  Fixture fx;
  ShardReader reader = fx.open();
  const Result<TensorBytes> far = reader.tensor_bytes("x", TensorPlacement{{Span{0, 0, 10}, Span{7, 0, 1}}});
  EXPECT_EQ(far.status().code(), StatusCode::kValidation);
  EXPECT_EQ(far.status().message(), "tensor x: span 1: shard index 7 >= shard count 4");
  const Result<TensorBytes> empty = reader.tensor_bytes("y", TensorPlacement{});
  EXPECT_EQ(empty.status().code(), StatusCode::kValidation);
  EXPECT_EQ(empty.status().message(), "tensor y: no spans");
  const uint64_t huge = std::numeric_limits<uint64_t>::max();
  const Result<TensorBytes> wrap = reader.tensor_bytes("z", TensorPlacement{{Span{0, huge - 1, 10}}});
  EXPECT_EQ(wrap.status().code(), StatusCode::kValidation);
  EXPECT_NE(wrap.status().message().find("overflows"), std::string::npos) << wrap.status().message();
}

TEST(ShardReader, OpenErrors) {
  Fixture fx;
  std::vector<ShardInfo> shuffled = fx.shards;
  std::swap(shuffled[0], shuffled[1]);
  const Result<ShardReader> a = ShardReader::open(fx.tmp.path(), shuffled);
  EXPECT_EQ(a.status().code(), StatusCode::kValidation);
  EXPECT_NE(a.status().message().find("index 1 != position 0"), std::string::npos) << a.status().message();

  std::vector<ShardInfo> escaping = fx.shards;
  escaping[1].filename = "../shard_00001.bin";
  const Result<ShardReader> b = ShardReader::open(fx.tmp.path(), escaping);
  EXPECT_EQ(b.status().code(), StatusCode::kValidation);
  EXPECT_NE(b.status().message().find("not a plain file name"), std::string::npos) << b.status().message();

  std::filesystem::remove(fx.tmp.path() / "shard_00003.bin");
  const Result<ShardReader> c = ShardReader::open(fx.tmp.path(), fx.shards);
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("shard_00003.bin"), std::string::npos) << c.status().message();

  std::vector<ShardInfo> unnamed = fx.shards;
  unnamed.pop_back();
  for (ShardInfo& s : unnamed) s.filename.clear();  // defaults to shard_filename(index)
  EXPECT_TRUE(ShardReader::open(fx.tmp.path(), unnamed).ok());
}

TEST(ShardReader, VerifyFindsTheFirstBadShard) {
  Fixture fx;
  {
    ShardReader reader = fx.open();
    EXPECT_TRUE(reader.verify_all().ok());
    EXPECT_TRUE(reader.bad_shards().empty());
    for (uint32_t i = 0; i < fx.shards.size(); ++i) EXPECT_TRUE(reader.verify_shard(i, fx.shards[i].sha256_hex).ok());
  }
  fx.flip_byte(1, 10);
  ShardReader reader = fx.open();  // a fresh mapping sees the change
  const Status one = reader.verify_all();
  EXPECT_EQ(one.code(), StatusCode::kIntegrity);
  EXPECT_EQ(one.message(), "shard_00001.bin: sha256 mismatch: expected " + fx.shards[1].sha256_hex + ", actual " +
                               sha256_hex(testing_io::read_file(fx.tmp.path() / "shard_00001.bin")));
  EXPECT_EQ(reader.bad_shards(), std::vector<uint32_t>{1});

  fx.flip_byte(3, 0);
  ShardReader reader2 = fx.open();
  const Status two = reader2.verify_all();
  EXPECT_EQ(two.code(), StatusCode::kIntegrity);
  EXPECT_EQ(two.message().rfind("shard_00001.bin: sha256 mismatch", 0), 0u) << two.message();
  EXPECT_NE(two.message().find("(2 of 4 shards bad)"), std::string::npos) << two.message();
  EXPECT_EQ(reader2.bad_shards(), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(reader2.verify_shard(9, "").code(), StatusCode::kInvalidArgument);
}

TEST(ShardReader, TensorsOverlappingNamesTheTensorsInABadShard) {
  Fixture fx;
  std::vector<TensorRef> refs;
  for (size_t i = 0; i < fx.names.size(); ++i) refs.push_back(TensorRef{fx.names[i], &fx.placements[i]});
  const uint64_t all = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(tensors_overlapping(refs, 0, 0, all), (std::vector<std::string>{"t0", "t1"}));
  EXPECT_EQ(tensors_overlapping(refs, 2, 0, all), std::vector<std::string>{"t2"});
  EXPECT_EQ(tensors_overlapping(refs, 3, 0, all), (std::vector<std::string>{"t2", "t3", "t4"}));
  // Byte ranges: shard 3 holds t2's tail [0, 500), t3 at 512, t4 at 1280.
  EXPECT_EQ(fx.placements[3], (TensorPlacement{{Span{3, 512, 700}}}));
  EXPECT_EQ(tensors_overlapping(refs, 3, 500, 512), std::vector<std::string>{});  // padding only
  EXPECT_EQ(tensors_overlapping(refs, 3, 499, 513), (std::vector<std::string>{"t2", "t3"}));
  EXPECT_EQ(tensors_overlapping(refs, 3, 1280, 1281), std::vector<std::string>{"t4"});
  EXPECT_TRUE(tensors_overlapping(refs, 9, 0, all).empty());
}

}  // namespace
}  // namespace rdrr
