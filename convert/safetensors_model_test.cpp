// SafeTensorsModel: sharded checkpoints through model.safetensors.index.json, and its error rules.
#include <gtest/gtest.h>

#include "convert/reader_test_util.h"
#include "convert/safetensors.h"

namespace rdrr::convert {
namespace {

using testing::safetensors_bytes;
using testing::test_dir;
using testing::write_file;

// A shard holding F32 [1] tensors with the given names, values 0, 1, 2, ...
std::string shard_bytes(const std::vector<std::string>& names) {
  std::string header = "{";
  std::string data;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) header += ",";
    header += "\"" + names[i] + R"(":{"dtype":"F32","shape":[1],"data_offsets":[)" + std::to_string(4 * i) + "," +
              std::to_string(4 * i + 4) + "]}";
    testing::put<float>(data, static_cast<float>(i));
  }
  return safetensors_bytes(header + "}", data);
}

std::filesystem::path make_sharded(const std::string& weight_map_json) {
  const auto dir = test_dir();
  write_file(dir / "model-00001-of-00002.safetensors", shard_bytes({"a", "b"}));
  write_file(dir / "model-00002-of-00002.safetensors", shard_bytes({"c"}));
  write_file(dir / "model.safetensors.index.json",
             R"({"metadata":{"total_size":12},"weight_map":)" + weight_map_json + "}");
  return dir;
}

const std::string kGoodMap =
    R"({"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors",)"
    R"("c":"model-00002-of-00002.safetensors"})";

TEST(SafeTensorsModel, ReadsShardedCheckpoint) {
  auto m = SafeTensorsModel::open(make_sharded(kGoodMap));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_EQ(m->files().size(), 2u);
  ASSERT_EQ(m->tensors().size(), 3u);
  EXPECT_EQ(m->shard_of("a"), 0);
  EXPECT_EQ(m->shard_of("c"), 1);
  EXPECT_EQ(m->shard_of("zz"), -1);
  EXPECT_EQ(*read_as_f32(**m->get("b")), std::vector<float>{1.0f});
  EXPECT_EQ(*read_as_f32(**m->get("c")), std::vector<float>{0.0f});
  EXPECT_ERROR(m->get("zz"), StatusCode::kNotFound, "no tensor 'zz'");
}

TEST(SafeTensorsModel, SingleFileFolderAndFilePath) {
  const auto dir = test_dir();
  write_file(dir / "model.safetensors", shard_bytes({"x", "y"}));
  auto m = SafeTensorsModel::open(dir);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->tensors().size(), 2u);
  auto f = SafeTensorsModel::open(dir / "model.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().size(), 2u);
}

TEST(SafeTensorsModel, MissingInputs) {
  EXPECT_ERROR(SafeTensorsModel::open(test_dir()), StatusCode::kNotFound, "neither model.safetensors nor");
  EXPECT_ERROR(SafeTensorsModel::open(test_dir() / "nope"), StatusCode::kNotFound, "not a file or folder");
}

TEST(SafeTensorsModel, IndexSchemaErrors) {
  EXPECT_ERROR(SafeTensorsModel::open(make_sharded("[]")), StatusCode::kSchema, "'weight_map': expected an object");
  EXPECT_ERROR(SafeTensorsModel::open(make_sharded("{}")), StatusCode::kValidation, "weight_map is empty");
  EXPECT_ERROR(SafeTensorsModel::open(make_sharded(R"({"a":3})")), StatusCode::kSchema,
               "weight_map['a']: expected a file name string");
  const auto dir = make_sharded(kGoodMap);
  write_file(dir / "model.safetensors.index.json", R"({"metadata":{}})");
  EXPECT_ERROR(SafeTensorsModel::open(dir), StatusCode::kSchema, "'weight_map': missing");
  write_file(dir / "model.safetensors.index.json", R"({"weight_map":{"a":"x","a":"y"}})");
  EXPECT_ERROR(SafeTensorsModel::open(dir), StatusCode::kParse, "duplicate JSON key 'a'");
  write_file(dir / "model.safetensors.index.json", R"({"weight_map":)");
  EXPECT_ERROR(SafeTensorsModel::open(dir), StatusCode::kParse, "invalid JSON");
  write_file(dir / "model.safetensors.index.json", R"({"metadata":1,"weight_map":{"a":"x"}})");
  EXPECT_ERROR(SafeTensorsModel::open(dir), StatusCode::kSchema, "'metadata': expected an object");
}

TEST(SafeTensorsModel, RejectsPathTraversal) {
  for (const char* bad : {"../model-00002-of-00002.safetensors", "/etc/passwd", "sub/x.safetensors", "..", ".",
                          "a\\\\b.safetensors", ""}) {
    EXPECT_ERROR(SafeTensorsModel::open(make_sharded(std::string(R"({"a":")") + bad + "\"}")), StatusCode::kValidation,
                 "is not a plain file name");
  }
}

TEST(SafeTensorsModel, ShardConsistencyErrors) {
  // Listed file missing.
  EXPECT_ERROR(SafeTensorsModel::open(make_sharded(R"({"a":"gone.safetensors"})")), StatusCode::kNotFound,
               "shard 'gone.safetensors'");
  // Mapped tensor absent from every file.
  EXPECT_ERROR(SafeTensorsModel::open(make_sharded(kGoodMap.substr(0, kGoodMap.size() - 1) +
                                                   R"(,"d":"model-00002-of-00002.safetensors"})")),
               StatusCode::kValidation, "tensor 'd' mapped to 'model-00002-of-00002.safetensors' is not in that file");
  // Mapped to the wrong shard.
  EXPECT_ERROR(SafeTensorsModel::open(make_sharded(
                   R"({"a":"model-00002-of-00002.safetensors","b":"model-00001-of-00002.safetensors",)"
                   R"("c":"model-00002-of-00002.safetensors"})")),
               StatusCode::kValidation, "is in 'model-00001-of-00002.safetensors' instead");
  // A tensor the map does not list.
  EXPECT_ERROR(SafeTensorsModel::open(make_sharded(
                   R"({"a":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"})")),
               StatusCode::kValidation, "tensor 'b' in 'model-00001-of-00002.safetensors' is not listed in weight_map");
  // The same tensor in two shards.
  const auto dir = make_sharded(kGoodMap);
  write_file(dir / "model-00002-of-00002.safetensors", shard_bytes({"b", "c"}));
  EXPECT_ERROR(SafeTensorsModel::open(dir), StatusCode::kValidation, "tensor 'b' appears in two files");
  // A corrupt shard names the shard.
  write_file(dir / "model-00002-of-00002.safetensors", "xx");
  EXPECT_ERROR(SafeTensorsModel::open(dir), StatusCode::kParse, "shard 'model-00002-of-00002.safetensors'");
}

}  // namespace
}  // namespace rdrr::convert
