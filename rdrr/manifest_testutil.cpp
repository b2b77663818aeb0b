#include "rdrr/manifest_testutil.h"

#include <gtest/gtest.h>

#include <fstream>

#include "rdrr/manifest_json.h"

namespace rdrr::testing {
namespace {

namespace fs = std::filesystem;
using quant::DType;
using quant::Layout;

TensorEntry make_tensor(std::string name, DType dtype, std::vector<uint64_t> shape, TensorRole role,
                        std::string group) {
  TensorEntry t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (quant::is_block_quantized(dtype)) t.layout = Layout::kRowWise;
  t.role = role;
  t.group = std::move(group);
  t.size_bytes = expected_tensor_size_bytes(t.dtype, t.shape, t.layout).value();
  return t;
}

void add_layer(Manifest& m, uint32_t layer, bool last) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  const std::string g = "layer." + std::to_string(layer);
  auto add = [&](const std::string& suffix, DType dtype, std::vector<uint64_t> shape, TensorRole role) {
    m.tensors.push_back(make_tensor(p + suffix, dtype, std::move(shape), role, g));
  };
  add("input_layernorm.weight", DType::kF32, {256}, TensorRole::kNorm);
  add("self_attn.q_proj.weight", DType::kQ4_K, {256, 256}, TensorRole::kMatmul);
  add("self_attn.k_proj.weight", DType::kQ4_K, {64, 256}, TensorRole::kMatmul);
  add("self_attn.v_proj.weight", last ? DType::kQ6_K : DType::kQ4_K, {64, 256}, TensorRole::kMatmul);
  add("self_attn.q_norm.weight", DType::kF32, {64}, TensorRole::kNorm);
  add("self_attn.k_norm.weight", DType::kF32, {64}, TensorRole::kNorm);
  add("self_attn.o_proj.weight", DType::kQ4_K, {256, 256}, TensorRole::kMatmul);
  add("post_attention_layernorm.weight", DType::kF32, {256}, TensorRole::kNorm);
  add("pre_feedforward_layernorm.weight", DType::kF32, {256}, TensorRole::kNorm);
  add("mlp.gate_proj.weight", DType::kQ4_K, {256, 256}, TensorRole::kMatmul);
  add("mlp.up_proj.weight", DType::kQ4_K, {256, 256}, TensorRole::kMatmul);
  add("mlp.down_proj.weight", last ? DType::kQ6_K : DType::kQ4_K, {256, 256}, TensorRole::kMatmul);
  add("post_feedforward_layernorm.weight", DType::kF32, {256}, TensorRole::kNorm);
}

void set_architecture(Manifest& m) {
  m.architecture = Architecture{ArchFamily::kGemma3, 3, 256, 256, 4, 1, 64, 1024, 512, {}};
  AttentionConfig& a = m.inference.attention;
  a.causal = true;
  a.query_key_norm = true;
  a.query_pre_attn_scalar = 64.0;
  a.sliding_window = 32;
  a.layer_types = {LayerType::kSlidingAttention, LayerType::kSlidingAttention, LayerType::kFullAttention};
  m.inference.normalization = NormConfig{NormType::kRmsNorm, 1e-6, 1.0, true, true, true};
  m.inference.ffn = FfnConfig{Activation::kGeluTanh, true};
  m.inference.rope.theta = 1e6;
  m.inference.rope.local_theta = 1e4;
  m.inference.output = OutputConfig{std::nullopt, true, 16.0};
}

ExecutionGraph tiny_graph() {
  ExecutionGraph g;
  auto kernel = [](const char* file, int64_t tile) {
    KernelSpec k{file, "main", "sha256:" + fake_sha256(file), {}, {}};
    k.constants["TILE"] = tile;
    k.constants["USE_FP16"] = false;
    k.constants["SCALE"] = 0.125;
    return k;
  };
  g.kernels["embed_q6k"] = kernel("embed_q6k.comp", 64);
  g.kernels["rmsnorm"] = kernel("rmsnorm.comp", 256);
  g.kernels["matmul_q4k"] = kernel("matmul_q4k.comp", 32);
  g.kernels["matmul_q6k"] = kernel("matmul_q6k.comp", 32);
  g.kernels["attn_sliding"] = kernel("attention.comp", 32);
  g.kernels["attn_sliding"].precision["kvDtype"] = "f16";
  g.kernels["attn_full"] = kernel("attention.comp", 64);
  g.pre_layer = {{"embed", "embed_q6k", "model.embed_tokens.weight"}};
  const std::string l = "model.layers.{L}.";
  g.decode = {ExecStep{"input_norm", "rmsnorm", l + "input_layernorm.weight"},
              ExecStep{"q_proj", "matmul_q4k", l + "self_attn.q_proj.weight"},
              LayerGroup{{0, 1}, {{"attention", "attn_sliding", std::nullopt}}},
              LayerGroup{{2}, {{"attention", "attn_full", std::nullopt}}},
              ExecStep{"o_proj", "matmul_q4k", l + "self_attn.o_proj.weight"}};
  g.prefill = g.decode;
  g.post_layer = {{"final_norm", "rmsnorm", "model.norm.weight"},
                  {"lm_head", "matmul_q6k", "model.embed_tokens.weight"}};
  return g;
}

}  // namespace

