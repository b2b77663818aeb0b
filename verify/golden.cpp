#include "verify/golden.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "quant/f16.h"
#include "rdrr/json_strict.h"
#include "rdrr/mapped_file.h"
#include "verify/splitmix.h"

namespace rdrr::verify {
namespace {

using nlohmann::json;
constexpr int kZstdLevel = 9;
constexpr uint64_t kPromptSeed = 0x5244525247304c44ull;  // "RDRRG0LD"

size_t value_bytes(GoldenValueType t) { return t == GoldenValueType::kF32 ? 4 : 2; }

std::string logits_file_name(std::string_view ref, size_t prompt, GoldenValueType t) {
  return "golden/" + std::string(ref) + ".p" + std::to_string(prompt) + ".logits." +
         std::string(golden_value_type_name(t)) + ".zst";
}

std::vector<std::byte> encode_values(std::span<const float> v, GoldenValueType t) {
  std::vector<std::byte> out(v.size() * value_bytes(t));
  if (t == GoldenValueType::kF32) {
    std::memcpy(out.data(), v.data(), out.size());  // little-endian hosts only (SPEC.md section 1)
  } else {
    std::vector<uint16_t> h(v.size());
    quant::f32_to_f16(v, h);
    std::memcpy(out.data(), h.data(), out.size());
  }
  return out;
}

std::vector<float> decode_values(std::span<const std::byte> b, GoldenValueType t) {
  std::vector<float> out(b.size() / value_bytes(t));
  if (t == GoldenValueType::kF32) {
    std::memcpy(out.data(), b.data(), out.size() * 4);
  } else {
    std::vector<uint16_t> h(out.size());
    std::memcpy(h.data(), b.data(), h.size() * 2);
    quant::f16_to_f32(h, out);
  }
  return out;
}

json run_json(const GoldenRun& r, const std::string& file) {
  return {{"logitsFile", file}, {"greedyTokenIds", r.greedy_token_ids}, {"greedyTop1Margins", r.greedy_top1_margins}};
}

Status check_run(const GoldenRun& r, size_t positions, uint64_t vocab, const std::string& what) {
  if (r.logits.size() != positions * vocab) {
    return error(StatusCode::kInvalidArgument, what + ": " + std::to_string(r.logits.size()) + " logits, expected " +
                                                   std::to_string(positions) + " x " + std::to_string(vocab));
  }
  if (r.greedy_token_ids.size() != r.greedy_top1_margins.size()) {
    return error(StatusCode::kInvalidArgument, what + ": greedy ids and margins differ in length");
  }
  return Status();
}

Result<std::vector<std::byte>> read_whole(const std::filesystem::path& path) {
  RDRR_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
  return std::vector<std::byte>(f.bytes().begin(), f.bytes().end());
}

// Typed getters over the index with JSON-pointer-like context in errors (kSchema).
template <typename T>
Result<T> get(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) return error(StatusCode::kSchema, where + ": missing field '" + key + "'");
  try {
    return obj.at(key).get<T>();
  } catch (const json::exception& e) {
    return error(StatusCode::kSchema, where + "." + key + ": " + json_brief(obj.at(key)) + ": wrong type");
  }
}

struct ReadCtx {
  const Manifest* m;
  const std::filesystem::path* dir;
  std::set<std::string, std::less<>> listed;
  uint64_t vocab;
  GoldenValueType type;
};

Result<GoldenRun> read_run(const ReadCtx& c, const json& j, size_t positions, const std::string& where) {
  GoldenRun r;
  RDRR_ASSIGN_OR_RETURN(std::string file, get<std::string>(j, "logitsFile", where));
  RDRR_ASSIGN_OR_RETURN(r.greedy_token_ids, get<std::vector<int32_t>>(j, "greedyTokenIds", where));
  RDRR_ASSIGN_OR_RETURN(r.greedy_top1_margins, get<std::vector<double>>(j, "greedyTop1Margins", where));
  if (r.greedy_token_ids.size() != r.greedy_top1_margins.size()) {
    return error(StatusCode::kValidation, where + ": greedyTokenIds and greedyTop1Margins differ in length");
  }
  for (int32_t id : r.greedy_token_ids) {
    if (id < 0 || static_cast<uint64_t>(id) >= c.vocab) {
      return error(StatusCode::kValidation, where + ".greedyTokenIds: " + std::to_string(id) + " outside the vocabulary");
    }
  }
  if (!c.listed.contains(file)) {
    return error(StatusCode::kValidation, where + ".logitsFile: " + file + " is not listed in the manifest's goldens");
  }
  RDRR_ASSIGN_OR_RETURN(std::vector<std::byte> frame, read_whole(*c.dir / file));
  const uint64_t want = positions * c.vocab * value_bytes(c.type);
  RDRR_ASSIGN_OR_RETURN(std::vector<std::byte> raw, zstd_decompress(frame, want).context(file));
  r.logits = decode_values(raw, c.type);
  return r;
}

Result<GoldenPrompt> read_prompt(const ReadCtx& c, const json& j, const std::string& where) {
  GoldenPrompt p;
  if (j.contains("text")) {
    if (!j["text"].is_string()) return error(StatusCode::kSchema, where + ".text: expected a string");
    p.text = j["text"].get<std::string>();
  }
  RDRR_ASSIGN_OR_RETURN(p.token_ids, get<std::vector<int32_t>>(j, "tokenIds", where));
  RDRR_ASSIGN_OR_RETURN(p.positions, get<std::vector<uint32_t>>(j, "positions", where));
  if (p.token_ids.empty() || p.positions.empty()) return error(StatusCode::kValidation, where + ": empty prompt");
  for (int32_t id : p.token_ids) {
    if (id < 0 || static_cast<uint64_t>(id) >= c.vocab) {
      return error(StatusCode::kValidation, where + ".tokenIds: " + std::to_string(id) + " outside the vocabulary");
    }
  }
  for (size_t i = 0; i < p.positions.size(); ++i) {
    if (p.positions[i] >= p.token_ids.size() || (i > 0 && p.positions[i] <= p.positions[i - 1])) {
      return error(StatusCode::kValidation, where + ".positions: not ascending within the prompt's " +
                                                std::to_string(p.token_ids.size()) + " tokens");
    }
  }
  RDRR_ASSIGN_OR_RETURN(const json src, get<json>(j, "source", where));
  RDRR_ASSIGN_OR_RETURN(p.source, read_run(c, src, p.positions.size(), where + ".source"));
  RDRR_ASSIGN_OR_RETURN(const json pk, get<json>(j, "pack", where));
  RDRR_ASSIGN_OR_RETURN(p.pack, read_run(c, pk, p.positions.size(), where + ".pack"));
  return p;
}

}  // namespace

