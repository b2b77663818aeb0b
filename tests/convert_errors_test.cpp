// rdrr-convert's failure modes, each through the built binary: the exit code of README "Exit codes" and a
// fragment of the message. Hostile inputs are built in a temp folder from the tiny-llama fixture.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "tests/convert_test_util.h"

namespace rdrr::convert_test {
namespace {

// A copy of tiny-llama's HF folder (config, tokenizer, weights) that tests then break.
fs::path copy_llama(const TempDir& tmp, const std::string& name = "model") {
  const fs::path dir = tmp / name;
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(hf_dir("tiny-llama"))) fs::copy_file(e.path(), dir / e.path().filename());
  for (const auto& e : fs::directory_iterator(dir)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return dir;
}

struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// Writes a SafeTensors file from explicit entries (offsets packed in order unless given in `offsets`).
void write_safetensors(const fs::path& path, const std::vector<Tensor>& tensors,
                       const std::vector<std::pair<uint64_t, uint64_t>>& offsets = {}) {
  nlohmann::json h = nlohmann::json::object();
  std::string data;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const uint64_t begin = offsets.empty() ? data.size() : offsets[i].first;
    const uint64_t end = offsets.empty() ? begin + t.bytes.size() : offsets[i].second;
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, end}}};
    if (offsets.empty()) data += t.bytes;
  }
  if (!offsets.empty()) {
    for (const Tensor& t : tensors) data += t.bytes;
  }
  const std::string header = h.dump();
  std::string file(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  write_text(path, file + header + data);
}

// Every tensor of the fixture's model.safetensors as entries (to drop or alter some).
std::vector<Tensor> llama_tensors() {
  const convert::SafeTensorsFile f = convert::SafeTensorsFile::open(hf_dir("tiny-llama") / "model.safetensors").value();
  std::vector<Tensor> out;
  for (const convert::TensorView& v : f.tensors()) {
    out.push_back({v.name, "F32", v.shape, std::string(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size())});
  }
  return out;
}

void expect_failure(const RunResult& r, int code, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << r.err;
}

RunResult convert_to(const fs::path& src, const TempDir& tmp, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {src.string(), (tmp / "out").string(), "--no-sync", "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_convert(args);
}

// ---- SafeTensors reader errors surface with exit 3 and the reader's message ----

TEST(ConvertErrors, TruncatedSafeTensors) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") / 2);
  expect_failure(convert_to(dir, tmp), 3, "model.safetensors");
  EXPECT_FALSE(fs::exists(tmp / "out"));
}

TEST(ConvertErrors, HeaderLengthBeyondFile) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  std::string bytes = read_text(dir / "model.safetensors");
  const uint64_t huge = bytes.size() + 100;
  std::memcpy(bytes.data(), &huge, 8);
  write_text(dir / "model.safetensors", bytes);
  expect_failure(convert_to(dir, tmp), 3, "header length");
}

TEST(ConvertErrors, OffsetsOutOfBounds) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  write_safetensors(dir / "model.safetensors", {{"model.norm.weight", "F32", {2}, std::string(8, '\0')}}, {{0, 16}});
  expect_failure(convert_to(dir, tmp), 3, "data_offsets");
}

TEST(ConvertErrors, OverlappingOffsets) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  write_safetensors(dir / "model.safetensors",
                    {{"a", "F32", {2}, std::string(8, '\0')}, {"b", "F32", {2}, std::string(4, '\0')}}, {{0, 8}, {4, 12}});
  expect_failure(convert_to(dir, tmp), 3, "overlap");
}

TEST(ConvertErrors, UnknownDtype) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  write_safetensors(dir / "model.safetensors", {{"model.norm.weight", "F99", {2}, std::string(8, '\0')}});
  expect_failure(convert_to(dir, tmp), 3, "unknown dtype 'F99'");
}

TEST(ConvertErrors, BytesDisagreeWithShape) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  write_safetensors(dir / "model.safetensors", {{"model.norm.weight", "F32", {3}, std::string(8, '\0')}});
  expect_failure(convert_to(dir, tmp), 3, "model.norm.weight");
}

