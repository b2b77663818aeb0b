// convert/source.h on the fixture models: name mapping, writer order, gate+up fusion, the GGUF q/k row
// permutation, raw-copy rules, row reads.
#include "convert/source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "convert/plan.h"
#include "convert/reader_test_util.h"
#include "convert/safetensors.h"

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using testing::fixtures_dir;

fs::path hf(const std::string& m) { return fixtures_dir() / m / "hf"; }
fs::path gguf(const std::string& m) { return fixtures_dir() / m / "gguf" / (m + "-q4_k_m.gguf"); }

const SourceTensor* find(const SourceModel& m, const std::string& name) {
  for (const SourceTensor& t : m.tensors()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<float> all_rows(const SourceTensor& t) {
  std::vector<float> out(static_cast<size_t>(t.rows() * t.cols()));
  std::vector<float> scratch;
  EXPECT_TRUE(read_rows(t, 0, t.rows(), out, scratch).ok());
  return out;
}

// convert_hf_to_gguf's permute(): w.reshape(n_head, 2, D/2, cols).swapaxes(1, 2).reshape(rows, cols), on row
// indices: stored row g holds HF row hf_of[g].
std::vector<int64_t> gguf_row_order(int64_t rows, int64_t n_head) {
  const int64_t d = rows / n_head;
  std::vector<int64_t> hf_of;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < d / 2; ++i) {
      for (int64_t j = 0; j < 2; ++j) hf_of.push_back(h * d + j * (d / 2) + i);  // (h, i, j) <- (h, j, i)
    }
  }
  return hf_of;
}

TEST(Source, PermutedSourceRowUndoesConvertHfToGguf) {
  for (const auto& [rows, heads] : std::vector<std::pair<int64_t, int64_t>>{{256, 8}, {64, 2}, {4096, 32}, {4, 1}}) {
    const std::vector<int64_t> hf_of = gguf_row_order(rows, heads);
    for (int64_t g = 0; g < rows; ++g) {
      EXPECT_EQ(permuted_source_row(hf_of[static_cast<size_t>(g)], rows, heads), g) << rows << "/" << heads;
    }
  }
}

TEST(Source, HfOrderNamesAndFusion) {
  Result<SourceModel> m = SourceModel::open(hf("tiny-llama"), {.fuse_gate_up = true});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->format(), SourceFormat::kSafetensors);
  const auto& t = m->tensors();
  ASSERT_EQ(t.size(), 19u);  // 21 stored, gate+up fused in 2 layers
  EXPECT_EQ(t.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(t.back().name, "lm_head.weight");
  EXPECT_EQ(t[t.size() - 2].name, "model.norm.weight");
  int last_layer = -1;
  for (const SourceTensor& x : t) {
    const int l = layer_index(x.name);
    if (l >= 0) {
      EXPECT_GE(l, last_layer);
      last_layer = l;
    }
    EXPECT_EQ(x.name.find("gate_proj"), std::string::npos);
  }
  const SourceTensor* gu = find(*m, "model.layers.1.mlp.gate_up_proj.weight");
  ASSERT_NE(gu, nullptr);
  EXPECT_EQ(gu->shape, (std::vector<int64_t>{1024, 256}));
  ASSERT_EQ(gu->parts.size(), 2u);
  EXPECT_EQ(gu->parts[1].row_begin, 512);
  EXPECT_EQ(gu->source_dtype(), "F32");
  // Gate rows first, then up rows; a read across the boundary stitches both.
  const SafeTensorsFile f = SafeTensorsFile::open(hf("tiny-llama") / "model.safetensors").value();
  const std::vector<float> gate = read_as_f32(**f.get("model.layers.1.mlp.gate_proj.weight")).value();
  const std::vector<float> up = read_as_f32(**f.get("model.layers.1.mlp.up_proj.weight")).value();
  std::vector<float> both = gate;
  both.insert(both.end(), up.begin(), up.end());
  EXPECT_EQ(all_rows(*gu), both);
  std::vector<float> mid(20 * 256);
  std::vector<float> scratch;
  ASSERT_TRUE(read_rows(*gu, 500, 520, mid, scratch).ok());
  EXPECT_TRUE(std::equal(mid.begin(), mid.end(), both.begin() + 500 * 256));
  EXPECT_FALSE(read_rows(*gu, 1000, 1025, std::span<float>(mid.data(), 25 * 256), scratch).ok());

  Result<SourceModel> unfused = SourceModel::open(hf("tiny-llama"), {.fuse_gate_up = false});
  ASSERT_TRUE(unfused.ok());
  EXPECT_EQ(unfused->tensors().size(), 21u);
  EXPECT_NE(find(*unfused, "model.layers.0.mlp.up_proj.weight"), nullptr);
}