std::string_view golden_value_type_name(GoldenValueType t) { return t == GoldenValueType::kF32 ? "f32" : "f16"; }

Result<std::vector<std::vector<int32_t>>> golden_prompts(const Manifest& m, const GoldenOptions& o) {
  const uint64_t vocab = m.architecture.vocab_size;
  if (o.tokens_per_prompt == 0) return error(StatusCode::kInvalidArgument, "golden prompts: 0 tokens per prompt");
  std::set<uint64_t> special(m.tokenizer.eos_token_ids.begin(), m.tokenizer.eos_token_ids.end());
  if (m.tokenizer.bos_token_id) special.insert(*m.tokenizer.bos_token_id);
  if (m.tokenizer.pad_token_id) special.insert(*m.tokenizer.pad_token_id);
  if (vocab <= special.size() + 1 || vocab > static_cast<uint64_t>(INT32_MAX)) {
    return error(StatusCode::kInvalidArgument, "golden prompts: vocabulary of " + std::to_string(vocab) + " tokens");
  }
  const bool bos = m.tokenizer.add_bos_token && m.tokenizer.bos_token_id && *m.tokenizer.bos_token_id < vocab;
  std::vector<std::vector<int32_t>> out;
  for (size_t p = 0; p < o.prompts; ++p) {
    uint64_t state = kPromptSeed + p;
    std::vector<int32_t> ids;
    if (bos) ids.push_back(static_cast<int32_t>(*m.tokenizer.bos_token_id));
    while (ids.size() < o.tokens_per_prompt) {
      const uint64_t id = splitmix64(state) % vocab;
      if (!special.contains(id)) ids.push_back(static_cast<int32_t>(id));
    }
    out.push_back(std::move(ids));
  }
  return out;
}

