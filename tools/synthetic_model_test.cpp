// rdrr-make-synthetic-model: a tiny checkpoint read back through convert/'s SafeTensorsModel (single file and
// sharded), value statistics, determinism (seed, thread count, shard size), the text files, the sharding rule,
// errors, and the command line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <tbb/global_control.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <sys/wait.h>

#include "convert/converter.h"
#include "convert/safetensors.h"
#include "quant/f16.h"
#include "rdrr/test_temp_dir.h"
#include "tools/synthetic_model.h"

namespace rdrr::tools {
namespace {

namespace fs = std::filesystem;

class SyntheticModelTest : public ::testing::Test {
 protected:
  SyntheticModelOptions tiny(const std::string& sub, uint64_t seed = 7) const {
    SyntheticModelOptions o;
    o.shape = *synthetic_shape_preset("tiny");
    o.out_dir = root_ / sub;
    o.seed = seed;
    return o;
  }
  test::TempDir tmp_;
  fs::path root_ = tmp_.path();
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::span<const uint16_t> as_u16(std::span<const std::byte> b) {
  return {reinterpret_cast<const uint16_t*>(b.data()), b.size() / 2};
}

TEST_F(SyntheticModelTest, TinySingleFileReadsBack) {
  const auto o = tiny("single");
  auto summary = write_synthetic_model(o);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  EXPECT_EQ(summary->safetensors_files, std::vector<std::string>{"model.safetensors"});
  EXPECT_FALSE(fs::exists(o.out_dir / "model.safetensors.index.json"));
  EXPECT_EQ(summary->params, 1705216);  // 2 * 1024*256 + 2 * (2*256*256 + 2*128*256 + 3*512*256 + 2*256) + 256
  EXPECT_EQ(summary->tensor_bytes, 2u * 1705216u);

  auto model = convert::SafeTensorsModel::open(o.out_dir);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const auto expected = synthetic_tensors(o.shape);
  ASSERT_EQ(model->tensors().size(), expected.size());
  EXPECT_EQ(expected.size(), 2u + 2u * 9u + 1u);
  for (const auto& t : expected) {
    const convert::TensorView* v = model->find(t.name);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_EQ(v->shape, t.shape) << t.name;
    EXPECT_EQ(v->dtype, quant::DType::kBF16) << t.name;
  }
  EXPECT_EQ(model->find("model.layers.1.self_attn.k_proj.weight")->shape, (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(model->find("lm_head.weight")->shape, (std::vector<int64_t>{1024, 256}));
  EXPECT_EQ(model->files()[0].metadata().at("format"), "pt");

  // Norms are ones; matrices are exactly fill_synthetic_values rounded to bf16, with mean ~0 and std ~0.02.
  for (uint16_t b : as_u16(model->find("model.norm.weight")->bytes)) ASSERT_EQ(b, 0x3f80);
  const convert::TensorView* up = model->find("model.layers.0.mlp.up_proj.weight");
  std::vector<float> want(static_cast<size_t>(up->numel()));
  fill_synthetic_values(synthetic_tensor_seed(o.seed, up->name), 0, want);
  const auto got = as_u16(up->bytes);
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], quant::f32_to_bf16(want[i])) << i;
    sum += want[i];
    sum_sq += static_cast<double>(want[i]) * want[i];
  }
  const double n = static_cast<double>(want.size());
  EXPECT_NEAR(sum / n, 0.0, 2e-4);
  EXPECT_NEAR(std::sqrt(sum_sq / n), 0.02, 4e-4);
}

TEST_F(SyntheticModelTest, HeaderIsPaddedAndSorted) {
  const auto o = tiny("header");
  ASSERT_TRUE(write_synthetic_model(o).ok());
  const std::string bytes = read_file(o.out_dir / "model.safetensors");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.rfind(R"({"__metadata__":{"format":"pt"},"lm_head.weight":{"dtype":"BF16","shape":[1024,256],)"
                         R"("data_offsets":[0,524288]},"model.embed_tokens.weight")",
                         0),
            0u)
      << header.substr(0, 200);
  const size_t close = header.find_last_of('}');
  EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos);  // only spaces after the JSON
  EXPECT_EQ(bytes.size(), 8 + n + 2u * 1705216u);
}

