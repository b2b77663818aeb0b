// SafeTensors reader: valid files, every error rule (hostile headers built here), truncation and byte flips.
#include "convert/safetensors.h"

#include <gtest/gtest.h>

#include <random>

#include "convert/reader_test_util.h"
#include "quant/f16.h"

namespace rdrr::convert {
namespace {

using testing::put;
using testing::safetensors_bytes;
using testing::test_dir;
using testing::write_file;

// 3 tensors: a F32 [2,2] (16 bytes), b F16 [3] (6 bytes), c BF16 [2] (4 bytes).
const std::string kValidHeader =
    R"({"__metadata__":{"format":"pt"},)"
    R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
    R"("b":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
    R"("c":{"dtype":"BF16","shape":[2],"data_offsets":[22,26]}})";

std::string valid_data() {
  std::string d;
  for (float x : {1.0f, -2.0f, 0.5f, 3.25f}) put<float>(d, x);
  for (float x : {1.0f, -0.5f, 65504.0f}) put<uint16_t>(d, quant::f32_to_f16(x));
  for (float x : {2.0f, -3.0f}) put<uint16_t>(d, quant::f32_to_bf16(x));
  return d;
}

Result<SafeTensorsFile> open_bytes(const std::string& bytes) {
  const auto path = test_dir() / "x.safetensors";
  write_file(path, bytes);
  return SafeTensorsFile::open(path);
}

// Header with one F32 tensor "t" of the given shape/offsets JSON, plus `data_bytes` zero bytes.
Result<SafeTensorsFile> open_one(const std::string& fields, size_t data_bytes) {
  return open_bytes(safetensors_bytes(R"({"t":{)" + fields + "}}", std::string(data_bytes, '\0')));
}

TEST(SafeTensors, ReadsValidFile) {
  auto st = open_bytes(safetensors_bytes(kValidHeader, valid_data()));
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  ASSERT_EQ(st->tensors().size(), 3u);
  EXPECT_EQ(st->tensors()[0].name, "a");
  EXPECT_EQ(st->metadata().at("format"), "pt");
  EXPECT_EQ(st->data_offset_bytes(), 8 + kValidHeader.size());
  const TensorView* a = st->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a->dtype, quant::DType::kF32);
  EXPECT_EQ(*read_as_f32(*a), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.25f}));
  EXPECT_EQ(*read_as_f32(**st->get("b")), (std::vector<float>{1.0f, -0.5f, 65504.0f}));
  EXPECT_EQ(*read_as_f32(**st->get("c")), (std::vector<float>{2.0f, -3.0f}));
  EXPECT_EQ(st->find("zz"), nullptr);
  EXPECT_ERROR(st->get("zz"), StatusCode::kNotFound, "no tensor 'zz'");
  std::vector<float> wrong(5);
  EXPECT_ERROR(read_as_f32(*a, wrong), StatusCode::kInvalidArgument, "expected numel 4");
}

TEST(SafeTensors, AcceptsScalarsEmptyTensorsAndPaddedHeader) {
  // A scalar (shape []), a zero-size tensor and trailing spaces in the header (the reference writer pads).
  const std::string header =
      R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"z":{"dtype":"F16","shape":[0,3],"data_offsets":[4,4]}})"
      "   ";
  auto st = open_bytes(safetensors_bytes(header, std::string(4, '\0')));
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_EQ(st->find("s")->numel(), 1);
  EXPECT_EQ(st->find("z")->numel(), 0);
  EXPECT_TRUE(st->metadata().empty());
  auto empty = open_bytes(safetensors_bytes("{}", ""));
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_TRUE(empty->tensors().empty());
}

TEST(SafeTensors, FramingErrors) {
  EXPECT_ERROR(SafeTensorsFile::open(test_dir() / "missing.safetensors"), StatusCode::kNotFound, "missing.safetensors");
  EXPECT_ERROR(open_bytes("abc"), StatusCode::kParse, "shorter than the 8-byte header length");
  std::string beyond;
  put<uint64_t>(beyond, 100);
  EXPECT_ERROR(open_bytes(beyond + "{}"), StatusCode::kParse, "header length 100 beyond the file");
  std::string absurd;
  put<uint64_t>(absurd, uint64_t{1} << 63);
  EXPECT_ERROR(open_bytes(absurd + "{}"), StatusCode::kParse, "exceeds the limit");
}

