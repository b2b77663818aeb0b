// rdrr-inspect: the summary names every tensor (text and JSON), kernels get their digest status, and
// --dequantize writes a tensor's logical [N, K] f32 whatever its layout (bit-exact for f32).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert/converter.h"
#include "convert/safetensors.h"
#include "kernels/digest_table.h"
#include "convert/tensor_view.h"
#include "quant/f16.h"
#include "quant/layout.h"
#include "rdrr/manifest_json.h"
#include "rdrr/shard_reader.h"
#include "rdrr/test_temp_dir.h"
#include "tools/pack_inspect.h"

namespace rdrr::tools {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = RDRR_FIXTURES_DIR;

using test::TempDir;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct ToolRun {
  int exit_code = -1;
  std::string out, err;
};

ToolRun run_inspect(const std::vector<std::string>& args, const fs::path& scratch) {
  std::string cmd = "exec ";  // appends only (GCC 12 -O3 reports a false -Wrestrict on `"lit" + std::string&&`)
  cmd += quote(RDRR_INSPECT_BIN);
  for (const std::string& a : args) {
    cmd += ' ';
    cmd += quote(a);
  }
  cmd += " >";
  cmd += quote((scratch / "stdout").string());
  cmd += " 2>";
  cmd += quote((scratch / "stderr").string());
  const int status = std::system(cmd.c_str());
  ToolRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.out = read_file(scratch / "stdout");
  r.err = read_file(scratch / "stderr");
  return r;
}

fs::path convert_pack(const fs::path& out, convert::Preset preset, quant::Layout layout) {
  convert::ConvertOptions o;
  o.src = kFixtures / "tiny-llama" / "hf";
  o.out = out;
  o.preset = preset;
  o.q4k_layout = layout;
  o.sync_to_disk = false;
  Result<convert::ConvertReport> r = convert::convert_model(o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return out;
}

std::vector<float> read_f32(const fs::path& p) {
  const std::string bytes = read_file(p);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

TEST(RdrrInspect, ColumnWiseQ4KDecodesToRowOrder) {
  TempDir tmp;
  const fs::path pack = convert_pack(tmp.path() / "pack", convert::Preset::kQ4_K_M, quant::Layout::kColumnWise);
  Result<Manifest> m = read_manifest_file(pack);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const TensorEntry* e = nullptr;
  for (const TensorEntry& t : m->tensors) {
    if (t.dtype == quant::DType::kQ4_K && t.layout == quant::Layout::kColumnWise && t.shape[0] != t.shape[1]) e = &t;
  }
  ASSERT_NE(e, nullptr) << "no non-square column_wise Q4_K tensor";
  const fs::path out = tmp.path() / "w.f32";
  const ToolRun r = run_inspect({pack.string(), "--tensor", e->name, "--dequantize", out.string()}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<float> got = read_f32(out);
  const size_t n = e->shape[0], k = e->shape[1];
  ASSERT_EQ(got.size(), n * k);

  // Independently: column_wise bytes are W^T [K, N] in row_wise order; decode that and transpose.
  Result<ShardReader> reader = ShardReader::open(pack, m->shards);
  ASSERT_TRUE(reader.ok());
  Result<TensorBytes> bytes = reader->tensor_bytes(e->name, e->placement);
  ASSERT_TRUE(bytes.ok());
  const std::span<const uint8_t> src(reinterpret_cast<const uint8_t*>(bytes->bytes().data()), bytes->bytes().size());
  std::vector<float> wt(n * k);
  ASSERT_TRUE(quant::dequantize_matrix({.dtype = quant::DType::kQ4_K,
                                        .layout = quant::Layout::kRowWise,
                                        .src = src,
                                        .n_rows = static_cast<int64_t>(k),
                                        .k_cols = static_cast<int64_t>(n),
                                        .dst = wt})
                  .ok());
  size_t mismatches = 0;
  for (size_t r2 = 0; r2 < n; ++r2) {
    for (size_t c = 0; c < k; ++c) mismatches += std::memcmp(&got[r2 * k + c], &wt[c * n + r2], sizeof(float)) != 0;
  }
  EXPECT_EQ(mismatches, 0u) << e->name << " [" << n << ", " << k << "]";
  // pack, w.f32, stdout, stderr
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 4)
      << "a temporary file was left behind";
}

TEST(RdrrInspect, F32TensorRoundTripsBitExactly) {
  TempDir tmp;
  const fs::path pack = convert_pack(tmp.path() / "pack", convert::Preset::kF32, quant::Layout::kRowWise);
  Result<convert::SafeTensorsModel> st = convert::SafeTensorsModel::open(kFixtures / "tiny-llama" / "hf");
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  for (const char* name : {"model.layers.1.mlp.down_proj.weight", "model.norm.weight"}) {
    const fs::path out = tmp.path() / "t.f32";
    const ToolRun r = run_inspect({pack.string(), "--tensor", name, "--dequantize", out.string()}, tmp.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const convert::TensorView* t = st->find(name);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->dtype, quant::DType::kF32);
    const std::string got = read_file(out);
    EXPECT_EQ(got.size(), t->bytes.size()) << name;
    EXPECT_EQ(std::memcmp(got.data(), t->bytes.data(), std::min(got.size(), t->bytes.size())), 0) << name;
  }
}

// F16 decodes to the rounded source values exactly; Q8_0 to within its step.
TEST(RdrrInspect, HalfAndQ8TensorsDecodeToTheSourceValues) {
  TempDir tmp;
  Result<convert::SafeTensorsModel> st = convert::SafeTensorsModel::open(kFixtures / "tiny-llama" / "hf");
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  const std::string name = "model.layers.0.self_attn.o_proj.weight";
  Result<std::vector<float>> src = convert::read_as_f32(*st->find(name));
  ASSERT_TRUE(src.ok());
  double max_abs = 0;
  for (float v : *src) max_abs = std::max(max_abs, static_cast<double>(std::abs(v)));
  // (No BF16 pack: the graph planner has no BF16 embed kernel, so the converter refuses the preset.)
  for (convert::Preset preset : {convert::Preset::kF16, convert::Preset::kQ8_0}) {
    const std::string label(convert::preset_name(preset));
    const fs::path pack = convert_pack(tmp.path() / label, preset, quant::Layout::kRowWise);
    const fs::path out = tmp.path() / (label + ".f32");
    const ToolRun r = run_inspect({pack.string(), "--tensor", name, "--dequantize", out.string()}, tmp.path());
    ASSERT_EQ(r.exit_code, 0) << label << ": " << r.err;
    const std::vector<float> got = read_f32(out);
    ASSERT_EQ(got.size(), src->size()) << label;
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const float x = (*src)[i];
      if (preset == convert::Preset::kF16) {
        bad += got[i] != quant::f16_to_f32(quant::f32_to_f16(x));
      } else {
        bad += std::abs(static_cast<double>(got[i]) - x) > max_abs / 127.0;  // at most one Q8_0 step
      }
    }
    EXPECT_EQ(bad, 0u) << label;
  }
}

TEST(RdrrInspect, UnknownTensorIsExit4WithCloseNames) {
  TempDir tmp;
  const fs::path pack = convert_pack(tmp.path() / "pack", convert::Preset::kQ4_K_M, quant::Layout::kColumnWise);
  const fs::path out = tmp.path() / "x.f32";
  const ToolRun r = run_inspect({pack.string(), "--tensor", "model.layers.0.self_attn.o_prj.weight", "--dequantize",
                             out.string()},
                            tmp.path());
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("tensor model.layers.0.self_attn.o_prj.weight: not in the pack; close names: "
                       "model.layers.0.self_attn.o_proj.weight"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  const ToolRun missing = run_inspect({(tmp.path() / "no-pack").string()}, tmp.path());
  EXPECT_EQ(missing.exit_code, 4) << missing.err;
  const ToolRun usage = run_inspect({pack.string(), "--tensor", "model.norm.weight"}, tmp.path());
  EXPECT_EQ(usage.exit_code, 2) << usage.err;
}

TEST(RdrrInspect, SummaryMentionsEveryTensor) {
  TempDir tmp;
  const fs::path pack = convert_pack(tmp.path() / "pack", convert::Preset::kQ4_K_M, quant::Layout::kColumnWise);
  Result<Manifest> m = read_manifest_file(pack);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ToolRun text = run_inspect({pack.string()}, tmp.path());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("model: " + m->model_id), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("family: llama"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("quantization: " + m->quantization), std::string::npos) << text.out;
  for (const TensorEntry& e : m->tensors) EXPECT_NE(text.out.find(e.name), std::string::npos) << e.name;

  const ToolRun js = run_inspect({pack.string(), "--json"}, tmp.path());
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const nlohmann::json j = nlohmann::json::parse(js.out);
  std::vector<std::string> names;
  for (const nlohmann::json& t : j.at("tensors")) names.push_back(t.at("name").get<std::string>());
  std::vector<std::string> want;
  for (const TensorEntry& e : m->tensors) want.push_back(e.name);
  EXPECT_EQ(names, want);
  EXPECT_EQ(j.at("architecture").at("numLayers").get<uint32_t>(), m->architecture.num_layers);
  EXPECT_EQ(j.at("quantization").at("preset").get<std::string>(), m->quantization);
  if (m->inference.execution) {  // the graph planner's packs: every kernel pinned by this build
    for (const nlohmann::json& k : j.at("graph").at("kernels")) EXPECT_EQ(k.at("status"), "ok") << k.dump();
    EXPECT_NE(text.out.find("preLayer:"), std::string::npos);
  }
  // The kernels a device may run in place of a pinned one (kernels/kernel_choice.h), visible in both forms.
  EXPECT_NE(text.out.find("device choice: runs gemm_q4_k_col_cm instead for passes of more than 32 rows"),
            std::string::npos)
      << text.out;
  bool shown = false;
  for (const nlohmann::json& k : j.at("graph").at("kernels")) {
    if (k.at("key") != "gemm_q4_k_col") continue;
    ASSERT_EQ(k.at("deviceChoices").size(), 1u) << k.dump();
    EXPECT_EQ(k.at("deviceChoices")[0].at("kernel"), "gemm_q4_k_col_cm");
    shown = true;
  }
  EXPECT_TRUE(shown) << j.at("graph").at("kernels").dump();
}

// --ops prints the op vocabulary (rdrr/SPEC.md 9.2's table); PACK is required otherwise, refused with it.
TEST(RdrrInspect, OpsPrintsTheOpTable) {
  TempDir tmp;
  const ToolRun ops = run_inspect({"--ops"}, tmp.path());
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  EXPECT_EQ(ops.out.rfind("| op | phase | weight | kernels | reads | writes | semantics |\n", 0), 0u) << ops.out;
  EXPECT_NE(ops.out.find("| `kv_append_rope` | prefill / decode |"), std::string::npos) << ops.out;
  const ToolRun none = run_inspect({}, tmp.path());
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("PACK is required"), std::string::npos) << none.err;
  const ToolRun both = run_inspect({"--ops", "some-pack"}, tmp.path());
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

TEST(RdrrInspect, KernelPinStatuses) {
  Manifest m;
  ExecutionGraph g;
  Result<std::string> rms = kernels::pinned_kernel_digest("rms_norm");
  ASSERT_TRUE(rms.ok()) << rms.status().to_string();
  const auto spec = [](std::string file, std::string digest) {
    KernelSpec k;
    k.file = std::move(file);
    k.entry = "main";
    k.digest = std::move(digest);
    return k;
  };
  const auto step = [](std::string op, std::string key, std::optional<std::string> weight) {
    ExecStep s;
    s.op = std::move(op);
    s.kernel_key = std::move(key);
    s.weight_ref = std::move(weight);
    return s;
  };
  g.kernels["rms_norm"] = spec("rmsnorm.comp", *rms);
  const std::string zeros = std::string("sha256:").append(64, '0');
  g.kernels["add"] = spec("add.comp", zeros);
  g.kernels["no_such_kernel"] = spec("x.comp", *rms);
  g.pre_layer.push_back(step("embed", "no_such_kernel", "model.embed.weight"));
  LayerGroup group;
  group.layers = {0, 2};
  group.steps = {step("add", "add", std::nullopt)};
  g.prefill.push_back(group);
  m.inference.execution = g;
  const std::vector<KernelPinStatus> s = kernel_pin_statuses(m);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].key, "add");
  EXPECT_EQ(s[0].status, kPinStale);
  EXPECT_EQ(s[1].key, "no_such_kernel");
  EXPECT_EQ(s[1].status, kPinUnknown);
  EXPECT_EQ(s[2].status, kPinOk);
  const std::string text = inspect_text(m);
  EXPECT_NE(text.find(std::string("add.comp:main  ").append(zeros).append("  stale")), std::string::npos) << text;
  EXPECT_NE(text.find("rdrr-digests repin"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown kernel"), std::string::npos) << text;
  EXPECT_NE(text.find("group layers 0,2:"), std::string::npos) << text;
  EXPECT_NE(text.find("embed  [no_such_kernel]  model.embed.weight"), std::string::npos) << text;
}

}  // namespace
}  // namespace rdrr::tools