TEST_F(SyntheticModelTest, ShardedMatchesSingleFile) {
  const auto single = tiny("single");
  ASSERT_TRUE(write_synthetic_model(single).ok());
  auto sharded = tiny("sharded");
  sharded.max_shard_bytes = 600'000;  // the 512 KiB embeddings fit; several layers' weights do not
  auto summary = write_synthetic_model(sharded);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  const size_t n_files = summary->safetensors_files.size();
  ASSERT_GE(n_files, 4u);
  EXPECT_EQ(summary->safetensors_files[0], "model-00001-of-0000" + std::to_string(n_files) + ".safetensors");
  EXPECT_FALSE(fs::exists(sharded.out_dir / "model.safetensors"));

  const auto index = nlohmann::json::parse(read_file(sharded.out_dir / "model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), 2u * 1705216u);
  EXPECT_EQ(index["weight_map"].size(), synthetic_tensors(sharded.shape).size());
  EXPECT_EQ(index["weight_map"]["model.embed_tokens.weight"], summary->safetensors_files[0]);

  auto a = convert::SafeTensorsModel::open(single.out_dir);
  auto b = convert::SafeTensorsModel::open(sharded.out_dir);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string() << b.status().to_string();
  ASSERT_EQ(b->files().size(), n_files);
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    const auto& ta = a->tensors()[i];
    const auto& tb = b->tensors()[i];
    ASSERT_EQ(ta.name, tb.name);
    ASSERT_EQ(ta.shape, tb.shape);
    ASSERT_TRUE(std::equal(ta.bytes.begin(), ta.bytes.end(), tb.bytes.begin(), tb.bytes.end())) << ta.name;
    const int shard = b->shard_of(tb.name);
    EXPECT_EQ(index["weight_map"][tb.name], summary->safetensors_files[static_cast<size_t>(shard)]);
  }
}

TEST_F(SyntheticModelTest, SameSeedSameBytesAtAnyThreadCount) {
  const auto a = tiny("a", 42);
  const auto b = tiny("b", 42);
  const auto c = tiny("c", 43);
  ASSERT_TRUE(write_synthetic_model(a).ok());
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    ASSERT_TRUE(write_synthetic_model(b).ok());
  }
  ASSERT_TRUE(write_synthetic_model(c).ok());
  const std::string ba = read_file(a.out_dir / "model.safetensors");
  EXPECT_EQ(ba, read_file(b.out_dir / "model.safetensors"));
  EXPECT_NE(ba, read_file(c.out_dir / "model.safetensors"));
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}) {
    EXPECT_EQ(read_file(a.out_dir / f), read_file(c.out_dir / f)) << f;
  }
}

TEST_F(SyntheticModelTest, F32AndF16) {
  for (auto dtype : {quant::DType::kF32, quant::DType::kF16}) {
    auto o = tiny(std::string(quant::dtype_name(dtype)));
    o.dtype = dtype;
    ASSERT_TRUE(write_synthetic_model(o).ok());
    auto m = convert::SafeTensorsModel::open(o.out_dir);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    const convert::TensorView* v = m->find("model.layers.1.self_attn.o_proj.weight");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->dtype, dtype);
    std::vector<float> want(static_cast<size_t>(v->numel()));
    fill_synthetic_values(synthetic_tensor_seed(o.seed, v->name), 0, want);
    auto got = convert::read_as_f32(*v);
    ASSERT_TRUE(got.ok());
    for (size_t i = 0; i < want.size(); ++i) {
      const float w = dtype == quant::DType::kF32 ? want[i] : quant::f16_to_f32(quant::f32_to_f16(want[i]));
      ASSERT_EQ((*got)[i], w) << i;
    }
  }
}