TEST(Source, GgufNamesAndQkPermutationFlags) {
  Result<SourceModel> llama = SourceModel::open(gguf("tiny-llama"), {});
  ASSERT_TRUE(llama.ok()) << llama.status().to_string();
  EXPECT_EQ(llama->format(), SourceFormat::kGguf);
  EXPECT_EQ(llama->default_model_id(), "tiny-llama");
  ASSERT_EQ(llama->files().size(), 1u);
  EXPECT_EQ(llama->files()[0].name, "tiny-llama-q4_k_m.gguf");
  EXPECT_EQ(find(*llama, "model.layers.0.self_attn.q_proj.weight")->parts[0].stored.permute_heads, 8);
  EXPECT_EQ(find(*llama, "model.layers.0.self_attn.k_proj.weight")->parts[0].stored.permute_heads, 2);
  EXPECT_EQ(find(*llama, "model.layers.0.self_attn.v_proj.weight")->parts[0].stored.permute_heads, 0);
  EXPECT_EQ(find(*llama, "model.layers.0.self_attn.q_proj.weight")->source_dtype(), "Q4_K");
  Result<SourceModel> qwen = SourceModel::open(gguf("tiny-qwen2"), {});
  ASSERT_TRUE(qwen.ok()) << qwen.status().to_string();
  for (const SourceTensor& t : qwen->tensors()) EXPECT_EQ(t.parts[0].stored.permute_heads, 0) << t.name;
  Result<SourceModel> gemma = SourceModel::open(gguf("tiny-gemma3"), {});
  ASSERT_TRUE(gemma.ok()) << gemma.status().to_string();
  EXPECT_EQ(find(*gemma, "lm_head.weight"), nullptr);  // tied
  EXPECT_NE(find(*gemma, "model.layers.2.pre_feedforward_layernorm.weight"), nullptr);
  EXPECT_NE(find(*gemma, "model.layers.2.mlp.gate_up_proj.weight"), nullptr);
}

// The permuted GGUF rows, read through the row map, are the HF rows (up to Q4_K error).
TEST(Source, GgufQRowsMatchHfRows) {
  const SourceModel g = SourceModel::open(gguf("tiny-llama"), {}).value();
  const SourceModel h = SourceModel::open(hf("tiny-llama"), {}).value();
  for (const char* name : {"model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight"}) {
    const std::vector<float> a = all_rows(*find(g, name));
    const std::vector<float> b = all_rows(*find(h, name));
    ASSERT_EQ(a.size(), b.size());
    double err = 0;
    double ref = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      err += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
      ref += double(b[i]) * b[i];
    }
    EXPECT_LT(std::sqrt(err / ref), 0.1) << name;  // Q4_K error; a wrong row order gives ~1.4
  }
}

