// GGUF reader: valid files, every error rule (hostile files built here), truncation and byte flips.
#include "convert/gguf.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>

#include "convert/reader_test_util.h"
#include "quant/f16.h"

namespace rdrr::convert {
namespace {

using testing::GgufSpec;
using testing::GgufTensorSpec;
using testing::put;
using testing::test_dir;
using testing::write_file;
namespace t = testing;

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ4_K = 12;

GgufSpec valid_spec() {
  GgufSpec s;
  s.kvs = {{"general.architecture", t::gv_str("llama")},
           {"llama.block_count", t::gv_u32(2)},
           {"llama.rope.freq_base", t::gv_f32(10000.0f)},
           {"tokenizer.ggml.bos_token_id", t::gv_i32(1)},
           {"tokenizer.ggml.add_bos_token", t::gv_bool(1)},
           {"general.size", t::gv_u64(uint64_t{1} << 40)},
           {"tokenizer.ggml.tokens", t::gv_str_array({"<unk>", "<s>", ""})},
           {"tokenizer.ggml.scores", t::gv_f32_array({0.5f, -1.0f, 2.0f})}};
  s.tensors = {{"blk.0.w", {256, 2}, kQ4_K, 2 * 144, {}},
               {"norm", {8}, kF32, 32, {}},
               {"half", {4, 2}, kF16, 16, {}}};
  return s;
}

Result<GgufFile> open_bytes(const std::string& bytes) {
  const auto path = test_dir() / "x.gguf";
  write_file(path, bytes);
  return GgufFile::open(path);
}

Result<GgufFile> open_spec(const GgufSpec& s) { return open_bytes(s.build()); }

GgufSpec with_kv(const std::string& key, const std::string& value) {
  GgufSpec s = valid_spec();
  s.kvs.emplace_back(key, value);
  return s;
}

GgufSpec with_tensor(GgufTensorSpec tensor) {
  GgufSpec s = valid_spec();
  s.tensors.push_back(std::move(tensor));
  return s;
}

TEST(Gguf, ReadsValidFile) {
  auto g = open_spec(valid_spec());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 32u);
  EXPECT_EQ(g->data_offset_bytes() % 32, 0u);
  ASSERT_EQ(g->metadata().size(), 8u);
  EXPECT_EQ(g->metadata()[1].key, "llama.block_count");
  EXPECT_EQ(*g->get_string("general.architecture"), "llama");
  EXPECT_EQ(*g->get_u32("llama.block_count"), 2u);
  EXPECT_EQ(*g->get_f32("llama.rope.freq_base"), 10000.0f);
  EXPECT_EQ(*g->get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(*g->get_i32("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(*g->get_uint("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(*g->get_int("llama.block_count"), 2);
  EXPECT_EQ(*g->get_u64("general.size"), uint64_t{1} << 40);
  EXPECT_TRUE(*g->get_bool("tokenizer.ggml.add_bos_token"));
  const GgufArray* tokens = *g->get_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens->strings, (std::vector<std::string>{"<unk>", "<s>", ""}));
  EXPECT_EQ(*(*g->get_array("tokenizer.ggml.scores"))->to_f32(), (std::vector<float>{0.5f, -1.0f, 2.0f}));
  ASSERT_EQ(g->tensors().size(), 3u);
  const GgufTensor& w = g->tensors()[0];
  EXPECT_EQ(w.name, "blk.0.w");
  EXPECT_EQ(w.type, GgmlType::kQ4_K);
  EXPECT_EQ(w.type_name(), "Q4_K");
  EXPECT_EQ(w.ne, (std::vector<uint64_t>{256, 2}));
  EXPECT_EQ(w.shape(), (std::vector<int64_t>{2, 256}));
  EXPECT_EQ(w.bytes.size(), 288u);
  EXPECT_EQ(w.bytes.data(), g->find_tensor("blk.0.w")->bytes.data());
  const GgufTensor& norm = **g->get_tensor("norm");
  EXPECT_EQ(norm.offset_bytes, 288u);  // packed at the next 32-byte boundary
  EXPECT_EQ(static_cast<uint64_t>(norm.bytes.data() - w.bytes.data()), 288u);
  auto v = (*g->get_tensor("half"))->view();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->dtype, quant::DType::kF16);
  EXPECT_EQ(v->shape, (std::vector<int64_t>{2, 4}));
}

TEST(Gguf, AcceptsVersion2AndCustomAlignment) {
  GgufSpec v2 = valid_spec();
  v2.version = 2;
  auto g2 = open_spec(v2);
  ASSERT_TRUE(g2.ok()) << g2.status().to_string();
  EXPECT_EQ(g2->version(), 2u);
  GgufSpec a64 = with_kv("general.alignment", t::gv_u32(64));
  a64.layout_alignment = 64;
  auto g = open_spec(a64);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ(g->data_offset_bytes() % 64, 0u);
  EXPECT_EQ((*g->get_tensor("norm"))->offset_bytes, 320u);
}

// Block geometry of every accepted type (ggml's type traits), through a real file.
TEST(Gguf, AcceptedTypeGeometry) {
  struct Geometry {
    uint32_t id;
    const char* name;
    uint64_t block_elems, block_bytes;
  };
  const Geometry table[] = {{0, "F32", 1, 4},        {1, "F16", 1, 2},        {2, "Q4_0", 32, 18},
                            {3, "Q4_1", 32, 20},     {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},
                            {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},     {10, "Q2_K", 256, 84},
                            {11, "Q3_K", 256, 110},  {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
                            {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},  {30, "BF16", 1, 2}};
  GgufSpec s;
  for (const Geometry& g : table) s.tensors.push_back({g.name, {512, 3}, g.id, 512 / g.block_elems * g.block_bytes * 3, {}});
  auto g = open_spec(s);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  for (const Geometry& geo : table) {
    const GgufTensor& t = **g->get_tensor(geo.name);
    EXPECT_EQ(t.type_name(), geo.name);
    EXPECT_EQ(static_cast<uint32_t>(t.type), geo.id);
    EXPECT_EQ(t.bytes.size(), 512 / geo.block_elems * geo.block_bytes * 3) << geo.name;
    EXPECT_EQ(t.offset_bytes % 32, 0u);
  }
  // F16/BF16 views convert through quant/f16.h.
  const GgufTensor& h = **g->get_tensor("F16");
  auto f = read_as_f32(*h.view());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  uint16_t first = 0;
  std::memcpy(&first, h.bytes.data(), 2);
  EXPECT_EQ(std::bit_cast<uint32_t>((*f)[0]), std::bit_cast<uint32_t>(quant::f16_to_f32(first)));
  const GgufTensor& b = **g->get_tensor("BF16");
  auto bf = read_as_f32(*b.view());
  ASSERT_TRUE(bf.ok()) << bf.status().to_string();
  std::memcpy(&first, b.bytes.data() + 2 * 1000, 2);
  EXPECT_EQ(std::bit_cast<uint32_t>((*bf)[1000]), std::bit_cast<uint32_t>(quant::bf16_to_f32(first)));
}

TEST(Gguf, AccessorTypeErrors) {
  auto g = open_spec(with_kv("neg", t::gv_i32(-5)));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_ERROR(g->get_u32("general.architecture"), StatusCode::kSchema, "'general.architecture': expected u32, found string");
  EXPECT_ERROR(g->get_string("llama.block_count"), StatusCode::kSchema, "expected string, found u32");
  EXPECT_ERROR(g->get_i32("llama.block_count"), StatusCode::kSchema, "expected i32, found u32");
  EXPECT_ERROR(g->get_array("llama.block_count"), StatusCode::kSchema, "expected array, found u32");
  EXPECT_ERROR(g->get_bool("llama.block_count"), StatusCode::kSchema, "expected bool");
  EXPECT_ERROR(g->get_f32("llama.block_count"), StatusCode::kSchema, "expected f32");
  EXPECT_ERROR(g->get_u64("llama.block_count"), StatusCode::kSchema, "expected u64");
  EXPECT_ERROR(g->get_float("llama.block_count"), StatusCode::kSchema, "expected f32 or f64, found u32");
  EXPECT_ERROR(g->get_uint("general.architecture"), StatusCode::kSchema, "expected an integer, found string");
  EXPECT_ERROR(g->get_uint("neg"), StatusCode::kValidation, "value -5 is negative");
  EXPECT_EQ(*g->get_int("neg"), -5);
  EXPECT_ERROR(g->get_u32("absent"), StatusCode::kNotFound, "no metadata key 'absent'");
  EXPECT_ERROR((*g->get_array("tokenizer.ggml.tokens"))->to_ints(), StatusCode::kSchema, "found an array of string");
  EXPECT_ERROR((*g->get_array("tokenizer.ggml.tokens"))->to_f32(), StatusCode::kSchema, "expected an f32 array");
  auto big = open_spec(with_kv("big", t::gv_u64(~uint64_t{0})));
  ASSERT_TRUE(big.ok());
  EXPECT_ERROR(big->get_int("big"), StatusCode::kValidation, "out of range");
  GgufSpec q41 = with_tensor({"q", {32, 1}, kQ4_1, 20, {}});
  auto q = open_spec(q41);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ((*q->get_tensor("q"))->bytes.size(), 20u);
  EXPECT_ERROR((*q->get_tensor("q"))->view(), StatusCode::kUnsupported, "ggml type Q4_1 has no rdrr dtype");
  GgufSpec q40 = with_tensor({"q", {32, 1}, kQ4_0, 18, {}});  // Q4_0 is a pack dtype (pass-through)
  auto q0 = open_spec(q40);
  ASSERT_TRUE(q0.ok()) << q0.status().to_string();
  EXPECT_EQ((*(*q0->get_tensor("q"))->view()).dtype, quant::DType::kQ4_0);
  std::vector<float> out(512);
  auto wv = (*q->get_tensor("blk.0.w"))->view();
  ASSERT_TRUE(wv.ok());
  EXPECT_ERROR(read_as_f32(*wv, out), StatusCode::kUnsupported, "does not dequantize Q4_K");
}

TEST(Gguf, HeaderErrors) {
  std::string bad = valid_spec().build();
  bad[3] = 'X';
  EXPECT_ERROR(open_bytes(bad), StatusCode::kParse, "bad magic: expected 'GGUF' (47 47 55 46), got 'GGUX' (47 47 55 58)");
  EXPECT_ERROR(open_bytes("GG"), StatusCode::kParse, "truncated: magic needs 4 bytes");
  EXPECT_ERROR(open_bytes(""), StatusCode::kParse, "truncated: magic");
  for (uint32_t version : {0u, 1u, 4u}) {
    GgufSpec s = valid_spec();
    s.version = version;
    EXPECT_ERROR(open_spec(s), StatusCode::kSchema, "unsupported GGUF version " + std::to_string(version));
  }
  GgufSpec be = valid_spec();
  be.version = 0x03000000u;
  EXPECT_ERROR(open_spec(be), StatusCode::kUnsupported, "big-endian GGUF");
  EXPECT_ERROR(open_bytes(std::string("GGUF\x03\0\0\0", 8)), StatusCode::kParse, "truncated: tensor count");
  GgufSpec many_t = valid_spec();
  many_t.n_tensors_override = uint64_t{1} << 40;
  // Hostile counts are not trusted: parsing walks on (into the padding/data) and fails at the first entry
  // the bytes cannot hold, without allocating for the claimed count.
  const auto many_t_result = open_spec(many_t);
  ASSERT_FALSE(many_t_result.ok());
  EXPECT_NE(many_t_result.status().message().find("tensor info 3"), std::string::npos)
      << many_t_result.status().to_string();
  GgufSpec many_kv = valid_spec();
  many_kv.n_kv_override = ~uint64_t{0};
  const auto many_kv_result = open_spec(many_kv);
  ASSERT_FALSE(many_kv_result.ok());
  EXPECT_NE(many_kv_result.status().message().find("metadata entry"), std::string::npos)
      << many_kv_result.status().to_string();
  std::string only_counts("GGUF\x03\0\0\0", 8);
  put<uint64_t>(only_counts, ~uint64_t{0});
  put<uint64_t>(only_counts, ~uint64_t{0});
  EXPECT_ERROR(open_bytes(only_counts), StatusCode::kParse, "metadata entry 0: truncated: key length needs 8 bytes");
}

TEST(Gguf, MetadataErrors) {
  EXPECT_ERROR(open_spec(with_kv("general.name", t::gv_str("x"))), StatusCode::kOk, "");
  EXPECT_ERROR(open_spec(with_kv("llama.block_count", t::gv_u32(3))), StatusCode::kValidation,
               "metadata entry 8 (key 'llama.block_count'): duplicate metadata key (also entry 1)");
  EXPECT_ERROR(open_spec(with_kv("", t::gv_u32(3))), StatusCode::kValidation, "metadata entry 8: empty key");
  std::string unknown_type;
  put<uint32_t>(unknown_type, 13);
  EXPECT_ERROR(open_spec(with_kv("k", unknown_type + "xxxx")), StatusCode::kSchema,
               "metadata entry 8 (key 'k'): unknown value type 13");
  std::string unknown_elem;
  put<uint32_t>(unknown_elem, 9);
  put<uint32_t>(unknown_elem, 77);
  put<uint64_t>(unknown_elem, 0);
  EXPECT_ERROR(open_spec(with_kv("k", unknown_elem)), StatusCode::kSchema, "unknown array element type 77");
  std::string nested;
  put<uint32_t>(nested, 9);
  put<uint32_t>(nested, 9);
  put<uint64_t>(nested, 1);
  EXPECT_ERROR(open_spec(with_kv("k", nested + std::string(12, '\0'))), StatusCode::kUnsupported,
               "(key 'k'): nested arrays are not supported");
  EXPECT_ERROR(open_spec(with_kv("k", t::gv_bool(2))), StatusCode::kValidation, "bool value 2 is not 0 or 1");
  std::string bool_array;
  put<uint32_t>(bool_array, 9);
  put<uint32_t>(bool_array, 7);
  put<uint64_t>(bool_array, 2);
  EXPECT_ERROR(open_spec(with_kv("k", bool_array + "\x01\x05")), StatusCode::kValidation,
               "array element 1: bool value 5");
}

TEST(Gguf, HostileLengthsFailWithoutAllocating) {
  std::string huge_str;
  put<uint32_t>(huge_str, 8);
  put<uint64_t>(huge_str, uint64_t{1} << 60);
  EXPECT_ERROR(open_spec(with_kv("k", huge_str)), StatusCode::kParse,
               "(key 'k'): truncated: string value of length 1152921504606846976");
  std::string huge_array;
  put<uint32_t>(huge_array, 9);
  put<uint32_t>(huge_array, 8);
  put<uint64_t>(huge_array, uint64_t{1} << 62);
  EXPECT_ERROR(open_spec(with_kv("k", huge_array)), StatusCode::kParse, "truncated: array of 4611686018427387904 string");
  std::string huge_u64_array;
  put<uint32_t>(huge_u64_array, 9);
  put<uint32_t>(huge_u64_array, 10);
  put<uint64_t>(huge_u64_array, ~uint64_t{0});
  EXPECT_ERROR(open_spec(with_kv("k", huge_u64_array)), StatusCode::kParse, "truncated: array of");
  std::string huge_elem;  // a plausible count, one element claims a huge length
  put<uint32_t>(huge_elem, 9);
  put<uint32_t>(huge_elem, 8);
  put<uint64_t>(huge_elem, 2);
  t::put_str(huge_elem, "ok");
  put<uint64_t>(huge_elem, uint64_t{1} << 60);
  EXPECT_ERROR(open_spec(with_kv("k", huge_elem)), StatusCode::kParse, "array element 1 of length");
  GgufSpec huge_name = valid_spec();
  huge_name.tensors[1].name = "n";
  std::string bytes = huge_name.build();
  const size_t at = bytes.find(std::string("\x01\0\0\0\0\0\0\0n", 9));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 7] = '\x10';  // name length 2^60
  EXPECT_ERROR(open_bytes(bytes), StatusCode::kParse, "tensor info 1: truncated: name of length");
}

TEST(Gguf, TruncationNamesTheEntry) {
  const std::string bytes = valid_spec().build();
  const std::string key = "llama.rope.freq_base";
  const size_t value_at = bytes.find(key) + key.size() + 4;  // after the type id
  EXPECT_ERROR(open_bytes(bytes.substr(0, value_at + 2)), StatusCode::kParse,
               "metadata entry 2 (key 'llama.rope.freq_base'): truncated: f32 value needs 4 bytes");
  EXPECT_ERROR(open_bytes(bytes.substr(0, bytes.find(key) + 3)), StatusCode::kParse,
               "metadata entry 2: truncated: key of length 20");
  const size_t ne_at = bytes.find("norm") + 4 + 4;
  EXPECT_ERROR(open_bytes(bytes.substr(0, ne_at + 3)), StatusCode::kParse,
               "tensor info 1 ('norm'): truncated: ne[0] needs 8 bytes");
  EXPECT_ERROR(open_bytes(bytes.substr(0, bytes.size() - 1)), StatusCode::kValidation,
               "tensor 'half' (F16): data [320, +16) at data section offset");
}

TEST(Gguf, TensorInfoErrors) {
  EXPECT_ERROR(open_spec(with_tensor({"blk.0.w", {8}, kF32, 32, {}})), StatusCode::kValidation,
               "tensor info 3 ('blk.0.w'): duplicate tensor name (also tensor info 0)");
  EXPECT_ERROR(open_spec(with_tensor({"", {8}, kF32, 32, {}})), StatusCode::kValidation, "tensor info 3: empty tensor name");
  EXPECT_ERROR(open_spec(with_tensor({"z", {}, kF32, 0, {}})), StatusCode::kValidation, "('z'): n_dims 0 not in 1..4");
  EXPECT_ERROR(open_spec(with_tensor({"z", {1, 1, 1, 1, 1}, kF32, 4, {}})), StatusCode::kValidation, "n_dims 5 not in 1..4");
  EXPECT_ERROR(open_spec(with_tensor({"z", {8, 0}, kF32, 0, {}})), StatusCode::kValidation, "ne[1] is 0 (zero-size tensor)");
  EXPECT_ERROR(open_spec(with_tensor({"z", {1ull << 32, 1ull << 32, 1ull << 32}, kF32, 4, {}})), StatusCode::kValidation,
               "element count overflows at ne[1]");
  EXPECT_ERROR(open_spec(with_tensor({"z", {8}, 99, 32, {}})), StatusCode::kSchema, "unknown ggml type id 99");
  EXPECT_ERROR(open_spec(with_tensor({"z", {256}, 16, 66, {}})), StatusCode::kUnsupported,
               "unsupported ggml type IQ2_XXS (16)");
  EXPECT_ERROR(open_spec(with_tensor({"z", {32}, 4, 20, {}})), StatusCode::kUnsupported, "unsupported ggml type Q4_2 (4)");
  EXPECT_ERROR(open_spec(with_tensor({"z", {32}, 28, 256, {}})), StatusCode::kUnsupported, "unsupported ggml type F64");
  EXPECT_ERROR(open_spec(with_tensor({"z", {128, 2}, kQ4_K, 144, {}})), StatusCode::kValidation,
               "tensor 'z' (Q4_K): ne[0] = 128 is not a multiple of the block size 256");
  EXPECT_ERROR(open_spec(with_tensor({"z", {16}, kQ4_0, 18, {}})), StatusCode::kValidation, "block size 32");
}

TEST(Gguf, LayoutErrors) {
  EXPECT_ERROR(open_spec(with_kv("general.alignment", t::gv_u32(48))), StatusCode::kValidation,
               "general.alignment 48 is not a power of two");
  EXPECT_ERROR(open_spec(with_kv("general.alignment", t::gv_u32(0))), StatusCode::kValidation,
               "general.alignment 0 is not a power of two");
  EXPECT_ERROR(open_spec(with_kv("general.alignment", t::gv_u64(32))), StatusCode::kSchema,
               "general.alignment: expected u32, found u64");
  // Alignment 64 declared but the writer laid out for 32: offsets 288, 320 are not multiples of 64.
  EXPECT_ERROR(open_spec(with_kv("general.alignment", t::gv_u32(64))), StatusCode::kValidation,
               "offset 288 is not a multiple of the alignment 64");
  EXPECT_ERROR(open_spec(with_tensor({"z", {4}, kF32, 16, 16})), StatusCode::kValidation,
               "tensor 'z' (F32): offset 16 is not a multiple of the alignment 32");
  EXPECT_ERROR(open_spec(with_tensor({"z", {4}, kF32, 16, 1ull << 40})), StatusCode::kValidation, "out of bounds");
  EXPECT_ERROR(open_spec(with_tensor({"z", {4}, kF32, 16, ~uint64_t{31}})), StatusCode::kValidation, "out of bounds");
  EXPECT_ERROR(open_spec(with_tensor({"z", {1ull << 62}, kF32, 16, {}})), StatusCode::kValidation, "out of bounds");
  EXPECT_ERROR(open_spec(with_tensor({"z", {8}, kF32, 32, 256})), StatusCode::kValidation,
               "tensor 'z' at offset 256 overlaps tensor 'blk.0.w' [0, 288)");
  EXPECT_ERROR(open_spec(with_tensor({"z", {8}, kF32, 32, 0})), StatusCode::kValidation, "overlaps");
}

// Every strict prefix of a valid file must fail: the last tensor ends at the end of the file.
TEST(GgufFuzz, EveryTruncationFails) {
  const std::string bytes = valid_spec().build();
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto g = open_bytes(bytes.substr(0, len));
    EXPECT_FALSE(g.ok()) << "prefix " << len;
  }
}

// The real fixture, cut at a sample of lengths (shrinking one copy in place).
TEST(GgufFuzz, FixtureTruncationsFail) {
  const auto src = testing::fixtures_dir() / "tiny-llama" / "gguf" / "tiny-llama-q4_k_m.gguf";
  const auto path = test_dir() / "cut.gguf";
  std::filesystem::copy_file(src, path);
  auto full = GgufFile::open(path);
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  const uint64_t header_end = full->data_offset_bytes();
  const uint64_t size = std::filesystem::file_size(path);
  std::vector<uint64_t> lengths;
  for (uint64_t len = 0; len < header_end; len += 37) lengths.push_back(len);
  for (uint64_t k = 1; k <= 64; ++k) lengths.push_back(header_end + (size - header_end) * k / 65);
  lengths.push_back(size - 1);
  std::sort(lengths.rbegin(), lengths.rend());
  for (uint64_t len : lengths) {
    std::filesystem::resize_file(path, len);
    auto g = GgufFile::open(path);
    EXPECT_FALSE(g.ok()) << "prefix " << len;
  }
}

// Random byte flips before the data section: clean failure, or spans inside the file.
TEST(GgufFuzz, HeaderByteFlips) {
  const std::string bytes = valid_spec().build();
  auto g0 = open_bytes(bytes);
  ASSERT_TRUE(g0.ok());
  std::mt19937 rng(4321);
  std::uniform_int_distribution<size_t> pos(0, g0->data_offset_bytes() - 1);
  std::uniform_int_distribution<int> val(0, 255);
  int ok_count = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string b = bytes;
    for (int k = 0; k <= iter % 3; ++k) b[pos(rng)] = static_cast<char>(val(rng));
    auto g = open_bytes(b);
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
      continue;
    }
    ++ok_count;
    for (const GgufTensor& tensor : g->tensors()) {
      EXPECT_LE(tensor.offset_bytes + tensor.bytes.size() + g->data_offset_bytes(), b.size());
    }
  }
  EXPECT_LT(ok_count, 1500);
}

}  // namespace
}  // namespace rdrr::convert
