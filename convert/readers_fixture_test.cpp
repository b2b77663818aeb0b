// The readers against the repo fixtures: tensor tables come from fixtures/NAME/README.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convert/gguf.h"
#include "convert/reader_test_util.h"
#include "convert/safetensors.h"

namespace rdrr::convert {
namespace {

using testing::fixtures_dir;

struct TableRow {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<std::string> types;  // remaining columns
};

std::vector<int64_t> parse_dims(const std::string& cell) {  // "[256, 1024]"
  std::vector<int64_t> dims;
  std::string s = cell;
  for (char& c : s) {
    if (c == '[' || c == ']' || c == ',') c = ' ';
  }
  std::istringstream in(s);
  for (int64_t d = 0; in >> d;) dims.push_back(d);
  return dims;
}

// Rows "| `name` | [dims] | T1 | T2 ..." of the markdown table under the heading starting with `heading`.
std::vector<TableRow> readme_table(const std::string& model, const std::string& heading) {
  std::ifstream f(fixtures_dir() / model / "README.md");
  std::vector<TableRow> rows;
  bool in_section = false;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line.rfind(heading, 0) == 0;
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream in(line.substr(1));
    for (std::string cell; std::getline(in, cell, '|');) {
      const auto b = cell.find_first_not_of(" `");
      const auto e = cell.find_last_not_of(" `");
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() < 3) continue;
    TableRow row{cells[0], parse_dims(cells[1]), {cells.begin() + 2, cells.end()}};
    while (!row.types.empty() && row.types.back().empty()) row.types.pop_back();
    rows.push_back(std::move(row));
  }
  return rows;
}

class FixtureReaders : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureReaders, SafeTensorsMatchesReadme) {
  const std::string model = GetParam();
  const auto rows = readme_table(model, "## Tensors in hf/model.safetensors");
  ASSERT_GT(rows.size(), 5u);
  auto st = SafeTensorsModel::open(fixtures_dir() / model / "hf");
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  ASSERT_EQ(st->files().size(), 1u);
  EXPECT_EQ(st->tensors().size(), rows.size());
  for (const TableRow& row : rows) {
    const TensorView* t = st->find(row.name);
    ASSERT_NE(t, nullptr) << row.name;
    EXPECT_EQ(t->shape, row.dims) << row.name;
    EXPECT_EQ(quant::dtype_name(t->dtype), row.types.at(0)) << row.name;
    EXPECT_EQ(t->bytes.size(), static_cast<uint64_t>(t->numel()) * 4) << row.name;
  }
  auto f32 = read_as_f32(*st->find(rows[0].name));
  ASSERT_TRUE(f32.ok()) << f32.status().to_string();
  double sum_sq = 0;
  for (float x : *f32) sum_sq += double{x} * x;
  EXPECT_TRUE(std::isfinite(sum_sq));
  EXPECT_GT(sum_sq, 0.0);  // trained weights, not zeros
}

TEST_P(FixtureReaders, GgufMatchesReadme) {
  const std::string model = GetParam();
  const auto rows = readme_table(model, "## GGUF files");
  ASSERT_GT(rows.size(), 5u);
  auto g = GgufFile::open(fixtures_dir() / model / "gguf" / (model + "-q4_k_m.gguf"));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), kGgufDefaultAlignment);
  EXPECT_EQ(g->data_offset_bytes() % g->alignment(), 0u);
  EXPECT_EQ(g->tensors().size(), rows.size());
  for (const TableRow& row : rows) {
    const GgufTensor* t = g->find_tensor(row.name);
    ASSERT_NE(t, nullptr) << row.name;
    ASSERT_EQ(row.types.size(), 3u) << row.name;
    EXPECT_EQ(t->type_name(), row.types[2]) << row.name;  // q4_k_m column
    std::vector<int64_t> ne(t->ne.begin(), t->ne.end());
    EXPECT_EQ(ne, row.dims) << row.name;
    EXPECT_EQ(t->shape(), std::vector<int64_t>(row.dims.rbegin(), row.dims.rend())) << row.name;
    const auto info = ggml_type_info(static_cast<uint32_t>(t->type));
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(t->bytes.size(), t->numel() / info->block_elems * info->block_bytes) << row.name;
    auto v = t->view();
    ASSERT_TRUE(v.ok()) << v.status().to_string();
  }
  // Metadata per the README's dump.
  auto arch = g->get_string("general.architecture");
  ASSERT_TRUE(arch.ok()) << arch.status().to_string();
  const std::string a(*arch);
  EXPECT_EQ(a, model == "tiny-gemma3" ? "gemma3" : model == "tiny-qwen2" ? "qwen2" : "llama");
  auto blocks = g->get_u32(a + ".block_count");
  ASSERT_TRUE(blocks.ok()) << blocks.status().to_string();
  EXPECT_EQ(*blocks, model == "tiny-gemma3" ? 3u : 2u);
  EXPECT_EQ(*g->get_uint(a + ".embedding_length"), 256u);
  EXPECT_EQ(*g->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*g->get_u32("general.quantization_version"), 2u);
  EXPECT_TRUE(*g->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(*g->get_uint("tokenizer.ggml.bos_token_id"), 1u);
  auto tokens = g->get_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
  ASSERT_EQ((*tokens)->strings.size(), 1024u);
  EXPECT_EQ((*tokens)->strings[0], "<unk>");
  EXPECT_EQ((*tokens)->strings[1], "<s>");
  EXPECT_EQ((*tokens)->strings[3], "<0x00>");
  auto scores = (*g->get_array("tokenizer.ggml.scores"))->to_f32();
  ASSERT_TRUE(scores.ok()) << scores.status().to_string();
  EXPECT_EQ(scores->size(), 1024u);
  auto types = (*g->get_array("tokenizer.ggml.token_type"))->to_ints();
  ASSERT_TRUE(types.ok()) << types.status().to_string();
  ASSERT_EQ(types->size(), 1024u);
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[3], 6);
  // Typed accessors refuse the wrong type.
  EXPECT_ERROR(g->get_string(a + ".block_count"), StatusCode::kSchema, "expected string, found u32");
  EXPECT_ERROR(g->get_u32("no.such.key"), StatusCode::kNotFound, "no.such.key");
  EXPECT_ERROR(g->get_tensor("no.such.tensor"), StatusCode::kNotFound, "no.such.tensor");
}