// ---- model-level errors ----

TEST(ConvertErrors, MissingConfig) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  fs::remove(dir / "config.json");
  expect_failure(convert_to(dir, tmp), 4, "config.json");
}

TEST(ConvertErrors, InvalidConfigJson) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  write_text(dir / "config.json", "{\"architectures\": [\"LlamaForCausalLM\"],");
  expect_failure(convert_to(dir, tmp), 3, "config.json");
}

TEST(ConvertErrors, UnknownArchitecture) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  nlohmann::json cfg = nlohmann::json::parse(read_text(dir / "config.json"));
  cfg["architectures"] = {"FooForCausalLM"};
  cfg["model_type"] = "foo";
  write_text(dir / "config.json", cfg.dump());
  expect_failure(convert_to(dir, tmp), 9, "FooForCausalLM");
}

TEST(ConvertErrors, MissingTensor) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  std::vector<Tensor> t = llama_tensors();
  std::erase_if(t, [](const Tensor& x) { return x.name == "model.layers.1.mlp.up_proj.weight"; });
  write_safetensors(dir / "model.safetensors", t);
  expect_failure(convert_to(dir, tmp), 4, "model.layers.1.mlp.up_proj.weight: missing");
}

TEST(ConvertErrors, ShapeDisagreesWithConfig) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  std::vector<Tensor> t = llama_tensors();
  for (Tensor& x : t) {
    if (x.name == "model.layers.0.self_attn.o_proj.weight") x.shape = {128, 512};
  }
  write_safetensors(dir / "model.safetensors", t);
  expect_failure(convert_to(dir, tmp), 3, "o_proj.weight: shape [128, 512], expected [256, 256]");
}

TEST(ConvertErrors, UnknownTensor) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  std::vector<Tensor> t = llama_tensors();
  t.push_back({"model.layers.0.mystery.weight", "F32", {2}, std::string(8, '\0')});
  write_safetensors(dir / "model.safetensors", t);
  expect_failure(convert_to(dir, tmp), 9, "model.layers.0.mystery.weight");
}

// ---- mixture of experts (fixtures/families/tiny-mixtral: 2 layers, 4 experts of [64, 256] / [256, 64]) ----

fs::path copy_mixtral(const TempDir& tmp) {
  const fs::path dir = tmp / "mixtral";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(hf_dir("families/tiny-mixtral"))) {
    fs::copy_file(e.path(), dir / e.path().filename());
    fs::permissions(dir / e.path().filename(), fs::perms::owner_write, fs::perm_options::add);
  }
  return dir;
}

std::vector<Tensor> mixtral_tensors() {
  const convert::SafeTensorsFile f =
      convert::SafeTensorsFile::open(hf_dir("families/tiny-mixtral") / "model.safetensors").value();
  std::vector<Tensor> out;
  for (const convert::TensorView& v : f.tensors()) {
    out.push_back({v.name, "BF16", v.shape, std::string(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size())});
  }
  return out;
}

TEST(ConvertErrors, MixtureOfExpertsTensorsAreChecked) {
  TempDir tmp;
  const fs::path dir = copy_mixtral(tmp);
  std::vector<Tensor> t = mixtral_tensors();
  std::erase_if(t, [](const Tensor& x) { return x.name == "model.layers.1.block_sparse_moe.experts.3.w2.weight"; });
  write_safetensors(dir / "model.safetensors", t);
  expect_failure(convert_to(dir, tmp), 4, "layer 1 expert 3: down weight missing from the input");

  t = mixtral_tensors();
  for (Tensor& x : t) {
    if (x.name == "model.layers.0.block_sparse_moe.experts.2.w1.weight") {
      x.shape = {32, 512};
    }
  }
  write_safetensors(dir / "model.safetensors", t);
  expect_failure(convert_to(dir, tmp), 3,
                 "model.layers.0.block_sparse_moe.experts.2.w1.weight: shape [32, 512], expected [64, 256]");

  t = mixtral_tensors();
  for (const Tensor& x : mixtral_tensors()) {
    if (x.name.starts_with("model.layers.0.block_sparse_moe.experts.0.")) {
      std::string name = x.name;
      name.replace(name.find("experts.0."), 10, "experts.4.");
      t.push_back({name, x.dtype, x.shape, x.bytes});
    }
  }
  write_safetensors(dir / "model.safetensors", t);
  expect_failure(convert_to(dir, tmp), 3, "layer 0 expert 4: beyond numExperts 4");

  t = mixtral_tensors();
  std::erase_if(t, [](const Tensor& x) { return x.name == "model.layers.0.block_sparse_moe.gate.weight"; });
  write_safetensors(dir / "model.safetensors", t);
  expect_failure(convert_to(dir, tmp), 4, "model.layers.0.mlp.gate.weight: missing");
}