std::span<const std::string_view> golden_prompt_texts() {
  static constexpr std::string_view kTexts[] = {
      "The capital of France is",
      "Once upon a time, in a small village by the sea, there lived",
      "def fibonacci(n):\n    if n < 2:\n        return n\n",
      "Question: Why is the sky blue? Answer:",
      "Le chat est assis sur le",
      "1, 2, 3, 5, 8, 13,",
      "The three primary colors are",
      "In 1969, the first humans to walk on the Moon were",
  };
  return kTexts;
}

GoldenStorage choose_golden_storage(uint64_t vocab, const std::vector<size_t>& lengths, uint64_t budget_bytes) {
  GoldenStorage s;
  uint64_t all = 0;
  size_t longest = 0;
  for (size_t n : lengths) {
    all += n;
    longest = std::max(longest, n);
  }
  // Two references (source, pack) per stored position.
  auto cost = [&](uint64_t positions, GoldenValueType t) { return 2 * positions * vocab * value_bytes(t); };
  s.value_type = cost(all, GoldenValueType::kF32) <= budget_bytes ? GoldenValueType::kF32 : GoldenValueType::kF16;
  size_t keep = longest;
  while (keep > 1) {
    uint64_t n = 0;
    for (size_t len : lengths) n += std::min(len, keep);
    if (cost(n, s.value_type) <= budget_bytes) break;
    --keep;
  }
  for (size_t len : lengths) {
    std::vector<uint32_t> pos;
    for (size_t i = len - std::min(len, keep); i < len; ++i) pos.push_back(static_cast<uint32_t>(i));
    s.positions.push_back(std::move(pos));
  }
  return s;
}

std::vector<std::byte> zstd_compress(std::span<const std::byte> bytes) {
  std::vector<std::byte> out(ZSTD_compressBound(bytes.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), kZstdLevel);
  out.resize(ZSTD_isError(n) ? 0 : n);  // only fails on a too-small buffer, which compressBound rules out
  return out;
}

Result<std::vector<std::byte>> zstd_decompress(std::span<const std::byte> frame, uint64_t expected_bytes) {
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return error(StatusCode::kIntegrity, "not a zstd frame with a content size");
  }
  if (size != expected_bytes) {
    return error(StatusCode::kValidation, "decompressed size " + std::to_string(size) + " bytes, expected " +
                                              std::to_string(expected_bytes));
  }
  std::vector<std::byte> out(expected_bytes);
  const size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != expected_bytes) {
    return error(StatusCode::kIntegrity, std::string("zstd: ") + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame"));
  }
  return out;
}

Result<std::vector<GoldenBlob>> encode_golden(const GoldenSet& g) {
  std::vector<GoldenBlob> blobs;
  json prompts = json::array();
  for (size_t i = 0; i < g.prompts.size(); ++i) {
    const GoldenPrompt& p = g.prompts[i];
    const std::string where = "golden prompt " + std::to_string(i);
    RDRR_RETURN_IF_ERROR(check_run(p.source, p.positions.size(), g.vocab_size, where + " source"));
    RDRR_RETURN_IF_ERROR(check_run(p.pack, p.positions.size(), g.vocab_size, where + " pack"));
    const std::string src_file = logits_file_name("source", i, g.value_type);
    const std::string pack_file = logits_file_name("pack", i, g.value_type);
    blobs.push_back({src_file, std::string(kGoldenKindLogits), zstd_compress(encode_values(p.source.logits, g.value_type))});
    blobs.push_back({pack_file, std::string(kGoldenKindLogits), zstd_compress(encode_values(p.pack.logits, g.value_type))});
    json pj = {{"tokenIds", p.token_ids},
               {"positions", p.positions},
               {"source", run_json(p.source, src_file)},
               {"pack", run_json(p.pack, pack_file)}};
    if (!p.text.empty()) pj["text"] = p.text;
    prompts.push_back(std::move(pj));
  }
  const json index = {
      {"format", kGoldenFormat},
      {"version", kGoldenVersion},
      {"vocabSize", g.vocab_size},
      {"greedySteps", g.greedy_steps},
      {"logits",
       {{"dtype", golden_value_type_name(g.value_type)}, {"compression", "zstd"}, {"layout", "row-major [positions][vocabSize]"}}},
      {"references",
       {{"source", {{"producer", g.source.producer}, {"weights", g.source.weights}}},
        {"pack", {{"producer", g.pack.producer}, {"weights", g.pack.weights}}}}},
      {"prompts", prompts}};
  const std::string text = index.dump(1) + "\n";
  GoldenBlob idx{std::string(kGoldenIndexName), std::string(kGoldenKindReference), {}};
  idx.bytes.resize(text.size());
  std::memcpy(idx.bytes.data(), text.data(), text.size());
  blobs.insert(blobs.begin(), std::move(idx));
  return blobs;
}