TEST(SafeTensors, HeaderJsonErrors) {
  EXPECT_ERROR(open_bytes(safetensors_bytes("[1,2]", "")), StatusCode::kParse, "header is not a JSON object");
  EXPECT_ERROR(open_bytes(safetensors_bytes(" {}", "")), StatusCode::kParse, "does not start with '{'");
  EXPECT_ERROR(open_bytes(safetensors_bytes("", "")), StatusCode::kParse, "header is not a JSON object");
  EXPECT_ERROR(open_bytes(safetensors_bytes("{\"a\":", "")), StatusCode::kParse, "invalid JSON");
  EXPECT_ERROR(open_bytes(safetensors_bytes("{} {}", "")), StatusCode::kParse, "invalid JSON");
  // Deep nesting is refused before anything recurses over it.
  const std::string deep = "{\"t\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_ERROR(open_bytes(safetensors_bytes(deep, "")), StatusCode::kParse, "nesting deeper than 64 levels");
  const std::string ok_depth = "{\"__metadata__\":{},\"t\":" + std::string(60, '[') + std::string(60, ']') + "}";
  EXPECT_ERROR(open_bytes(safetensors_bytes(ok_depth, "")), StatusCode::kSchema, "tensor 't': expected an object, got [[[[");
  EXPECT_ERROR(open_bytes(safetensors_bytes("{\"a\xff\":1}", "")), StatusCode::kParse, "not valid UTF-8 at byte 3");
  EXPECT_ERROR(open_bytes(safetensors_bytes("{\"\xc0\xaf\":1}", "")), StatusCode::kParse, "not valid UTF-8");  // overlong
  EXPECT_ERROR(open_bytes(safetensors_bytes("{\"\xed\xa0\x80\":1}", "")), StatusCode::kParse, "not valid UTF-8");  // surrogate
  const std::string t = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  EXPECT_ERROR(open_bytes(safetensors_bytes("{\"t\":" + t + ",\"t\":" + t + "}", std::string(4, '\0'))),
               StatusCode::kParse, "duplicate JSON key 't'");
  EXPECT_ERROR(open_one(R"("dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4])", 4), StatusCode::kParse,
               "duplicate JSON key 'dtype'");
  EXPECT_ERROR(open_bytes(safetensors_bytes(R"({"__metadata__":{"k":"a","k":"b"}})", "")), StatusCode::kParse,
               "duplicate JSON key 'k'");
}

TEST(SafeTensors, EntrySchemaErrors) {
  EXPECT_ERROR(open_bytes(safetensors_bytes(R"({"t":[1]})", "")), StatusCode::kSchema, "tensor 't': expected an object");
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1)", 4), StatusCode::kSchema,
               "field 'extra': unknown field");
  EXPECT_ERROR(open_one(R"("dtype":"F32","data_offsets":[0,4])", 4), StatusCode::kSchema, "field 'shape': missing");
  EXPECT_ERROR(open_one(R"("shape":[1],"data_offsets":[0,4])", 4), StatusCode::kSchema, "field 'dtype': missing");
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[1])", 4), StatusCode::kSchema, "field 'data_offsets': missing");
  EXPECT_ERROR(open_one(R"("dtype":7,"shape":[1],"data_offsets":[0,4])", 4), StatusCode::kSchema, "expected a string");
  EXPECT_ERROR(open_one(R"("dtype":"F99","shape":[1],"data_offsets":[0,4])", 4), StatusCode::kSchema,
               "unknown dtype 'F99'");
  for (const char* dt : {"F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"}) {
    EXPECT_ERROR(open_one(std::string(R"("dtype":")") + dt + R"(","shape":[1],"data_offsets":[0,4])", 4),
                 StatusCode::kUnsupported, std::string("unsupported dtype ") + dt);
  }
  for (const char* shape : {"4", "[-1]", "[1.5]", "[\"2\"]", "[[1]]", "null"}) {
    EXPECT_ERROR(open_one(std::string(R"("dtype":"F32","shape":)") + shape + R"(,"data_offsets":[0,4])", 4),
                 StatusCode::kSchema, "field 'shape'");
  }
  for (const char* offs : {"[0]", "[0,4,8]", "[\"0\",4]", "[-1,4]", "[0,4.0]", "{}"}) {
    EXPECT_ERROR(open_one(std::string(R"("dtype":"F32","shape":[1],"data_offsets":)") + offs, 4), StatusCode::kSchema,
                 "expected [begin, end] non-negative integers");
  }
}