// Sets W[row, col] of a fixture tensor to `value` in a copied model.safetensors.
void poison(const fs::path& dir, const std::string& tensor, int64_t row, int64_t col, float value) {
  const convert::SafeTensorsFile f = convert::SafeTensorsFile::open(dir / "model.safetensors").value();
  const convert::TensorView* v = f.find(tensor);
  ASSERT_NE(v, nullptr);
  const auto offset = static_cast<uint64_t>(v->bytes.data() - f.mapped_file().bytes().data()) +
                      static_cast<uint64_t>(row * v->shape.back() + col) * 4;
  std::string bytes = read_text(dir / "model.safetensors");
  std::memcpy(bytes.data() + offset, &value, 4);
  write_text(dir / "model.safetensors", bytes);
}

TEST(ConvertErrors, NanInWeightsIsNamedAndRefused) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  poison(dir, "model.layers.0.mlp.up_proj.weight", 3, 5, std::nanf(""));
  // Fused gate+up: up rows follow the 512 gate rows.
  expect_failure(convert_to(dir, tmp), 10,
                 "tensor model.layers.0.mlp.gate_up_proj.weight (input tensor model.layers.0.mlp.up_proj.weight): "
                 "value [515, 5] is NaN");
  EXPECT_FALSE(fs::exists(tmp / "out"));
  const RunResult ok = convert_to(dir, tmp, {"--allow-nonfinite", "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const nlohmann::json j = nlohmann::json::parse(ok.out);
  for (const auto& t : j["tensors"]) {
    EXPECT_EQ(t["nonfiniteValues"].get<int>(), t["name"] == "model.layers.0.mlp.gate_up_proj.weight" ? 1 : 0);
  }
}

TEST(ConvertErrors, InfInNormRefusedForPlainTypes) {
  TempDir tmp;
  const fs::path dir = copy_llama(tmp);
  poison(dir, "model.norm.weight", 0, 17, -INFINITY);
  expect_failure(convert_to(dir, tmp, {"--quantize", "f32"}), 10, "tensor model.norm.weight: value [0, 17] is infinite");
  const RunResult ok = convert_to(dir, tmp, {"--quantize", "f32", "--allow-nonfinite"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// ---- GGUF errors ----

fs::path copy_gguf(const TempDir& tmp) {
  const fs::path p = tmp / "model.gguf";
  fs::copy_file(gguf_file("tiny-llama"), p);
  fs::permissions(p, fs::perms::owner_write, fs::perm_options::add);
  return p;
}

// Overwrites the ggml type id of a 1-D tensor's info record.
void set_gguf_type(const fs::path& p, const std::string& tensor, uint32_t type) {
  std::string bytes = read_text(p);
  std::string key(8, '\0');
  const uint64_t n = tensor.size();
  std::memcpy(key.data(), &n, 8);
  key += tensor;
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  uint32_t dims = 0;
  std::memcpy(&dims, bytes.data() + at + key.size(), 4);
  ASSERT_EQ(dims, 1u);
  std::memcpy(bytes.data() + at + key.size() + 4 + 8, &type, 4);
  write_text(p, bytes);
}

TEST(ConvertErrors, GgufBadMagic) {
  TempDir tmp;
  const fs::path p = copy_gguf(tmp);
  std::string bytes = read_text(p);
  bytes[3] = 'X';
  write_text(p, bytes);
  expect_failure(convert_to(p, tmp), 3, "magic");
}

TEST(ConvertErrors, GgufBadVersion) {
  TempDir tmp;
  const fs::path p = copy_gguf(tmp);
  std::string bytes = read_text(p);
  const uint32_t v = 1;
  std::memcpy(bytes.data() + 4, &v, 4);
  write_text(p, bytes);
  expect_failure(convert_to(p, tmp), 3, "version");
}

TEST(ConvertErrors, GgufBadAlignment) {
  TempDir tmp;
  const fs::path p = tmp / "a.gguf";
  std::string bytes = "GGUF";
  auto put = [&](auto v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(uint32_t{3});
  put(uint64_t{0});  // tensors
  put(uint64_t{1});  // kvs
  const std::string key = "general.alignment";
  put(uint64_t{key.size()});
  bytes += key;
  put(uint32_t{4});   // u32
  put(uint32_t{48});  // not a power of two
  write_text(p, bytes);
  expect_failure(convert_to(p, tmp), 3, "alignment");
}

TEST(ConvertErrors, GgufTypeTheReaderRejects) {
  TempDir tmp;
  const fs::path p = copy_gguf(tmp);
  set_gguf_type(p, "output_norm.weight", 16);  // IQ2_XXS
  expect_failure(convert_to(p, tmp), 9, "IQ2_XXS");
}

TEST(ConvertErrors, GgufTypeTheConverterCannotDecode) {
  TempDir tmp;
  const fs::path p = copy_gguf(tmp);
  set_gguf_type(p, "output_norm.weight", 15);  // Q8_K: readable, never a weight type
  expect_failure(convert_to(p, tmp), 9, "output_norm.weight: GGUF type Q8_K cannot be decoded");
}

// ---- output errors ----

TEST(ConvertErrors, UnwritableOutput) {
  TempDir tmp;
  write_text(tmp / "file", "x");
  const RunResult r = run_convert({hf_dir("tiny-llama").string(), (tmp / "file" / "pack").string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("file"), std::string::npos) << r.err;
  if (::geteuid() != 0) {  // permission bits do not stop root
    fs::create_directories(tmp / "ro");
    fs::permissions(tmp / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    const RunResult ro = run_convert({hf_dir("tiny-llama").string(), (tmp / "ro" / "pack").string(), "--quiet"});
    EXPECT_EQ(ro.exit_code, 5) << ro.err;
  }
}

TEST(ConvertErrors, DiskFullLeavesNothing) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  // RLIMIT_FSIZE of 256 KiB: the 1.1 MB shard cannot be written (SIGXFSZ is ignored by the tool: EFBIG).
  const RunResult r = run_convert({hf_dir("tiny-llama").string(), out.string(), "--quiet", "--no-sync"}, "ulimit -f 256;");
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("shard_00000.bin"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(tmp.path())) << "the temporary folder was not removed";
}

// Names in `dir` starting with `prefix`, sorted.
std::vector<std::string> entries_starting_with(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with(prefix)) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// kill -9 mid-conversion leaves "<out>.tmp-<pid>-<hex>" behind (no destructor runs); the next conversion of the
// same output removes it, since its pid is gone, and says so; the scratch folder of a live process stays.
TEST(ConvertErrors, KilledConversionLeavesScratchThatTheNextRunRemoves) {
  TempDir tmp;
  const fs::path out = tmp / "pack";
  const std::string src = hf_dir("tiny-llama").string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl(RDRR_CONVERT_BIN, RDRR_CONVERT_BIN, src.c_str(), out.c_str(), "--no-sync", "--quiet",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string killed_prefix = "pack.tmp-" + std::to_string(child) + "-";
  for (int ms = 0; ms < 60000 && entries_starting_with(tmp.path(), killed_prefix).empty(); ++ms) ::usleep(1000);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (fs::exists(out) || !WIFSIGNALED(status)) GTEST_SKIP() << "the conversion ended before it was killed";
  ASSERT_EQ(entries_starting_with(tmp.path(), killed_prefix).size(), 1u) << "the killed run left no scratch folder";

  const std::string live = "pack.tmp-" + std::to_string(::getpid()) + "-0123456789abcdef";
  fs::create_directory(tmp / live);
  const RunResult r = run_convert({src, out.string(), "--no-sync", "--quantize", "f16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("warning: removed 1 temporary folder(s) left next to the output by killed conversions, e.g. " +
                       killed_prefix),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(entries_starting_with(tmp.path(), killed_prefix).empty());
  EXPECT_TRUE(fs::exists(tmp / live));
  EXPECT_TRUE(fs::exists(out / "manifest.json"));
}

// --force replaces only an rdrr pack holding nothing but what its manifest lists: a folder with another program's
// manifest.json, or a pack the user put a file into, is refused (exit 7) with every file left as it was.
TEST(ConvertErrors, ForceRefusesAFolderThatIsNotOnlyAPack) {
  TempDir tmp;
  const fs::path project = tmp / "project";
  fs::create_directories(project);
  write_text(project / "manifest.json", "{\"name\": \"my-npm-thing\"}");
  write_text(project / "index.js", "precious");
  const std::string src = hf_dir("tiny-llama").string();
  const std::vector<std::string> flags = {"--quantize", "f16", "--no-sync", "--quiet", "--force"};
  std::vector<std::string> args = {src, project.string()};
  args.insert(args.end(), flags.begin(), flags.end());
  expect_failure(run_convert(args), 7, project.string() + ": exists and is not an rdrr pack (manifest.json");
  EXPECT_EQ(read_text(project / "manifest.json"), "{\"name\": \"my-npm-thing\"}");
  EXPECT_EQ(read_text(project / "index.js"), "precious");

  const fs::path pack = tmp / "pack";
  args[1] = pack.string();
  ASSERT_EQ(run_convert(args).exit_code, 0);
  write_text(pack / "notes.txt", "precious");
  expect_failure(run_convert(args), 7, "holds \"notes.txt\", which its manifest does not list");
  EXPECT_EQ(read_text(pack / "notes.txt"), "precious");
  fs::remove(pack / "notes.txt");
  EXPECT_EQ(run_convert(args).exit_code, 0);  // the pack alone is replaced
  EXPECT_EQ(entries_starting_with(tmp.path(), ""), (std::vector<std::string>{"pack", "project"}));
}

TEST(ConvertErrors, UsageErrors) {
  TempDir tmp;
  const std::string src = hf_dir("tiny-llama").string();
  const std::string out = (tmp / "pack").string();
  EXPECT_EQ(run_convert({src, out, "--bogus"}).exit_code, 2);
  expect_failure(run_convert({src, out, "--quantize", "q3_k"}), 2, "--quantize q3_k");
  expect_failure(run_convert({src, out, "--q4k-layout", "diagonal"}), 2, "--q4k-layout diagonal");
  expect_failure(run_convert({src, out, "--tensor-type", "lm_head=q5_k"}), 2, "unknown type 'q5_k'");
  expect_failure(run_convert({src, out, "--tensor-type", "(=q8_0"}), 2, "bad regex");
  expect_failure(run_convert({src, out, "--shard-size", "1000"}), 2, "--shard-size");
  expect_failure(run_convert({src, out, "--fuse-gate-up", "--no-fuse-gate-up"}), 2, "exclude each other");
  expect_failure(run_convert({src, out, "--fuse-qkv", "--no-fuse-qkv"}), 2, "--fuse-qkv and --no-fuse-qkv exclude");
  expect_failure(run_convert({src}), 2, "OUT is required");
  expect_failure(run_convert({(tmp / "nothing").string(), out}), 4, "no such file or folder");
  expect_failure(run_convert({(hf_dir("tiny-llama") / "model.safetensors").string(), out}), 2, "model folder");
  EXPECT_FALSE(fs::exists(out));
}

TEST(ConvertErrors, ErrorsAsJson) {
  TempDir tmp;
  const RunResult r = run_convert({(tmp / "nothing").string(), (tmp / "pack").string(), "--json"});
  EXPECT_EQ(r.exit_code, 4);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["exitCode"], 4);
  EXPECT_EQ(j["error"]["code"], "NOT_FOUND");
}

}  // namespace
}  // namespace rdrr::convert_test