TEST(Source, RawCopyRules) {
  const SourceModel g = SourceModel::open(gguf("tiny-llama"), {}).value();
  const StoredMatrix& q = find(g, "model.layers.0.self_attn.q_proj.weight")->parts[0].stored;
  EXPECT_TRUE(raw_copy_possible(q, quant::DType::kQ4_K, quant::Layout::kRowWise));
  EXPECT_FALSE(raw_copy_possible(q, quant::DType::kQ4_K, quant::Layout::kColumnWise));
  EXPECT_FALSE(raw_copy_possible(q, quant::DType::kQ4_K, quant::Layout::kFlat));
  EXPECT_FALSE(raw_copy_possible(q, quant::DType::kQ6_K, quant::Layout::kRowWise));
  const StoredMatrix& norm = find(g, "model.norm.weight")->parts[0].stored;
  EXPECT_FALSE(raw_copy_possible(norm, quant::DType::kF32, std::nullopt));
  // Raw rows come back in HF order: row r of the copy is stored row permuted_source_row(r).
  std::vector<std::byte> rows(static_cast<size_t>(q.row_bytes) * 3);
  const SourcePart& part = find(g, "model.layers.0.self_attn.q_proj.weight")->parts[0];
  ASSERT_TRUE(copy_raw_rows(part, 16, 19, rows).ok());
  for (int64_t r = 16; r < 19; ++r) {
    const int64_t s = permuted_source_row(r, q.rows, q.permute_heads);
    EXPECT_EQ(std::memcmp(rows.data() + (r - 16) * q.row_bytes, q.bytes.data() + s * q.row_bytes, q.row_bytes), 0);
  }
  release_rows(*find(g, "model.layers.0.self_attn.q_proj.weight"), 0, q.rows, true);  // advisory: data stays readable
  EXPECT_EQ(all_rows(*find(g, "model.layers.0.self_attn.q_proj.weight")).size(), size_t(256 * 256));
}

// Phi-3's fused qkv_proj becomes q_proj / k_proj / v_proj by row ranges of the stored matrix (nothing decoded);
// a checkpoint that also stores one of them alone is refused.
TEST(Source, Phi3QkvSplitIntoRowRanges) {
  const fs::path dir = fixtures_dir() / "families" / "tiny-phi3-longrope" / "hf";
  Result<SourceModel> m = SourceModel::open(dir, {.fuse_gate_up = true});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(find(*m, "model.layers.1.self_attn.qkv_proj.weight"), nullptr);
  const SafeTensorsFile f = SafeTensorsFile::open(dir / "model.safetensors").value();
  const std::vector<float> qkv = read_as_f32(**f.get("model.layers.1.self_attn.qkv_proj.weight")).value();
  size_t row = 0;
  for (const char* name : {"q_proj", "k_proj", "v_proj"}) {
    const SourceTensor* t = find(*m, std::string("model.layers.1.self_attn.") + name + ".weight");
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape, (std::vector<int64_t>{name[0] == 'q' ? 256 : 128, 256})) << name;
    const std::vector<float> rows = all_rows(*t);
    EXPECT_TRUE(std::equal(rows.begin(), rows.end(), qkv.begin() + static_cast<std::ptrdiff_t>(row * 256))) << name;
    row += static_cast<size_t>(t->shape[0]);
  }
  EXPECT_EQ(row * 256, qkv.size());

  // The same checkpoint with a q_proj of layer 0 stored beside its qkv_proj.
  const fs::path bad = testing::test_dir() / "phi3-dup";
  fs::remove_all(bad);
  fs::create_directories(bad);
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != "model.safetensors") fs::copy_file(e.path(), bad / e.path().filename());
  }
  std::ifstream in(dir / "model.safetensors", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_len));
  std::string data = bytes.substr(8 + header_len);
  header["model.layers.0.self_attn.q_proj.weight"] = {
      {"dtype", "BF16"}, {"shape", {256, 256}}, {"data_offsets", {data.size(), data.size() + 256 * 256 * 2}}};
  data.append(256 * 256 * 2, '\0');
  testing::write_file(bad / "model.safetensors", testing::safetensors_bytes(header.dump(), data));
  for (bool fuse_qkv : {false, true}) {
    const Result<SourceModel> dup = SourceModel::open(bad, {.fuse_gate_up = true, .fuse_qkv = fuse_qkv});
    EXPECT_EQ(dup.status().code(), StatusCode::kValidation) << dup.status().to_string();
    EXPECT_NE(dup.status().message().find("model.layers.0.self_attn.q_proj.weight: given both alone and inside"),
              std::string::npos)
        << dup.status().to_string();
  }
  // With fuse_qkv the stored qkv_proj stays one tensor (one stored part, its own bytes).
  Result<SourceModel> kept = SourceModel::open(dir, {.fuse_gate_up = true, .fuse_qkv = true});
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  const SourceTensor* fused = find(*kept, "model.layers.1.self_attn.qkv_proj.weight");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->parts.size(), 1u);
  EXPECT_EQ(all_rows(*fused), qkv);
  EXPECT_EQ(find(*kept, "model.layers.1.self_attn.q_proj.weight"), nullptr);
  // An override that selects layer 1's v_proj splits that layer's stored qkv_proj (and only that layer's).
  SourceOptions with_override{.fuse_gate_up = true, .fuse_qkv = true};
  with_override.overridden = [](const std::string& n) { return n == "model.layers.1.self_attn.v_proj.weight"; };
  Result<SourceModel> split = SourceModel::open(dir, with_override);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  EXPECT_NE(find(*split, "model.layers.1.self_attn.v_proj.weight"), nullptr);
  EXPECT_EQ(find(*split, "model.layers.1.self_attn.qkv_proj.weight"), nullptr);
  EXPECT_NE(find(*split, "model.layers.0.self_attn.qkv_proj.weight"), nullptr);
}