TEST(SafeTensors, MetadataErrors) {
  EXPECT_ERROR(open_bytes(safetensors_bytes(R"({"__metadata__":[1]})", "")), StatusCode::kSchema,
               "__metadata__: expected an object");
  EXPECT_ERROR(open_bytes(safetensors_bytes(R"({"__metadata__":{"n":3}})", "")), StatusCode::kSchema,
               "key 'n': expected a string value");
}

TEST(SafeTensors, OffsetAndSizeErrors) {
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[1],"data_offsets":[8,4])", 8), StatusCode::kValidation,
               "begin 8 > end 4");
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[1],"data_offsets":[0,4])", 2), StatusCode::kValidation,
               "end 4 beyond the data section of 2 bytes");
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[2,2],"data_offsets":[0,12])", 12), StatusCode::kValidation,
               "spans 12 bytes, expected numel 4 * 4 = 16");
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4])", 4),
               StatusCode::kValidation, "element count overflows");
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4])", 4),
               StatusCode::kValidation, "byte size overflows");
  EXPECT_ERROR(open_one(R"("dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4])", 4),
               StatusCode::kValidation, "overflows");
}

TEST(SafeTensors, CoverageErrors) {
  const auto two = [](const char* a_offs, const char* b_offs, size_t data) {
    return open_bytes(safetensors_bytes(std::string(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":)") + a_offs +
                                            R"(},"b":{"dtype":"F32","shape":[4],"data_offsets":)" + b_offs + "}}",
                                        std::string(data, '\0')));
  };
  ASSERT_TRUE(two("[16,32]", "[0,16]", 32).ok());  // order in the file does not matter
  EXPECT_ERROR(two("[0,16]", "[8,24]", 24), StatusCode::kValidation, "tensor 'b' [8, 24) overlaps tensor 'a'");
  EXPECT_ERROR(two("[0,16]", "[0,16]", 16), StatusCode::kValidation, "overlaps");
  EXPECT_ERROR(two("[0,16]", "[20,36]", 36), StatusCode::kValidation, "hole in the data section: bytes [16, 20)");
  EXPECT_ERROR(two("[4,20]", "[20,36]", 36), StatusCode::kValidation, "bytes [0, 4) before tensor 'a'");
  EXPECT_ERROR(two("[0,16]", "[16,32]", 40), StatusCode::kValidation, "has 40 bytes but the tensors cover only 32");
  EXPECT_ERROR(open_bytes(safetensors_bytes("{}", "xx")), StatusCode::kValidation, "cover only 0");
}

// Every strict prefix of a valid file must fail (the tensors cover the data section exactly).
TEST(SafeTensorsFuzz, EveryTruncationFails) {
  const std::string bytes = safetensors_bytes(kValidHeader, valid_data());
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto st = open_bytes(bytes.substr(0, len));
    EXPECT_FALSE(st.ok()) << "prefix " << len;
  }
}

// Random byte flips in the header: open() must either fail cleanly or give spans inside the file.
TEST(SafeTensorsFuzz, HeaderByteFlips) {
  const std::string bytes = safetensors_bytes(kValidHeader, valid_data());
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> pos(0, 8 + kValidHeader.size() - 1);
  std::uniform_int_distribution<int> val(0, 255);
  int ok_count = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string b = bytes;
    const int flips = 1 + iter % 3;
    for (int k = 0; k < flips; ++k) b[pos(rng)] = static_cast<char>(val(rng));
    auto st = open_bytes(b);
    if (!st.ok()) {
      EXPECT_FALSE(st.status().message().empty());
      continue;
    }
    ++ok_count;
    const auto file = st->mapped_file().bytes();
    for (const TensorView& t : st->tensors()) {
      EXPECT_GE(t.bytes.data(), file.data() + st->data_offset_bytes());
      EXPECT_LE(t.bytes.data() + t.bytes.size(), file.data() + file.size());
    }
  }
  EXPECT_LT(ok_count, 1500);  // most flips are caught
}

}  // namespace
}  // namespace rdrr::convert