Result<GoldenSet> read_golden(const Manifest& m, const std::filesystem::path& pack_dir) {
  ReadCtx c{&m, &pack_dir, {}, m.architecture.vocab_size, GoldenValueType::kF32};
  for (const GoldenFile& f : m.goldens) c.listed.insert(f.name);
  const std::string idx_name(kGoldenIndexName);
  if (!c.listed.contains(idx_name)) return error(StatusCode::kNotFound, idx_name + ": not listed in the manifest's goldens");
  RDRR_ASSIGN_OR_RETURN(std::vector<std::byte> text, read_whole(pack_dir / idx_name));
  RDRR_ASSIGN_OR_RETURN(json j, parse_json_strict(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()),
                                                  idx_name));
  RDRR_ASSIGN_OR_RETURN(std::string format, get<std::string>(j, "format", idx_name));
  RDRR_ASSIGN_OR_RETURN(uint32_t version, get<uint32_t>(j, "version", idx_name));
  if (format != kGoldenFormat || version != kGoldenVersion) {
    return error(StatusCode::kSchema, idx_name + ": format " + format + " v" + std::to_string(version) + ", expected " +
                                          std::string(kGoldenFormat) + " v" + std::to_string(kGoldenVersion));
  }
  GoldenSet g;
  RDRR_ASSIGN_OR_RETURN(g.vocab_size, get<uint64_t>(j, "vocabSize", idx_name));
  if (g.vocab_size != c.vocab) {
    return error(StatusCode::kValidation, idx_name + ": vocabSize " + std::to_string(g.vocab_size) +
                                              ", the manifest's vocabSize is " + std::to_string(c.vocab));
  }
  RDRR_ASSIGN_OR_RETURN(g.greedy_steps, get<size_t>(j, "greedySteps", idx_name));
  RDRR_ASSIGN_OR_RETURN(const json logits, get<json>(j, "logits", idx_name));
  RDRR_ASSIGN_OR_RETURN(std::string dtype, get<std::string>(logits, "dtype", idx_name + ".logits"));
  RDRR_ASSIGN_OR_RETURN(std::string comp, get<std::string>(logits, "compression", idx_name + ".logits"));
  if ((dtype != "f32" && dtype != "f16") || comp != "zstd") {
    return error(StatusCode::kSchema, idx_name + ".logits: dtype " + dtype + ", compression " + comp +
                                          " (expected f32|f16, zstd)");
  }
  c.type = g.value_type = dtype == "f32" ? GoldenValueType::kF32 : GoldenValueType::kF16;
  RDRR_ASSIGN_OR_RETURN(const json refs, get<json>(j, "references", idx_name));
  for (auto [name, out] : {std::pair{"source", &g.source}, std::pair{"pack", &g.pack}}) {
    RDRR_ASSIGN_OR_RETURN(const json r, get<json>(refs, name, idx_name + ".references"));
    RDRR_ASSIGN_OR_RETURN(out->producer, get<std::string>(r, "producer", idx_name + ".references." + name));
    RDRR_ASSIGN_OR_RETURN(out->weights, get<std::string>(r, "weights", idx_name + ".references." + name));
  }
  RDRR_ASSIGN_OR_RETURN(const json prompts, get<json>(j, "prompts", idx_name));
  if (!prompts.is_array() || prompts.empty()) return error(StatusCode::kSchema, idx_name + ".prompts: not a non-empty array");
  for (size_t i = 0; i < prompts.size(); ++i) {
    RDRR_ASSIGN_OR_RETURN(GoldenPrompt p, read_prompt(c, prompts[i], idx_name + ".prompts[" + std::to_string(i) + "]"));
    g.prompts.push_back(std::move(p));
  }
  return g;
}

}  // namespace rdrr::verify
