// rdrr-convert end to end on the three fixture models (HF folder and llama.cpp Q4_K_M GGUF): every preset
// and every Q4_K layout gives a pack that validates with hashes and decodes close to the source; output is
// byte-identical at any thread count; --dry-run writes nothing; --json parses; GGUF q/k rows line up with
// the HF rows; row_wise Q4_K/Q6_K blocks of a GGUF pass through bit-exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/source.h"
#include "graph/graph_check.h"
#include "graph/graph_ops.h"
#include "rdrr/manifest_json.h"
#include "rdrr/sha256.h"
#include "rdrr/validate.h"
#include "tests/convert_test_util.h"

namespace rdrr::convert_test {
namespace {

using quant::DType;

struct Case {
  std::string model;
  bool gguf;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.model + (info.param.gguf ? "_gguf" : "_hf");
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

fs::path source_of(const Case& c) { return c.gguf ? gguf_file(c.model) : hf_dir(c.model); }

// Largest allowed RMSE relative to the source RMS, per output dtype.
double tolerance(DType d) {
  switch (d) {
    case DType::kF32: return 0.0;
    case DType::kF16: return 5e-4;   // measured on the fixtures: <= 2.1e-4
    case DType::kBF16: return 4e-3;  // 1.7e-3
    case DType::kQ8_0: return 0.01;  // 5.7e-3
    case DType::kQ6_K: return 0.03;  // 1.7e-2
    case DType::kQ4_K: return 0.11;  // 7.7e-2
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ5_K: return 0.0;  // pass-through: the source's own blocks
  }
  return 0.0;
}

Manifest read_pack(const fs::path& dir) {
  Result<Manifest> m = read_manifest_file(dir);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? *m : Manifest{};
}

// Every tensor of the pack, decoded, against the source's values (read through convert/source.h).
// `options`: the conversion's (its fusion decides the names).
void expect_close_to_source(const fs::path& pack, const Manifest& m, const fs::path& src,
                            const convert::ConvertOptions& options, const std::string& what) {
  Result<convert::SourceModel> model = convert::SourceModel::open(src, convert::source_options(options).value());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  std::map<std::string, const convert::SourceTensor*> by_name;
  for (const convert::SourceTensor& t : model->tensors()) by_name[t.name] = &t;
  Result<ShardReader> reader = ShardReader::open(pack, m.shards);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  ASSERT_EQ(m.tensors.size(), by_name.size()) << what;
  for (const TensorEntry& e : m.tensors) {
    ASSERT_EQ(by_name.count(e.name), 1u) << what << ": " << e.name;
    const convert::SourceTensor& t = *by_name[e.name];
    std::vector<float> want(static_cast<size_t>(t.rows() * t.cols()));
    std::vector<float> scratch;
    ASSERT_TRUE(convert::read_rows(t, 0, t.rows(), want, scratch).ok());
    const std::vector<float> got = decode_tensor(*reader, e);
    ASSERT_EQ(got.size(), want.size()) << what << ": " << e.name;
    double err = 0;
    double ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      ref += double(want[i]) * want[i];
    }
    const double rel = std::sqrt(err / std::max(ref, 1e-30));
    double tol = tolerance(e.dtype);
    // A GGUF's own blocks copied into a row_wise tensor of the same type decode exactly.
    if (e.layout == quant::Layout::kRowWise && t.source_dtype() == quant::dtype_name(e.dtype)) tol = 0.0;
    EXPECT_LE(rel, tol) << what << ": " << e.name << " " << quant::dtype_name(e.dtype);
  }
}

class ConvertMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertMatrix, EveryPresetAndLayoutValidatesAndDecodesCloseToTheSource) {
  const Case c = GetParam();
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"f32", "column_wise"}, {"f16", "column_wise"}, {"bf16", "column_wise"}, {"q8_0", "column_wise"},
      {"q4_k", "flat"},       {"q4_k", "row_wise"},   {"q4_k", "column_wise"}, {"q4_k_m", "flat"},
      {"q4_k_m", "row_wise"}, {"q4_k_m", "column_wise"}};
  for (const auto& [preset, layout] : configs) {
    const std::string what = c.model + (c.gguf ? " gguf " : " hf ") + preset + " " + layout;
    const fs::path out = tmp / (preset + "-" + layout);
    // No goldens and no calibration here (tests/verify_e2e_test.cpp and ConvertCli.CalibrationFlag cover them):
    // each would add seconds of CPU per conversion.
    const RunResult r = run_convert({source_of(c).string(), out.string(), "--quantize", preset, "--q4k-layout", layout,
                                     "--no-sync", "--quiet", "--threads", "2", "--golden-prompts", "none",
                                     "--calibration", "none"});
    if (preset == "bf16") {
      // No kernel of this build reads BF16 weights: the execution graph cannot be planned, so the
      // conversion fails (exit 9, kUnsupported) before anything is written.
      EXPECT_EQ(r.exit_code, 9) << what << "\n" << r.err;
      EXPECT_NE(r.err.find("execution graph"), std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(out)) << what;
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.err;
    const Manifest m = read_pack(out);
    ASSERT_TRUE(m.inference.execution.has_value()) << what;
    const Status graph_ok = graph::check_execution_graph(m);
    EXPECT_TRUE(graph_ok.ok()) << what << ": " << graph_ok.to_string();
    ValidateOptions vo;
    vo.check_sha256 = true;
    const Status v = validate_pack(m, out, vo);
    ASSERT_TRUE(v.ok()) << what << ": " << v.to_string();
    const bool fused = preset.rfind("q", 0) == 0;
    size_t q4k = 0;
    for (const TensorEntry& e : m.tensors) {
      const bool separate = e.name.find(".mlp.gate_proj.") != std::string::npos ||
                            e.name.find(".mlp.up_proj.") != std::string::npos;
      EXPECT_FALSE(fused ? separate : e.name.find("gate_up_proj") != std::string::npos) << what << ": " << e.name;
      if (e.dtype == DType::kQ4_K) {
        EXPECT_EQ(quant::layout_name(*e.layout), layout) << what << ": " << e.name;
        ++q4k;
      }
    }
    // A GGUF's Q4_K tensors keep their type under every block preset (q8_0 included; convert/plan.h).
    EXPECT_EQ(q4k > 0, preset == "q4_k" || preset == "q4_k_m" || (c.gguf && preset == "q8_0")) << what;
    EXPECT_EQ(m.quantization, preset == "q4_k_m" ? "Q4_K_M" : preset == "q4_k" ? "Q4_K" : m.quantization);
    // Provenance: every source file with its real hash.
    for (const FileRecord& f : m.metadata.source.files) {
      const fs::path p = (c.gguf ? source_of(c).parent_path() : source_of(c)) / f.name;
      EXPECT_EQ(sha256_file(p).value(), f.sha256_hex) << what << ": " << f.name;
      EXPECT_EQ(fs::file_size(p), f.size_bytes) << what << ": " << f.name;
    }
    convert::ConvertOptions co;
    co.preset = *convert::parse_preset(preset);
    expect_close_to_source(out, m, source_of(c), co, what);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConvertMatrix,
                         ::testing::Values(Case{"tiny-llama", false}, Case{"tiny-llama", true},
                                           Case{"tiny-qwen2", false}, Case{"tiny-qwen2", true},
                                           Case{"tiny-gemma3", false}, Case{"tiny-gemma3", true}),
                         case_name);

// The kernels of the matmul steps of a layer phase whose weight (at any layer the step runs for) is `dtype`.
std::vector<std::string> matmul_kernels(const Manifest& m, const std::vector<LayerEntry>& phase, DType dtype) {
  std::vector<std::string> out;
  auto visit = [&](const ExecStep& s, const std::vector<uint32_t>& layers) {
    const graph::OpInfo* op = graph::find_op(s.op);
    if (op == nullptr || op->weight != graph::WeightKind::kMatmul || !s.weight_ref) return;
    for (uint32_t layer : layers) {
      std::string name = *s.weight_ref;
      name.replace(name.find("{L}"), 3, std::to_string(layer));
      const TensorEntry* t = find_tensor(m, name);
      if (t != nullptr && t->dtype == dtype) out.push_back(s.kernel_key);
    }
  };
  std::vector<uint32_t> all(m.architecture.num_layers);
  for (uint32_t l = 0; l < m.architecture.num_layers; ++l) all[l] = l;
  for (const LayerEntry& e : phase) {
    if (const auto* s = std::get_if<ExecStep>(&e)) {
      visit(*s, all);
      continue;
    }
    for (const ExecStep& s : std::get<LayerGroup>(e).steps) visit(s, std::get<LayerGroup>(e).layers);
  }
  return out;
}

TEST(ConvertGraph, Q4KMColumnWiseRunsColumnKernels) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  const RunResult r = run_convert({hf_dir("tiny-llama").string(), out.string(), "--quantize", "q4_k_m",
                                   "--q4k-layout", "column_wise", "--no-sync", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Manifest m = read_pack(out);
  ASSERT_TRUE(m.inference.execution.has_value());
  const Status s = graph::check_execution_graph(m);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(m.metadata.converter.flags.at("kv-dtype"), "f16");
  const ExecutionGraph& g = *m.inference.execution;
  const std::vector<std::string> decode = matmul_kernels(m, g.decode, DType::kQ4_K);
  const std::vector<std::string> prefill = matmul_kernels(m, g.prefill, DType::kQ4_K);
  ASSERT_FALSE(decode.empty());
  ASSERT_FALSE(prefill.empty());
  for (const std::string& k : decode) EXPECT_EQ(k, "gemv_q4_k_col_split");
  for (const std::string& k : prefill) EXPECT_EQ(k, "gemm_q4_k_col");
  EXPECT_EQ(g.kernels.count("gemv_reduce"), 1u);  // the column split's companion is pinned too
  EXPECT_EQ(g.kernels.at("attention_f16").precision.at("kvDtype"), "f16");
}

TEST(ConvertGraph, KvDtypeFlag) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  const RunResult r = run_convert({hf_dir("tiny-llama").string(), out.string(), "--quantize", "q8_0", "--kv-dtype",
                                   "f32", "--no-sync", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Manifest m = read_pack(out);
  EXPECT_EQ(m.metadata.converter.flags.at("kv-dtype"), "f32");
  ASSERT_TRUE(m.inference.execution.has_value());
  EXPECT_EQ(m.inference.execution->kernels.count("kv_append_rope_f32"), 1u);
  EXPECT_EQ(m.inference.execution->kernels.count("kv_append_rope_f16"), 0u);
  EXPECT_TRUE(graph::check_execution_graph(m).ok());
  const RunResult bad = run_convert({hf_dir("tiny-llama").string(), (tmp / "bad").string(), "--kv-dtype", "q8_0",
                                     "--no-sync", "--quiet"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--kv-dtype"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(tmp / "bad"));
}

TEST(ConvertGraph, UnplannableGraphFailsBeforeWriting) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  // No kernel reads BF16: an override that stores one projection as BF16 leaves it without a GEMV.
  const RunResult r = run_convert({hf_dir("tiny-llama").string(), out.string(), "--quantize", "q8_0",
                                   "--tensor-type", ".*\\.layers\\.1\\.self_attn\\.o_proj\\.weight=bf16",
                                   "--no-sync", "--quiet"});
  EXPECT_EQ(r.exit_code, 9) << r.err;
  EXPECT_NE(r.err.find("execution graph"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("model.layers.1.self_attn.o_proj.weight"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  const RunResult dry = run_convert({hf_dir("tiny-llama").string(), "--dry-run", "--quantize", "bf16", "--quiet"});
  EXPECT_EQ(dry.exit_code, 9) << dry.err;
}

void expect_same_files(const fs::path& a, const fs::path& b) {
  std::vector<std::string> na;
  std::vector<std::string> nb;
  // Recursive: the goldens live in golden/ (their logits come from the TBB-parallel reference, same bytes too).
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (!e.is_directory()) na.push_back(fs::relative(e.path(), a).string());
  }
  for (const auto& e : fs::recursive_directory_iterator(b)) {
    if (!e.is_directory()) nb.push_back(fs::relative(e.path(), b).string());
  }
  std::sort(na.begin(), na.end());
  std::sort(nb.begin(), nb.end());
  ASSERT_EQ(na, nb);
  for (const std::string& n : na) EXPECT_TRUE(read_text(a / n) == read_text(b / n)) << n << " differs";
}

TEST(ConvertDeterminism, ByteIdenticalForOneAndTwoThreads) {
  TempDir tmp;
  for (const auto& [src, layout] : std::vector<std::pair<fs::path, std::string>>{
           {hf_dir("tiny-llama"), "column_wise"}, {hf_dir("tiny-gemma3"), "flat"}, {gguf_file("tiny-qwen2"), "column_wise"}}) {
    const fs::path a = tmp / "t1";
    const fs::path b = tmp / "t2";
    for (const auto& [dir, threads] : {std::pair{a, "1"}, std::pair{b, "2"}}) {
      const RunResult r = run_convert({src.string(), dir.string(), "--q4k-layout", layout, "--threads", threads,
                                       "--no-sync", "--quiet", "--force"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    expect_same_files(a, b);
  }
}

// --calibration: auto (the default) calibrates a source with a tokenizer, none rounds plainly, anything else is a
// usage error (exit 2) written before any output.
TEST(ConvertCli, CalibrationFlag) {
  TempDir tmp;
  for (const std::string mode : {"auto", "none"}) {
    const fs::path out = tmp / mode;
    const RunResult r = run_convert({hf_dir("tiny-llama").string(), out.string(), "--calibration", mode, "--json",
                                     "--no-sync", "--golden-prompts", "none"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const std::string cal = j["calibration"];
    const Manifest m = read_pack(out);
    EXPECT_EQ(m.metadata.converter.flags.at("calibration"), cal);
    if (mode == "auto") {
      EXPECT_NE(cal.find("text tokens + 128 samples x 8 tokens"), std::string::npos) << cal;
      EXPECT_NE(r.err.find("Q4_K calibrated on"), std::string::npos) << r.err;
    } else {
      EXPECT_EQ(cal, "none");
    }
  }
  const fs::path bad = tmp / "bad";
  const RunResult r = run_convert({hf_dir("tiny-llama").string(), bad.string(), "--calibration", "maybe"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--calibration maybe: expected auto, on or none"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(bad));
}

TEST(ConvertCli, DryRunWritesNothingAndPrintsThePlan) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  const RunResult r = run_convert({hf_dir("tiny-qwen2").string(), out.string(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(tmp.path()));
  EXPECT_NE(r.out.find("model.layers.1.mlp.gate_up_proj.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Q6_K"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("column_wise"), std::string::npos) << r.out;
}

TEST(ConvertCli, JsonReportParsesAndDescribesEveryTensor) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  const RunResult r = run_convert({gguf_file("tiny-llama").string(), out.string(), "--q4k-layout", "row_wise",
                                   "--json", "--no-sync", "--rmse-every", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);  // throws (fails the test) on invalid JSON
  const Manifest m = read_pack(out);
  ASSERT_EQ(j["tensors"].size(), m.tensors.size());
  EXPECT_EQ(j["quantization"], "Q4_K_M");
  EXPECT_EQ(j["source"]["format"], "gguf");
  EXPECT_EQ(j["shards"].size(), m.shards.size());
  for (const auto& t : j["tensors"]) {
    const std::string dtype = t["dtype"];
    if (t["sourceDtype"] == dtype && dtype != "F32") {
      EXPECT_TRUE(t["passthrough"].get<bool>()) << t.dump();  // GGUF Q4_K/Q6_K blocks copied as they are
      EXPECT_EQ(t["rmse"].get<double>(), 0.0) << t.dump();
    }
    EXPECT_GT(t["sampledValues"].get<uint64_t>(), 0u) << t.dump();
    EXPECT_TRUE(t.contains("seconds"));
  }
  EXPECT_GT(j["totals"]["bytesOut"].get<uint64_t>(), 0u);
  EXPECT_NE(r.err.find("converted 17 tensors"), std::string::npos) << r.err;  // q/k/v fused in one layer  // summary on stderr with --json
}

// Pearson correlation of two rows.
double correlation(const float* a, const float* b, size_t n) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < n; ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= double(n);
  mb /= double(n);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

// The GGUF's Q4_K q/k rows are stored permuted; once converted (undone) every row lines up with the HF row.
TEST(ConvertGguf, LlamaQkRowsLineUpWithHf) {
  TempDir tmp;
  const fs::path hf = tmp / "hf";
  const fs::path gg = tmp / "gguf";
  ASSERT_EQ(run_convert({hf_dir("tiny-llama").string(), hf.string(), "--quantize", "f32", "--no-sync", "--quiet"}).exit_code, 0);
  ASSERT_EQ(run_convert({gguf_file("tiny-llama").string(), gg.string(), "--quantize", "f32", "--no-sync", "--quiet"}).exit_code, 0);
  const Manifest mh = read_pack(hf);
  const Manifest mg = read_pack(gg);
  const ShardReader rh = ShardReader::open(hf, mh.shards).value();
  const ShardReader rg = ShardReader::open(gg, mg.shards).value();
  size_t checked = 0;
  for (const TensorEntry& e : mh.tensors) {
    if (e.shape.size() != 2) continue;
    const TensorEntry* g = find_tensor(mg, e.name);
    ASSERT_NE(g, nullptr) << e.name;
    ASSERT_EQ(g->shape, e.shape);
    const std::vector<float> a = decode_tensor(rh, e);
    const std::vector<float> b = decode_tensor(rg, *g);
    const size_t rows = e.shape[0], cols = e.shape[1];
    double worst = 1.0;
    double permuted_mean = 0;
    for (size_t r = 0; r < rows; ++r) {
      worst = std::min(worst, correlation(&a[r * cols], &b[r * cols], cols));
      // What the rows would look like with the GGUF order left in place: unrelated.
      const size_t heads = e.name.find("q_proj") != std::string::npos ? 8 : 2;
      const auto s = static_cast<size_t>(convert::permuted_source_row(int64_t(r), int64_t(rows), int64_t(heads)));
      permuted_mean += std::fabs(correlation(&a[r * cols], &b[s * cols], cols)) / double(rows);
    }
    EXPECT_GT(worst, 0.97) << e.name;
    if (e.name.find("q_proj") != std::string::npos || e.name.find("k_proj") != std::string::npos) {
      EXPECT_LT(permuted_mean, 0.6) << e.name;  // the check would catch a missing un-permutation
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4u);
}

// row_wise keeps a GGUF's Q4_K/Q6_K blocks byte for byte (q/k rows moved as whole rows of blocks).
TEST(ConvertGguf, RowWiseBlocksPassThroughBitExactly) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  ASSERT_EQ(run_convert({gguf_file("tiny-llama").string(), out.string(), "--q4k-layout", "row_wise", "--no-sync", "--quiet"})
                .exit_code,
            0);
  const Manifest m = read_pack(out);
  const ShardReader reader = ShardReader::open(out, m.shards).value();
  Result<convert::SourceModel> src =
      convert::SourceModel::open(gguf_file("tiny-llama"), convert::source_options({}).value());
  ASSERT_TRUE(src.ok());
  size_t compared = 0;
  for (const convert::SourceTensor& t : src->tensors()) {
    const TensorEntry* e = find_tensor(m, t.name);
    ASSERT_NE(e, nullptr);
    if (!quant::is_block_quantized(e->dtype)) continue;
    const TensorBytes tb = reader.tensor_bytes(e->name, e->placement).value();
    std::vector<std::byte> want(tb.bytes().size());
    size_t off = 0;
    for (const convert::SourcePart& p : t.parts) {
      const size_t n = p.stored.bytes.size();
      ASSERT_TRUE(convert::copy_raw_rows(p, 0, p.stored.rows, std::span<std::byte>(want).subspan(off, n)).ok());
      off += n;
    }
    ASSERT_EQ(off, want.size()) << t.name;
    EXPECT_TRUE(std::equal(want.begin(), want.end(), tb.bytes().begin())) << t.name;
    if (t.parts[0].stored.permute_heads == 0 && t.parts.size() == 1) {  // and literally the file's bytes
      EXPECT_TRUE(std::equal(t.parts[0].stored.bytes.begin(), t.parts[0].stored.bytes.end(), tb.bytes().begin()));
    }
    ++compared;
  }
  EXPECT_EQ(compared, 12u);  // q/k/v of layer 0 fused (its three parts copied as they are)
}

// q4_k_m: by default q/k/v fuse only where the preset types them alike (layer 1, a use_more_bits layer, gives v
// Q6_K, so it stays separate); --fuse-qkv fuses every layer, the fused tensor taking v_proj's rule; --no-fuse-qkv
// none. Each pack verifies against its source.
TEST(ConvertCli, FuseQkvDefaultExplicitAndOff) {
  TempDir tmp;
  struct Want {
    const char* flag;
    bool layer0, layer1;
  };
  for (const Want& w : {Want{"", true, false}, Want{"--fuse-qkv", true, true}, Want{"--no-fuse-qkv", false, false}}) {
    const fs::path out = tmp / (std::string("pack") + w.flag);
    std::vector<std::string> args = {hf_dir("tiny-llama").string(), out.string(), "--no-sync", "--quiet",
                                     "--golden-prompts", "none"};
    if (*w.flag) args.push_back(w.flag);
    const RunResult r = run_convert(args);
    ASSERT_EQ(r.exit_code, 0) << w.flag << ": " << r.err;
    const Manifest m = read_pack(out);
    EXPECT_EQ(find_tensor(m, "model.layers.0.self_attn.qkv_proj.weight") != nullptr, w.layer0) << w.flag;
    EXPECT_EQ(find_tensor(m, "model.layers.1.self_attn.qkv_proj.weight") != nullptr, w.layer1) << w.flag;
    EXPECT_EQ(find_tensor(m, "model.layers.1.self_attn.v_proj.weight") == nullptr, w.layer1) << w.flag;
    if (w.layer1) {
      EXPECT_EQ(find_tensor(m, "model.layers.1.self_attn.qkv_proj.weight")->dtype, DType::kQ6_K);
    }
    convert::ConvertOptions co;
    if (*w.flag) co.fuse_qkv = std::string(w.flag) == "--fuse-qkv";
    expect_close_to_source(out, m, hf_dir("tiny-llama"), co, w.flag);
  }
}

TEST(ConvertCli, OverridesSmallShardsAndNoFusion) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  // 64 KiB shards: the 1024x256 Q8_0 head (278528 bytes) spans five shards.
  const RunResult r = run_convert({hf_dir("tiny-llama").string(), out.string(), "--tensor-type", "lm_head\\.weight=q8_0",
                                   "--tensor-type", ".*\\.v_proj\\.weight=f16", "--no-fuse-gate-up", "--shard-size",
                                   "65536", "--no-sync", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Manifest m = read_pack(out);
  ValidateOptions vo;
  vo.check_sha256 = true;
  ASSERT_TRUE(validate_pack(m, out, vo).ok());
  EXPECT_GT(m.shards.size(), 10u);
  for (const ShardInfo& s : m.shards) EXPECT_LE(s.size_bytes, 65536u);
  const TensorEntry* head = find_tensor(m, "lm_head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->dtype, DType::kQ8_0);
  EXPECT_EQ(head->placement.spans.size(), 5u);
  EXPECT_EQ(find_tensor(m, "model.layers.1.self_attn.v_proj.weight")->dtype, DType::kF16);
  EXPECT_NE(find_tensor(m, "model.layers.1.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(find_tensor(m, "model.layers.1.mlp.gate_up_proj.weight"), nullptr);
  EXPECT_EQ(m.metadata.converter.flags.at("fuse-gate-up"), "false");
  // --fuse-qkv is on (q4_k_m), but the v_proj override keeps every layer's q/k/v separate.
  EXPECT_EQ(m.metadata.converter.flags.at("fuse-qkv"), "true");
  EXPECT_EQ(find_tensor(m, "model.layers.1.self_attn.qkv_proj.weight"), nullptr);
  EXPECT_EQ(find_tensor(m, "model.layers.1.self_attn.q_proj.weight")->dtype, DType::kQ4_K);
  EXPECT_EQ(m.metadata.converter.flags.at("tensor-type.0"), "lm_head\\.weight=q8_0");
  convert::ConvertOptions co;
  co.fuse_gate_up = false;
  co.tensor_types = {"lm_head\\.weight=q8_0", ".*\\.v_proj\\.weight=f16"};
  expect_close_to_source(out, m, hf_dir("tiny-llama"), co, "overrides");
}

TEST(ConvertCli, ExistingOutputNeedsForce) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  const std::vector<std::string> args = {hf_dir("tiny-llama").string(), out.string(), "--quantize", "f16", "--no-sync", "--quiet"};
  ASSERT_EQ(run_convert(args).exit_code, 0);
  const RunResult again = run_convert(args);
  EXPECT_EQ(again.exit_code, 7) << again.err;
  EXPECT_NE(again.err.find("exists"), std::string::npos) << again.err;
  std::vector<std::string> forced = args;
  forced.push_back("--force");
  const RunResult r = run_convert(forced);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "manifest.json"));
  for (const auto& e : fs::directory_iterator(tmp.path())) EXPECT_EQ(e.path(), out) << "leftover " << e.path();
}

}  // namespace
}  // namespace rdrr::convert_test