// fixtures/NAME/golden/dequant holds raw Q4_K/Q6_K blocks cut from the same GGUF by gguf-py: our byte
// spans must be exactly those bytes.
TEST_P(FixtureReaders, GgufSpansEqualGgufPyBlocks) {
  const std::string model = GetParam();
  const auto dir = fixtures_dir() / model / "golden" / "dequant";
  std::ifstream index_file(dir / "index.json");
  ASSERT_TRUE(index_file.good());
  const auto index = nlohmann::json::parse(index_file);
  auto g = GgufFile::open(fixtures_dir() / model / "gguf" / index.at("gguf").get<std::string>());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_FALSE(index.at("tensors").empty());
  for (const auto& entry : index.at("tensors")) {
    const std::string name = entry.at("name").get<std::string>();
    auto t = g->get_tensor(name);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ((*t)->type_name(), entry.at("ggml_type").get<std::string>()) << name;
    EXPECT_EQ((*t)->ne, entry.at("ne").get<std::vector<uint64_t>>()) << name;
    EXPECT_EQ((*t)->shape(), entry.at("shape_row_major").get<std::vector<int64_t>>()) << name;
    std::ifstream blocks(dir / entry.at("blocks_file").get<std::string>(), std::ios::binary);
    const std::string expect((std::istreambuf_iterator<char>(blocks)), std::istreambuf_iterator<char>());
    ASSERT_EQ(expect.size(), entry.at("blocks_bytes").get<uint64_t>()) << name;
    ASSERT_EQ((*t)->bytes.size(), expect.size()) << name;
    EXPECT_EQ(std::memcmp((*t)->bytes.data(), expect.data(), expect.size()), 0) << name;
  }
}

// Random byte flips in the real headers (patched in place, then restored): open() fails cleanly or
// returns spans inside the file.
TEST_P(FixtureReaders, HeaderByteFlips) {
  const std::string model = GetParam();
  const auto dir = testing::test_dir();
  const auto gguf_path = dir / "m.gguf";
  const auto st_path = dir / "m.safetensors";
  std::filesystem::copy_file(fixtures_dir() / model / "gguf" / (model + "-q4_k_m.gguf"), gguf_path);
  std::filesystem::copy_file(fixtures_dir() / model / "hf" / "model.safetensors", st_path);
  const uint64_t gguf_header = GgufFile::open(gguf_path)->data_offset_bytes();
  const uint64_t st_header = SafeTensorsFile::open(st_path)->data_offset_bytes();
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 300; ++iter) {
    const bool gguf = iter % 2 == 0;
    const auto& path = gguf ? gguf_path : st_path;
    const uint64_t offset = rng() % (gguf ? gguf_header : st_header);
    std::string original(1, '\0');
    {
      std::ifstream in(path, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(offset));
      in.read(original.data(), 1);
    }
    testing::patch_file(path, offset, std::string(1, static_cast<char>(rng() & 0xff)));
    if (gguf) {
      auto g = GgufFile::open(path);
      if (g.ok()) {
        for (const GgufTensor& t : g->tensors()) {
          EXPECT_LE(g->data_offset_bytes() + t.offset_bytes + t.bytes.size(), std::filesystem::file_size(path));
        }
      } else {
        EXPECT_NE(g.status().code(), StatusCode::kInternal) << g.status().to_string();
      }
    } else {
      auto st = SafeTensorsFile::open(path);
      if (!st.ok()) {
        EXPECT_NE(st.status().code(), StatusCode::kInternal) << st.status().to_string();
      }
    }
    testing::patch_file(path, offset, original);
  }
  EXPECT_TRUE(GgufFile::open(gguf_path).ok());
  EXPECT_TRUE(SafeTensorsFile::open(st_path).ok());
}

INSTANTIATE_TEST_SUITE_P(Models, FixtureReaders, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// The F32 norm weights are stored unchanged by llama.cpp for Llama and Qwen2 (Gemma adds 1): the two
// readers must hand out the same floats.
TEST(FixtureReadersCross, GgufF32NormEqualsSafeTensors) {
  for (const std::string model : {"tiny-llama", "tiny-qwen2"}) {
    auto st = SafeTensorsModel::open(fixtures_dir() / model / "hf");
    auto g = GgufFile::open(fixtures_dir() / model / "gguf" / (model + "-q4_k_m.gguf"));
    ASSERT_TRUE(st.ok() && g.ok());
    for (const auto& [hf, gg] : {std::pair{"model.norm.weight", "output_norm.weight"},
                                 std::pair{"model.layers.1.input_layernorm.weight", "blk.1.attn_norm.weight"}}) {
      auto a = read_as_f32(**st->get(hf));
      auto gv = (*g->get_tensor(gg))->view();
      ASSERT_TRUE(a.ok() && gv.ok());
      auto b = read_as_f32(*gv);
      ASSERT_TRUE(b.ok()) << b.status().to_string();
      EXPECT_EQ(*a, *b) << model << " " << hf;
    }
  }
}

}  // namespace
}  // namespace rdrr::convert