std::string fake_sha256(std::string_view seed) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, stretched to 64 hex digits
  std::string out;
  static const char kHex[] = "0123456789abcdef";
  for (int round = 0; round < 4; ++round) {
    for (char c : seed) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ static_cast<uint64_t>(round)) * 1099511628211ull;
    for (int i = 0; i < 16; ++i) out += kHex[(h >> (4 * i)) & 0xf];
  }
  return out;
}

void place_tensors(Manifest& m, uint64_t shard_cap_bytes) {
  std::vector<uint64_t> shard_sizes{0};
  for (TensorEntry& t : m.tensors) {
    t.placement.spans.clear();
    uint64_t offset = (shard_sizes.back() + kTensorAlignmentBytes - 1) / kTensorAlignmentBytes * kTensorAlignmentBytes;
    if (offset >= shard_cap_bytes) {
      shard_sizes.push_back(0);
      offset = 0;
    }
    uint64_t left = t.size_bytes;
    while (left > 0) {
      const uint64_t take = std::min(left, shard_cap_bytes - offset);
      t.placement.spans.push_back(Span{static_cast<uint32_t>(shard_sizes.size() - 1), offset, take});
      shard_sizes.back() = offset + take;
      left -= take;
      if (left > 0) {
        shard_sizes.push_back(0);
        offset = 0;
      }
    }
  }
  m.shards.clear();
  for (size_t i = 0; i < shard_sizes.size(); ++i) {
    const auto index = static_cast<uint32_t>(i);
    m.shards.push_back(ShardInfo{index, shard_filename(index), shard_sizes[i], fake_sha256(shard_filename(index)), 0});
  }
}

Manifest tiny_gemma3_manifest(uint64_t shard_cap_bytes) {
  Manifest m;
  m.model_id = "tiny-gemma3";
  m.quantization = "Q4_K_M";
  set_architecture(m);
  m.tensors.push_back(
      make_tensor("model.embed_tokens.weight", DType::kQ6_K, {1024, 256}, TensorRole::kEmbedding, "embed"));
  for (uint32_t layer = 0; layer < 3; ++layer) add_layer(m, layer, layer == 2);
  m.tensors.push_back(make_tensor("model.norm.weight", DType::kF32, {256}, TensorRole::kNorm, "head"));
  place_tensors(m, shard_cap_bytes);
  m.tensors[0].sha256_hex = fake_sha256("embed");
  m.inference.execution = tiny_graph();
  m.tokenizer.files = {{"tokenizer.json", 65197, fake_sha256("tokenizer.json")},
                       {"tokenizer.model", 14686, fake_sha256("tokenizer.model")},
                       {"tokenizer_config.json", 257, fake_sha256("tokenizer_config.json")}};
  m.tokenizer.bos_token_id = 1;
  m.tokenizer.eos_token_ids = {2};
  m.metadata.source.format = SourceFormat::kSafetensors;
  m.metadata.source.files = {
      {"config.json", 1120, "a5ed36cc60c90eb8da7a3c55646bb978464c399d54f6d9597c3e8ce925c7764f"},
      {"model.safetensors", 5393192, "d42d83d41163c2de6881ac6879d918fa1b6e2382116b8ab932544fdeada72df9"}};
  m.metadata.converter = ConverterInfo{"rdrr-convert", "0.1.0", {{"layout", "row_wise"}, {"quant", "q4_k_m"}}};
  m.goldens = {{"golden/hf-f32.json", 10087, fake_sha256("hf-f32.json"), "reference"},
               {"golden/hf-f32.p0.logits.f32", 49152, fake_sha256("p0"), "logits"}};
  canonicalize(m);
  fill_derived_fields(m);
  return m;
}

namespace {
bool write_sized_file(const fs::path& path, uint64_t size_bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string zeros(64 * 1024, '\0');
  for (uint64_t left = size_bytes; left > 0 && out;) {
    const uint64_t n = std::min<uint64_t>(left, zeros.size());
    out.write(zeros.data(), static_cast<std::streamsize>(n));
    left -= n;
  }
  out.close();
  EXPECT_TRUE(static_cast<bool>(out)) << "cannot write " << path;
  return static_cast<bool>(out);
}
}  // namespace

bool write_pack_files(const Manifest& m, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir / kGoldenDirName, ec);
  EXPECT_FALSE(ec) << ec.message();
  bool ok = !ec;
  {
    std::ofstream out(dir / kManifestFilename, std::ios::binary | std::ios::trunc);
    out << serialize_manifest(m);
    ok = ok && static_cast<bool>(out);
  }
  for (const ShardInfo& s : m.shards) ok = write_sized_file(dir / s.filename, s.size_bytes) && ok;
  for (const FileRecord& f : m.tokenizer.files) ok = write_sized_file(dir / f.name, f.size_bytes) && ok;
  for (const GoldenFile& g : m.goldens) ok = write_sized_file(dir / g.name, g.size_bytes) && ok;
  return ok;
}

}  // namespace rdrr::testing
