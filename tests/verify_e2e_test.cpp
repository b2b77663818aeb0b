// rdrr-verify end to end: convert the fixture models (goldens in the pack), then every gate passes, on the
// CPU reference of the pack (--skip-gpu) and on Vulkan (lavapipe in CI) when a device exists, also against
// the HF transformers goldens (--golden) and, for q4_k_m, at least as well as llama.cpp's Q4_K_M. Negative
// cases: each defect fails its gate with its exit code and names the culprit.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "rdrr/manifest_json.h"
#include "rdrr/sha256.h"
#include "rdrr/shard_reader.h"
#include "rdrr/test_temp_dir.h"
#include "runtime/device.h"
#include "verify/gates.h"
#include "verify/calibration.h"
#include "verify/golden_gen.h"

namespace rdrr::verify {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = RDRR_FIXTURES_DIR;

// Scratch folder of this process, removed at exit (by the creating process only).
const fs::path& scratch() {
  static const test::TempDir dir("verify_e2e");
  return dir.path();
}

std::unique_ptr<runtime::Device>& device_slot();

// Releases the shared device when the binary ends.
class DeviceRelease : public ::testing::Environment {
 public:
  void TearDown() override { device_slot().reset(); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new DeviceRelease);

struct Case {
  std::string model;
  convert::Preset preset;
  quant::Layout layout = quant::Layout::kColumnWise;
  std::vector<std::string> tensor_types;
  std::string tag;  // pack folder name suffix
  bool vulkan = true;  // also verify on Vulkan (not only the CPU gates)
};

Case make_case(std::string model, convert::Preset preset, std::vector<std::string> tensor_types = {},
               std::string tag = "", quant::Layout layout = quant::Layout::kColumnWise) {
  return Case{std::move(model), preset, layout, std::move(tensor_types), std::move(tag), true};
}

std::string case_name(const Case& c) {
  return c.model + "-" + std::string(convert::preset_name(c.preset)) + "-" + std::string(quant::layout_name(c.layout)) +
         c.tag;
}

void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

// Smaller than the defaults (4 x 16 tokens, 8 steps) to keep the tests fast.
const GoldenOptions kTestGoldens{.prompts = 3, .tokens_per_prompt = 12, .greedy_steps = 6};

// Converts once per case (cached for the whole binary).
const fs::path& converted(const Case& c) {
  static std::map<std::string, fs::path> cache;
  const std::string name = case_name(c);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  convert::ConvertOptions o;
  o.src = kFixtures / c.model / "hf";
  o.out = scratch() / name;
  o.preset = c.preset;
  o.q4k_layout = c.layout;
  o.tensor_types = c.tensor_types;
  o.sync_to_disk = false;
  o.threads = 2;
  const GoldenOptions g = kTestGoldens;
  o.golden_writer = make_golden_writer(g);
  o.extra_flags = golden_flags(g);
  o.calibrator = make_calibrator();  // as rdrr-convert does (--calibration auto: on for models this small)
  Result<convert::ConvertReport> r = convert::convert_model(o);
  EXPECT_TRUE(r.ok()) << name << ": " << r.status().to_string();
  return cache.emplace(name, o.out).first->second;
}

// One device for the whole binary (its pipeline cache makes the Vulkan gates fast); null without Vulkan.
std::unique_ptr<runtime::Device>& device_slot() {
  static std::unique_ptr<runtime::Device> device;
  return device;
}
runtime::Device* shared_device() {
  static bool tried = false;
  if (!tried) {
    tried = true;
    Result<std::unique_ptr<runtime::Device>> d = runtime::Device::create(runtime::device_options_from_env());
    if (d.ok()) device_slot() = std::move(*d);
  }
  return device_slot().get();
}
bool have_device() { return shared_device() != nullptr; }

VerifyReport verify(const fs::path& pack, bool skip_gpu, std::optional<fs::path> golden = std::nullopt) {
  VerifyOptions o;
  o.pack = pack;
  o.skip_gpu = skip_gpu;
  o.external_golden = std::move(golden);
  if (!skip_gpu) o.device = shared_device();
  VerifyReport r = run_verify(o);
  for (const GateResult& g : r.gates) std::printf("  %s", format_gate_line(g).c_str());
  return r;
}

const GateResult& gate(const VerifyReport& r, int number) {
  for (const GateResult& g : r.gates) {
    if (g.number == number) return g;
  }
  static const GateResult none;
  ADD_FAILURE() << "no gate " << number;
  return none;
}

void expect_all_pass(const VerifyReport& r, bool skip_gpu) {
  EXPECT_EQ(r.exit_code, 0);
  for (const GateResult& g : r.gates) {
    if (skip_gpu && g.number == 4) {
      EXPECT_EQ(g.status, GateStatus::kSkip);
    } else {
      EXPECT_EQ(g.status, GateStatus::kPass) << "gate " << g.number << " " << g.name << ": " << g.detail;
    }
  }
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

class VerifyPasses : public ::testing::TestWithParam<Case> {};

TEST_P(VerifyPasses, AllGatesCpuAndVulkan) {
  const Case& c = GetParam();
  const fs::path& pack = converted(c);
  const fs::path hf_golden = kFixtures / c.model / "golden" / "hf-f32.json";
  const VerifyReport cpu = verify(pack, true, hf_golden);
  ASSERT_EQ(cpu.gates.size(), 7u);
  expect_all_pass(cpu, true);
  EXPECT_EQ(cpu.backend, "cpu-reference");
  // The pack golden was made by the same reference from the same weights: exact up to the golden's storage.
  EXPECT_LT(gate(cpu, 5).metrics.value("nmse", 1.0), 1e-12);
  if (!c.vulkan) return;
  if (!have_device()) GTEST_SKIP() << "no Vulkan device: CPU gates only";
  const VerifyReport gpu = verify(pack, false, hf_golden);
  ASSERT_EQ(gpu.gates.size(), 7u);
  expect_all_pass(gpu, false);
}

std::string param_name(const ::testing::TestParamInfo<Case>& i) {
  std::string n = case_name(i.param);
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

// Every fixture x every preset that has kernels (bf16 has none and is refused by the converter) x every
// Q4_K layout, all on the CPU and on Vulkan (lavapipe in CI).
std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const char* model : {"tiny-llama", "tiny-qwen2", "tiny-gemma3"}) {
    for (convert::Preset p : {convert::Preset::kF32, convert::Preset::kF16, convert::Preset::kQ8_0}) {
      out.push_back(make_case(model, p));
    }
    for (convert::Preset p : {convert::Preset::kQ4_K, convert::Preset::kQ4_K_M}) {
      out.push_back(make_case(model, p));  // column_wise
      out.push_back(make_case(model, p, {}, "", quant::Layout::kRowWise));
    }
    out.push_back(make_case(model, convert::Preset::kQ4_K_M, {}, "", quant::Layout::kFlat));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VerifyPasses, ::testing::ValuesIn(all_cases()), param_name);

// The issue's acceptance bound: on the HF prompts the q4_k_m pack (rdrr-convert's defaults: column_wise,
// calibrated) does at least as well as llama.cpp's Q4_K_M GGUF (fixtures/NAME/golden/llamacpp-q4_k_m.json), as
// rdrr-verify's external-golden gate measures it. Without calibration (plain rounding) tiny-qwen2's top-1 (0.886)
// and tiny-gemma3's KLD (0.0240) missed it; verify/reference_pack_test.cpp has every layout.
class AnchorQ4KM : public ::testing::TestWithParam<Case> {};

TEST_P(AnchorQ4KM, AtLeastAsGoodAsLlamaCpp) {
  const Case& c = GetParam();
  const VerifyReport r = verify(converted(c), true, kFixtures / c.model / "golden" / "hf-f32.json");
  const nlohmann::json anchor = read_json(kFixtures / c.model / "golden" / "llamacpp-q4_k_m.json").at("summary_vs_hf_f32");
  const GateResult& ext = gate(r, 7);
  ASSERT_EQ(ext.status, GateStatus::kPass) << ext.detail;
  const double kld = ext.metrics.value("kld_mean", 1.0), top1 = ext.metrics.value("top1_agreement", 0.0);
  std::printf("%s: vs HF KLD %.4g (llama.cpp %.4g), top-1 %.4f (llama.cpp %.4f)\n", case_name(c).c_str(), kld,
              anchor.at("kld_mean_all_positions").get<double>(), top1,
              anchor.at("top1_agreement_all_positions").get<double>());
  EXPECT_LE(kld, anchor.at("kld_mean_all_positions").get<double>());
  // Top-1 at most one position below the anchor's, as verify/reference_pack_test.cpp says why: ~20 positions
  // per fixture have a top-2 margin under 0.25 logits, and GPTQ's rounding decisions move with the last bits
  // of the BLAS (tiny-qwen2 agrees on 160 or 161 of 176 positions against llama.cpp's 161, at a KLD 22% lower).
  const double one_position = 1.0 / ext.metrics.at("positions").get<double>();
  EXPECT_GE(top1, anchor.at("top1_agreement_all_positions").get<double>() - one_position - 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AnchorQ4KM,
                         ::testing::Values(make_case("tiny-llama", convert::Preset::kQ4_K_M),
                                           make_case("tiny-qwen2", convert::Preset::kQ4_K_M),
                                           make_case("tiny-gemma3", convert::Preset::kQ4_K_M)),
                         param_name);

// ---- negative cases: a fresh copy of the tiny-llama q4_k_m pack each ----

fs::path copy_of_good_pack(const std::string& name) {
  const fs::path& good = converted(make_case("tiny-llama", convert::Preset::kQ4_K_M));
  const fs::path dst = scratch() / ("neg-" + name);
  fs::remove_all(dst);
  fs::copy(good, dst, fs::copy_options::recursive);
  return dst;
}

Manifest manifest_of(const fs::path& pack) {
  Result<Manifest> m = read_manifest_file(pack);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return *m;
}

void write_manifest(const fs::path& pack, const Manifest& m) {
  std::ofstream(pack / "manifest.json", std::ios::trunc) << serialize_manifest(m);
}

// Reads, edits and writes back `size` bytes at `offset` of a file.
void edit_bytes(const fs::path& file, uint64_t offset, size_t size, const std::function<void(std::vector<char>&)>& f) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  std::vector<char> b(size);
  io.seekg(static_cast<std::streamoff>(offset));
  io.read(b.data(), static_cast<std::streamsize>(size));
  f(b);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(b.data(), static_cast<std::streamsize>(size));
}

const TensorEntry& tensor(const Manifest& m, const std::string& name) {
  const TensorEntry* t = find_tensor(m, name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

TEST(VerifyNegative, FlippedShardByteFailsIntegrityNamingTheTensor) {
  const fs::path pack = copy_of_good_pack("flip");
  const Manifest m = manifest_of(pack);
  const TensorEntry& t = tensor(m, "model.layers.1.self_attn.o_proj.weight");
  const Span& s = t.placement.spans[0];
  edit_bytes(pack / m.shards[s.shard_index].filename, s.offset_bytes + s.size_bytes / 2, 1,
             [](std::vector<char>& b) { b[0] = static_cast<char>(b[0] ^ 0x10); });
  const VerifyReport r = verify(pack, true);
  EXPECT_EQ(r.exit_code, kExitVerifyIntegrity);
  EXPECT_EQ(gate(r, 2).status, GateStatus::kFail);
  EXPECT_NE(gate(r, 2).detail.find("bad tensor(s): model.layers.1.self_attn.o_proj.weight"), std::string::npos)
      << gate(r, 2).detail;
  EXPECT_EQ(gate(r, 5).status, GateStatus::kSkip);
}

TEST(VerifyNegative, TruncatedShardIsAnInvalidPack) {
  const fs::path pack = copy_of_good_pack("truncated");
  const Manifest m = manifest_of(pack);
  fs::resize_file(pack / m.shards[0].filename, m.shards[0].size_bytes - 100);
  const VerifyReport r = verify(pack, true);
  EXPECT_EQ(r.exit_code, kExitVerifyInvalidPack);
  EXPECT_EQ(gate(r, 1).status, GateStatus::kFail);
  EXPECT_NE(gate(r, 1).detail.find(m.shards[0].filename), std::string::npos) << gate(r, 1).detail;
}

TEST(VerifyNegative, MissingGoldenFileIsAnInvalidPack) {
  const fs::path pack = copy_of_good_pack("missing-golden");
  fs::remove(pack / "golden" / "pack.p1.logits.f32.zst");
  const VerifyReport r = verify(pack, true);
  EXPECT_EQ(r.exit_code, kExitVerifyInvalidPack);
  EXPECT_NE(gate(r, 1).detail.find("pack.p1.logits.f32.zst"), std::string::npos) << gate(r, 1).detail;
}

TEST(VerifyNegative, StaleKernelPinFailsTheKernelGate) {
  const fs::path pack = copy_of_good_pack("stale-pin");
  Manifest m = manifest_of(pack);
  ASSERT_TRUE(m.inference.execution.has_value());
  auto& [key, spec] = *m.inference.execution->kernels.begin();
  spec.digest = "sha256:" + std::string(64, 'a');
  write_manifest(pack, m);
  const VerifyReport cpu = verify(pack, true);
  EXPECT_EQ(cpu.exit_code, kExitVerifyKernelPin);
  EXPECT_EQ(gate(cpu, 3).status, GateStatus::kFail);
  EXPECT_NE(gate(cpu, 3).detail.find(key), std::string::npos);
  EXPECT_NE(gate(cpu, 3).detail.find("rdrr-digests repin"), std::string::npos) << gate(cpu, 3).detail;
  EXPECT_EQ(gate(cpu, 6).status, GateStatus::kPass);  // the CPU gates still run
  if (!have_device()) return;
  const VerifyReport gpu = verify(pack, false);
  EXPECT_EQ(gpu.exit_code, kExitVerifyKernelPin);
  EXPECT_EQ(gate(gpu, 4).status, GateStatus::kSkip);
}

// A weight changed consistently (tensor, shard hash and manifest updated): integrity passes, the logits no
// longer match the pack golden.
TEST(VerifyNegative, ConsistentlyCorruptedWeightFailsFidelity) {
  const fs::path pack = copy_of_good_pack("corrupt-weight");
  Manifest m = manifest_of(pack);
  TensorEntry& t = const_cast<TensorEntry&>(tensor(m, "model.norm.weight"));
  ASSERT_EQ(t.dtype, quant::DType::kF32);
  const Span s = t.placement.spans[0];
  const fs::path shard = pack / m.shards[s.shard_index].filename;
  edit_bytes(shard, s.offset_bytes, s.size_bytes, [](std::vector<char>& b) {
    for (size_t i = 0; i + 4 <= b.size(); i += 8) {  // halve every other value
      float v;
      std::memcpy(&v, b.data() + i, 4);
      v *= 0.5f;
      std::memcpy(b.data() + i, &v, 4);
    }
  });
  Result<ShardReader> reader = ShardReader::open(pack, m.shards);
  ASSERT_TRUE(reader.ok());
  t.sha256_hex = *reader->tensor_sha256(t.name, t.placement);
  m.shards[s.shard_index].sha256_hex = *sha256_file(shard);
  write_manifest(pack, m);
  for (bool skip_gpu : {true, false}) {
    if (!skip_gpu && !have_device()) continue;
    const VerifyReport r = verify(pack, skip_gpu);
    EXPECT_EQ(gate(r, 2).status, GateStatus::kPass) << gate(r, 2).detail;
    EXPECT_EQ(gate(r, 5).status, GateStatus::kFail);
    EXPECT_EQ(r.exit_code, kExitVerifyFidelity);
    EXPECT_GT(gate(r, 5).metrics.value("nmse", 0.0), 1e-3);
  }
}

// F16 preset with every MLP weight forced to Q4_K: the pack is faithful to itself (fidelity passes) but far
// from the source for an F16 pack.
TEST(VerifyNegative, CoarseTensorTypeFailsQuality) {
  const fs::path& pack = converted(make_case("tiny-llama", convert::Preset::kF16, {".*mlp.*=q4_k"}, "-mlp-q4k"));
  const VerifyReport r = verify(pack, true);
  EXPECT_EQ(gate(r, 5).status, GateStatus::kPass) << gate(r, 5).detail;
  EXPECT_EQ(gate(r, 6).status, GateStatus::kFail);
  EXPECT_EQ(r.exit_code, kExitVerifyQuality);
  EXPECT_GT(gate(r, 6).metrics.value("kld_mean", 0.0), gate(r, 6).metrics.value("kld_mean_max", 1.0));
}

// A pack without goldens is never reported as verified: gates 5-6 NOT RUN with the reason, exit 27, a summary
// that says so; --structure-only turns it into an explicit structural pass.
TEST(VerifyNegative, NoGoldensIsNotAPass) {
  convert::ConvertOptions o;
  o.src = kFixtures / "tiny-qwen2" / "hf";
  o.out = scratch() / "no-goldens";
  o.preset = convert::Preset::kQ8_0;
  o.sync_to_disk = false;
  o.extra_flags = golden_flags({.prompts = 0});
  ASSERT_TRUE(convert::convert_model(o).ok());
  const Manifest m = manifest_of(o.out);
  EXPECT_TRUE(m.goldens.empty());
  EXPECT_EQ(m.metadata.converter.flags.at("golden-prompts"), "none");
  const VerifyReport r = verify(o.out, true);
  EXPECT_EQ(r.exit_code, kExitVerifyStructureOnly);
  EXPECT_FALSE(r.outputs_checked);
  EXPECT_EQ(gate(r, 5).status, GateStatus::kNotRun);
  EXPECT_EQ(gate(r, 6).status, GateStatus::kNotRun);
  EXPECT_NE(gate(r, 5).detail.find("--golden-prompts none"), std::string::npos) << gate(r, 5).detail;
  EXPECT_EQ(r.backend, "");  // the CPU reference was never opened: there is nothing to compare against
  EXPECT_EQ(format_summary(r).rfind("NOT VERIFIED: structure only", 0), 0u) << format_summary(r);
  VerifyOptions structure;
  structure.pack = o.out;
  structure.skip_gpu = true;
  structure.structure_only = true;
  const VerifyReport s = run_verify(structure);
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_FALSE(s.outputs_checked);
  EXPECT_EQ(format_summary(s).rfind("PASS (structure only, --structure-only", 0), 0u) << format_summary(s);
  // An external golden checks the outputs: then the pack passes on it.
  const VerifyReport e = verify(o.out, true, kFixtures / "tiny-qwen2" / "golden" / "hf-f32.json");
  EXPECT_EQ(e.exit_code, 0) << format_summary(e);
  EXPECT_TRUE(e.outputs_checked);
}

// Goldens skipped at conversion for memory (a limit injected below the streaming reference's working set): the
// converter warns and records why; the pack must not pass verify silently; --make-goldens then adds goldens to
// the same pack and it passes.
TEST(VerifyNegative, GoldensSkippedForMemoryAreNotAPassUntilMade) {
  convert::ConvertOptions o;
  o.src = kFixtures / "tiny-llama" / "hf";
  o.out = scratch() / "skipped-for-memory";
  o.preset = convert::Preset::kQ4_K_M;
  o.sync_to_disk = false;
  GoldenOptions g;
  g.max_reference_bytes = 1 << 20;  // below the engine's 1 GiB resident budget alone
  o.golden_writer = make_golden_writer(g);
  o.extra_flags = golden_flags(g);
  Result<convert::ConvertReport> converted = convert::convert_model(o);
  ASSERT_TRUE(converted.ok()) << converted.status().to_string();
  bool warned = false;
  for (const std::string& w : converted->warnings) warned |= w.find("goldens skipped") != std::string::npos;
  EXPECT_TRUE(warned);
  const Manifest skipped = manifest_of(o.out);
  EXPECT_TRUE(skipped.goldens.empty());
  EXPECT_EQ(skipped.metadata.converter.flags.at("golden-prompts"), "none");
  EXPECT_EQ(skipped.metadata.converter.flags.count("golden-tokens"), 0u);
  EXPECT_NE(skipped.metadata.converter.flags.at(std::string(kGoldenSkippedFlag)).find("MiB, the limit is 1 MiB"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(o.out / "golden"));
  const VerifyReport r = verify(o.out, true);
  EXPECT_EQ(r.exit_code, kExitVerifyStructureOnly);
  EXPECT_NE(gate(r, 5).detail.find("skipped at conversion (the streaming CPU reference needs"), std::string::npos)
      << gate(r, 5).detail;
  ASSERT_TRUE(add_goldens_to_pack(o.out, o.src, kTestGoldens, false).ok());
  const Manifest m = manifest_of(o.out);
  EXPECT_FALSE(m.goldens.empty());
  EXPECT_EQ(m.metadata.converter.flags.at("golden-prompts"), "3");
  EXPECT_EQ(m.metadata.converter.flags.count(std::string(kGoldenSkippedFlag)), 0u);
  expect_all_pass(verify(o.out, true), true);
}

// --make-goldens on a pack that has goldens replaces them (the same files: same bits), and refuses a source
// that is not the pack's conversion input, naming the field, with the pack untouched.
TEST(VerifyMakeGoldens, ReplacesGoldensAndRefusesAnotherModel) {
  const fs::path pack = copy_of_good_pack("make-goldens");
  const Manifest before = manifest_of(pack);
  ASSERT_TRUE(add_goldens_to_pack(pack, kFixtures / "tiny-llama" / "hf", kTestGoldens, false).ok());
  const Manifest after = manifest_of(pack);
  EXPECT_EQ(after.goldens, before.goldens);
  const Status s = add_goldens_to_pack(pack, kFixtures / "tiny-gemma3" / "hf", kTestGoldens, false);
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("architecture."), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("the pack's"), std::string::npos) << s.to_string();
  EXPECT_EQ(manifest_of(pack), after);
  expect_all_pass(verify(pack, true), true);
}

// A GGUF input: the source golden comes from the GGUF weights (load_gguf). Row-wise Q4_K_M blocks pass through
// unchanged, so the pack's reference equals the source's.
TEST(VerifyGguf, PassThroughPackMatchesTheSourceGolden) {
  convert::ConvertOptions o;
  o.src = kFixtures / "tiny-gemma3" / "gguf" / "tiny-gemma3-q4_k_m.gguf";
  o.out = scratch() / "gguf-row";
  o.q4k_layout = quant::Layout::kRowWise;
  o.sync_to_disk = false;
  const GoldenOptions g{.prompts = 2, .tokens_per_prompt = 10, .greedy_steps = 4};
  o.golden_writer = make_golden_writer(g);
  ASSERT_TRUE(convert::convert_model(o).ok());
  const VerifyReport r = verify(o.out, true, kFixtures / "tiny-gemma3" / "golden" / "hf-f32.json");
  expect_all_pass(r, true);
  EXPECT_LT(gate(r, 6).metrics.value("kld_mean", 1.0), 1e-12);
  EXPECT_EQ(gate(r, 6).metrics.value("top1_agreement", 0.0), 1.0);
}

// With a bundled tokenizer the golden prompts are real text: stored with the ids, and the ids are what the
// pack's tokenizer gives for that text (checked independently in tokenizer/ against the HF fixture ids).
TEST(GoldenWriter, PromptsComeFromTextThroughThePacksTokenizer) {
  for (const char* model : {"tiny-llama", "tiny-qwen2", "tiny-gemma3"}) {
    const fs::path& pack = converted(make_case(model, convert::Preset::kQ8_0));
    Result<Manifest> m = read_manifest_file(pack);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    Result<GoldenSet> g = read_golden(*m, pack);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    ASSERT_EQ(g->prompts.size(), 3u);
    for (size_t i = 0; i < g->prompts.size(); ++i) {
      const GoldenPrompt& p = g->prompts[i];
      EXPECT_EQ(p.text, golden_prompt_texts()[i]) << model << " prompt " << i;
      ASSERT_FALSE(p.token_ids.empty());
      if (m->tokenizer.add_bos_token && m->tokenizer.bos_token_id) {
        EXPECT_EQ(static_cast<uint64_t>(p.token_ids.front()), *m->tokenizer.bos_token_id) << model;
      }
    }
  }
}

TEST(VerifyThresholds, FileOverridesAndRejectsUnknownKeys) {
  const fs::path f = scratch() / "thresholds.json";
  std::ofstream(f) << R"({"fidelity": {"near_tie_margin": 0.5}, "quality": {"Q4_K_M": {"kld_mean": 0.01}}})";
  Result<Thresholds> t = read_thresholds(f);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->near_tie_margin, 0.5);
  EXPECT_EQ(t->quality.at("Q4_K_M").kld_mean_max, 0.01);
  EXPECT_EQ(t->quality.at("Q4_K_M").top1_min, default_thresholds().quality.at("Q4_K_M").top1_min);
  std::ofstream(f, std::ios::trunc) << R"({"quality": {"Q4_K_M": {"top1": 1.5}}})";
  EXPECT_EQ(read_thresholds(f).status().code(), StatusCode::kSchema);
  std::ofstream(f, std::ios::trunc) << R"({"fidelity": {"nmse": 1}})";
  const Status s = read_thresholds(f).status();
  EXPECT_EQ(s.code(), StatusCode::kSchema);
  EXPECT_NE(s.message().find("fidelity.nmse"), std::string::npos) << s.to_string();
}

int run_tool(const std::string& args) {
  const int rc = std::system((std::string(RDRR_VERIFY_BIN) + " " + args + " > /dev/null").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(VerifyTool, ExitCodesAndJsonReport) {
  const fs::path& good = converted(make_case("tiny-llama", convert::Preset::kQ4_K_M));
  const fs::path report = scratch() / "report.json";
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --json " + report.string()), 0);
  const nlohmann::json j = read_json(report);
  EXPECT_EQ(j.at("pass"), true);
  EXPECT_EQ(j.at("gates").size(), 6u);
  EXPECT_EQ(j.at("gates")[4].at("name"), "fidelity");
  const fs::path bad = copy_of_good_pack("tool-missing-golden");
  fs::remove(bad / "golden" / "golden.json");
  EXPECT_EQ(run_tool(bad.string() + " --skip-gpu"), 20);
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --thresholds /nonexistent.json"), 4);
  // No goldens: 27 unless --structure-only; --make-goldens from the source then verifies it fully.
  const fs::path bare = copy_of_good_pack("tool-no-goldens");
  fs::remove_all(bare / "golden");
  Manifest m = manifest_of(bare);
  m.goldens.clear();
  m.metadata.converter.flags["golden-prompts"] = "none";
  std::ofstream(bare / "manifest.json", std::ios::trunc) << serialize_manifest(m);
  EXPECT_EQ(run_tool(bare.string() + " --skip-gpu"), kExitVerifyStructureOnly);
  EXPECT_EQ(run_tool(bare.string() + " --skip-gpu --structure-only"), 0);
  EXPECT_EQ(run_tool(bare.string() + " --skip-gpu --make-goldens " + (kFixtures / "tiny-gemma3" / "hf").string()),
            3);  // kValidation (tools/exit_codes.h)
  EXPECT_EQ(run_tool(bare.string() + " --skip-gpu --make-goldens " + (kFixtures / "tiny-llama" / "hf").string() +
                     " --golden-prompts 2 --golden-steps 3"),
            0);
  EXPECT_EQ(manifest_of(bare).metadata.converter.flags.at("golden-prompts"), "2");
  EXPECT_EQ(run_tool("--no-such-flag"), 2);
  // --golden-anchor: needs --golden, "KLD[,TOP1]" with KLD >= 0 and TOP1 in [0, 1].
  const std::string golden = (kFixtures / "tiny-llama" / "golden" / "hf-f32.json").string();
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --golden-anchor 0.1,0.5"), 2);
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --golden " + golden + " --golden-anchor x"), 2);
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --golden " + golden + " --golden-anchor 0.1,1.5"), 2);
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --golden " + golden + " --golden-anchor -0.1"), 2);
  // An anchor far better than this pack: gate 7 fails (24) where the Q4_K_M label's bound passes.
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --golden " + golden), 0);
  EXPECT_EQ(run_tool(good.string() + " --skip-gpu --golden " + golden + " --golden-anchor 0.0001,0.99"), 24);
}

TEST(VerifyAnchor, ParsesKldAndTop1) {
  const Result<ExternalAnchor> a = parse_external_anchor("0.2186,0.6038");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_DOUBLE_EQ(a->kld_mean, 0.2186);
  EXPECT_DOUBLE_EQ(a->top1, 0.6038);
  EXPECT_DOUBLE_EQ(parse_external_anchor("0.5")->top1, 0.0);
  const Result<ExternalAnchor> bad = parse_external_anchor("0.1,2");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--golden-anchor TOP1 '2': expected a number in [0, 1]"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(parse_external_anchor("nan").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_external_anchor("0.1x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_external_anchor("").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdrr::verify