// fuse_qkv stacks q, k and v rows per layer (HF); a GGUF layer whose three are stored in different types (llama.cpp's
// Q4_K_M gives use_more_bits layers a Q6_K v_proj) stays unfused so its blocks pass through.
TEST(Source, FuseQkvStacksRowsWhereTheTypesAgree) {
  Result<SourceModel> m = SourceModel::open(hf("tiny-llama"), {.fuse_gate_up = true, .fuse_qkv = true});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->tensors().size(), 15u);  // 21 stored: gate+up and q+k+v fused in 2 layers
  const SourceTensor* qkv = find(*m, "model.layers.1.self_attn.qkv_proj.weight");
  ASSERT_NE(qkv, nullptr);
  ASSERT_EQ(qkv->parts.size(), 3u);
  const SafeTensorsFile f = SafeTensorsFile::open(hf("tiny-llama") / "model.safetensors").value();
  std::vector<float> want;
  for (const char* name : {"q_proj", "k_proj", "v_proj"}) {
    EXPECT_EQ(find(*m, std::string("model.layers.1.self_attn.") + name + ".weight"), nullptr) << name;
    const std::vector<float> rows = read_as_f32(**f.get(std::string("model.layers.1.self_attn.") + name + ".weight")).value();
    want.insert(want.end(), rows.begin(), rows.end());
  }
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{static_cast<int64_t>(want.size() / 256), 256}));
  EXPECT_EQ(qkv->parts[1].row_begin, 256);
  EXPECT_EQ(all_rows(*qkv), want);

  Result<SourceModel> g = SourceModel::open(gguf("tiny-llama"), {.fuse_gate_up = true, .fuse_qkv = true});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  size_t fused = 0, separate = 0;
  for (uint32_t l = 0; l < 2; ++l) {
    const std::string at = "model.layers." + std::to_string(l) + ".self_attn.";
    if (const SourceTensor* t = find(*g, at + "qkv_proj.weight")) {
      ++fused;
      for (const SourcePart& p : t->parts) EXPECT_EQ(p.stored.type, t->parts[0].stored.type) << t->name;
      EXPECT_EQ(t->parts[0].stored.permute_heads, 8);  // each part keeps its own row order
      EXPECT_EQ(t->parts[2].stored.permute_heads, 0);
    } else {
      ++separate;
      EXPECT_NE(find(*g, at + "v_proj.weight")->source_dtype(), find(*g, at + "q_proj.weight")->source_dtype());
    }
  }
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(separate, 1u);
}

TEST(Source, MissingSourceIsNotFound) {
  EXPECT_ERROR(SourceModel::open(fixtures_dir() / "no-such-model", {}), StatusCode::kNotFound, "no such file");
}

}  // namespace
}  // namespace rdrr::convert