TEST_F(SyntheticModelTest, TextFiles) {
  const auto o = tiny("text");
  ASSERT_TRUE(write_synthetic_model(o).ok());
  const auto config = nlohmann::json::parse(read_file(o.out_dir / "config.json"));
  EXPECT_EQ(config["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(config["hidden_size"], 256);
  EXPECT_EQ(config["num_key_value_heads"], 2);
  EXPECT_EQ(config["tie_word_embeddings"], false);
  EXPECT_EQ(config["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(config["rope_scaling"]["factor"], 32.0);
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_EQ(config["bos_token_id"], 768);
  EXPECT_EQ(config["eos_token_id"], 769);
  const auto gen = nlohmann::json::parse(read_file(o.out_dir / "generation_config.json"));
  EXPECT_EQ(gen["eos_token_id"], 769);

  // Tokenizer: 768 BPE tokens (256 bytes + 512 merges, each of two existing tokens) + 256 special tokens.
  const auto tok = nlohmann::json::parse(read_file(o.out_dir / "tokenizer.json"));
  const auto& vocab = tok["model"]["vocab"];
  const auto& merges = tok["model"]["merges"];
  ASSERT_EQ(vocab.size(), 768u);
  ASSERT_EQ(merges.size(), 512u);
  std::set<int64_t> ids;
  for (const auto& [k, v] : vocab.items()) ids.insert(v.get<int64_t>());
  EXPECT_EQ(ids.size(), 768u);
  EXPECT_EQ(*ids.rbegin(), 767);
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string m = merges[i];
    const size_t sp = m.find(' ');
    ASSERT_NE(sp, std::string::npos);
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    ASSERT_TRUE(vocab.contains(left) && vocab.contains(right) && vocab.contains(left + right)) << m;
    EXPECT_EQ(vocab[left + right], static_cast<int64_t>(256 + i));
  }
  EXPECT_EQ(vocab["!"], 0);
  EXPECT_EQ(vocab["\xc4\xa0"], 220);  // U+0120 (space), as in GPT-2
  const auto& added = tok["added_tokens"];
  ASSERT_EQ(added.size(), 256u);
  EXPECT_EQ(added[0]["id"], 768);
  EXPECT_EQ(added[0]["content"], "<|begin_of_text|>");
  EXPECT_EQ(added[9]["content"], "<|eot_id|>");
  EXPECT_EQ(added[255]["content"], "<|reserved_special_token_250|>");
  const auto tc = nlohmann::json::parse(read_file(o.out_dir / "tokenizer_config.json"));
  EXPECT_EQ(tc["bos_token"], "<|begin_of_text|>");
}

TEST(SyntheticValues, AnyRangeMatchesTheWholeTensor) {
  std::vector<float> whole(200'000);
  fill_synthetic_values(99, 0, whole);
  for (int64_t first : {int64_t{1}, int64_t{65535}, int64_t{65536}, int64_t{70'001}, int64_t{131'000}}) {
    std::vector<float> part(60'000);
    fill_synthetic_values(99, first, part);
    for (size_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], whole[static_cast<size_t>(first) + i]) << first;
  }
  std::vector<float> other(1000);
  fill_synthetic_values(100, 0, other);
  EXPECT_NE(other[0], whole[0]);
  // Irwin-Hall(4) bounds: |x| <= 131070 * scale, about 3.46 standard deviations.
  for (float v : whole) ASSERT_LE(std::fabs(v), 0.0693f);
}

TEST(SyntheticShapes, PresetsAndSharding) {
  const auto one_b = *synthetic_shape_preset("llama-3.2-1b");
  const auto t1 = synthetic_tensors(one_b);
  int64_t params = 0;
  for (const auto& t : t1) params += t.numel();
  EXPECT_EQ(params, 1235814400);  // Llama 3.2 1B
  const auto eight_b = *synthetic_shape_preset("llama-3.1-8b");
  params = 0;
  std::vector<uint64_t> bytes;
  for (const auto& t : synthetic_tensors(eight_b)) {
    params += t.numel();
    bytes.push_back(static_cast<uint64_t>(t.numel()) * 2);
  }
  EXPECT_EQ(params, 8030261248);  // Llama 3.1 8B
  EXPECT_EQ(split_into_shards(bytes, 5'000'000'000).size(), 4u);  // as Meta's release: 4 shards
  EXPECT_FALSE(synthetic_shape_preset("llama-9").has_value());

  // HF rule: a tensor over the limit gets its own shard and the open shard continues after it.
  const std::vector<uint64_t> sizes = {4, 4, 20, 3, 5, 1};
  const auto shards = split_into_shards(sizes, 10);
  EXPECT_EQ(shards, (std::vector<std::vector<size_t>>{{2}, {0, 1}, {3, 4, 5}}));
}

// The MoE presets have the real models' parameter counts and HF tensor names; the tiny ones convert (every
// layer sparse, experts stacked) with the architecture read from config.json.
TEST(SyntheticShapes, MoePresets) {
  const auto count = [](const SyntheticShape& s) {
    int64_t params = 0;
    for (const auto& t : synthetic_tensors(s)) params += t.numel();
    return params;
  };
  const auto qwen = *synthetic_shape_preset("qwen3-30b-a3b");
  EXPECT_EQ(count(qwen), 30532122624);  // Qwen3-30B-A3B
  const auto tq = synthetic_tensors(qwen);
  EXPECT_EQ(tq.size(), 1u + 48u * (4u + 2u + 1u + 3u * 128u + 2u) + 2u);
  EXPECT_EQ(tq[5].name, "model.layers.0.self_attn.q_norm.weight");
  EXPECT_EQ(tq[5].shape, std::vector<int64_t>{128});
  EXPECT_TRUE(tq[5].is_norm);
  EXPECT_EQ(tq[7].name, "model.layers.0.mlp.gate.weight");
  EXPECT_EQ(tq[7].shape, (std::vector<int64_t>{128, 2048}));
  EXPECT_EQ(tq[10].name, "model.layers.0.mlp.experts.0.down_proj.weight");
  EXPECT_EQ(tq[10].shape, (std::vector<int64_t>{2048, 768}));
  const auto mixtral = *synthetic_shape_preset("mixtral-8x7b");
  EXPECT_EQ(count(mixtral), 46702792704);  // Mixtral-8x7B
  const auto tm = synthetic_tensors(mixtral);
  EXPECT_EQ(tm[5].name, "model.layers.0.block_sparse_moe.gate.weight");
  EXPECT_EQ(tm[6].name, "model.layers.0.block_sparse_moe.experts.0.w1.weight");
  EXPECT_EQ(tm[8].shape, (std::vector<int64_t>{4096, 14336}));  // w2 (down)
  SyntheticShape bad = *synthetic_shape_preset("tiny-mixtral");
  bad.experts_per_token = 5;  // > num_experts
  const Status st = check_synthetic_shape(bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("experts_per_token = 5"), std::string::npos) << st.to_string();
}

TEST_F(SyntheticModelTest, MoeCheckpointsConvert) {
  for (const char* preset : {"tiny-qwen3-moe", "tiny-mixtral"}) {
    SCOPED_TRACE(preset);
    SyntheticModelOptions o;
    o.shape = *synthetic_shape_preset(preset);
    o.out_dir = root_ / preset;
    auto summary = write_synthetic_model(o);
    ASSERT_TRUE(summary.ok()) << summary.status().to_string();
    convert::ConvertOptions co;
    co.src = o.out_dir;
    co.out = root_ / (std::string(preset) + "-pack");
    co.calibration = convert::CalibrationMode::kOff;  // no golden_writer: no goldens
    Result<convert::ConvertReport> r = convert::convert_model(co);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const nlohmann::json m = nlohmann::json::parse(read_file(co.out / "manifest.json"));
    const nlohmann::json& moe = m.at("architecture").at("moe");
    EXPECT_EQ(moe.at("numExperts").get<int64_t>(), o.shape.num_experts) << moe.dump();
    EXPECT_EQ(moe.at("expertsPerToken").get<int64_t>(), o.shape.experts_per_token) << moe.dump();
    EXPECT_TRUE(m.at("tensors").contains("model.layers.1.mlp.experts.gate_up_proj.weight"));
  }
}

TEST_F(SyntheticModelTest, Errors) {
  auto o = tiny("err");
  ASSERT_TRUE(write_synthetic_model(o).ok());
  auto again = write_synthetic_model(o);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("already holds config.json (use --force to overwrite)"), std::string::npos)
      << again.status().message();

  // --force replaces the checkpoint, including a sharded one's files.
  o.force = true;
  o.max_shard_bytes = 600'000;
  ASSERT_TRUE(write_synthetic_model(o).ok());
  EXPECT_FALSE(fs::exists(o.out_dir / "model.safetensors"));
  o.max_shard_bytes = 5'000'000'000;
  ASSERT_TRUE(write_synthetic_model(o).ok());
  EXPECT_FALSE(fs::exists(o.out_dir / "model.safetensors.index.json"));
  for (const auto& e : fs::directory_iterator(o.out_dir)) {
    EXPECT_EQ(e.path().filename().string().rfind("model-", 0), std::string::npos) << e.path();
  }
  EXPECT_TRUE(convert::SafeTensorsModel::open(o.out_dir).ok());

  auto bad = tiny("bad");
  bad.shape.num_kv_heads = 3;
  auto r = write_synthetic_model(bad);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("num_heads 4 is not a multiple of num_kv_heads 3"), std::string::npos);
  bad = tiny("bad");
  bad.shape.vocab_size = 100;
  r = write_synthetic_model(bad);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("vocab_size = 100, expected 258"), std::string::npos);
  bad = tiny("bad");
  bad.dtype = quant::DType::kQ4_K;
  EXPECT_EQ(write_synthetic_model(bad).status().code(), StatusCode::kInvalidArgument);
  bad = tiny("bad");
  bad.max_shard_bytes = 0;
  EXPECT_EQ(write_synthetic_model(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SyntheticModelTest, CommandLine) {
  const std::string tool = RDRR_SYNTHETIC_TOOL;
  const fs::path out = root_ / "cli";
  const std::string cmd = tool + " --shape tiny --seed 7 --max-shard-size 600000 --json --out " + out.string() +
                          " > " + (root_ / "cli.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto summary = nlohmann::json::parse(read_file(root_ / "cli.json"));
  EXPECT_EQ(summary["shape"], "tiny");
  EXPECT_EQ(summary["params"], 1705216);
  EXPECT_GE(summary["files"].get<int>(), 4);
  // Same seed through the library, single file: same tensors.
  ASSERT_TRUE(write_synthetic_model(tiny("lib")).ok());
  auto a = convert::SafeTensorsModel::open(out);
  auto b = convert::SafeTensorsModel::open(root_ / "lib");
  ASSERT_TRUE(a.ok() && b.ok());
  const auto& ea = a->find("model.embed_tokens.weight")->bytes;
  const auto& eb = b->find("model.embed_tokens.weight")->bytes;
  EXPECT_TRUE(std::equal(ea.begin(), ea.end(), eb.begin(), eb.end()));

  // Usage errors exit 2; an existing checkpoint exits 7 (kAlreadyExists).
  EXPECT_EQ(WEXITSTATUS(std::system((tool + " --shape tiny --dtype q4_k --out " + (root_ / "x").string() +
                                     " 2>/dev/null").c_str())), 2);
  EXPECT_EQ(WEXITSTATUS(std::system((tool + " --shape nope --out " + (root_ / "x").string() + " 2>/dev/null").c_str())),
            2);
  EXPECT_EQ(WEXITSTATUS(std::system((tool + " --shape tiny --out " + out.string() + " 2>/dev/null").c_str())), 7);
  // Explicit dims without a preset.
  const std::string custom = tool + " --hidden-size 256 --num-layers 1 --num-heads 2 --intermediate-size 256" +
                             " --vocab-size 300 --quiet-not-a-flag --out " + (root_ / "y").string() + " 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(custom.c_str())), 2);  // unknown flag
  const std::string custom_ok = tool + " --hidden-size 256 --num-layers 1 --num-heads 2 --intermediate-size 256" +
                                " --vocab-size 300 --out " + (root_ / "y").string() + " > /dev/null";
  ASSERT_EQ(std::system(custom_ok.c_str()), 0);
  auto m = convert::SafeTensorsModel::open(root_ / "y");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->find("model.layers.0.self_attn.k_proj.weight")->shape, (std::vector<int64_t>{256, 256}));
  EXPECT_NE(m->find("lm_head.weight"), nullptr);
}

}  // namespace
}  // namespace rdrr::tools
