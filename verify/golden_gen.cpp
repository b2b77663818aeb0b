#include "verify/golden_gen.h"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "convert/source.h"
#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "rdrr/pack_writer.h"
#include "rdrr/sha256.h"
#include "rdrr/validate.h"
#include "tokenizer/tokenizer.h"
#include <tbb/task_arena.h>

#include "verify/stream_reference.h"

namespace rdrr::verify {
namespace {

struct Plan {
  std::vector<std::vector<int32_t>> prompts;
  GoldenStorage storage;
  size_t greedy_steps = 0;
};

// Logits at the stored positions and the greedy continuation of every prompt: one job of the streaming engine.
Result<std::vector<GoldenRun>> run_reference(const StreamingReference& engine, const Plan& plan, uint64_t vocab,
                                             const std::string& what) {
  if (engine.vocab_size() != vocab) {
    return error(StatusCode::kValidation, what + ": vocabulary of " + std::to_string(engine.vocab_size()) +
                                              " tokens, the manifest's vocabSize is " + std::to_string(vocab));
  }
  std::vector<StreamRequest> requests;
  for (size_t i = 0; i < plan.prompts.size(); ++i) {
    requests.push_back({.tokens = plan.prompts[i], .positions = plan.storage.positions[i],
                        .greedy_steps = plan.greedy_steps});
  }
  RDRR_ASSIGN_OR_RETURN(std::vector<StreamResponse> out, engine.run(requests).context(what));
  std::vector<GoldenRun> runs;
  for (StreamResponse& r : out) {
    runs.push_back({.logits = std::move(r.logits), .greedy_token_ids = std::move(r.greedy.token_ids),
                    .greedy_top1_margins = std::move(r.greedy.top1_margins)});
  }
  return runs;
}

constexpr size_t kMaxTextPromptTokens = 32;

// Prompts from the built-in texts through the pack's tokenizer; nullopt (token-id prompts) when the pack has
// no tokenizer this build reads.
std::optional<std::pair<std::vector<std::vector<int32_t>>, std::vector<std::string>>> text_prompts(
    const GoldenInputs& in) {
  const Manifest& m = *in.manifest;
  Result<std::unique_ptr<tok::Tokenizer>> t = tok::load_tokenizer(in.pack_dir, &m.tokenizer);
  if (!t.ok()) return std::nullopt;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::string> texts;
  const auto all = golden_prompt_texts();
  for (size_t i = 0; i < in.options.prompts; ++i) {
    const std::string_view text = all[i % all.size()];
    Result<std::vector<tok::TokenId>> enc = (*t)->encode(text);
    if (!enc.ok() || enc->empty()) return std::nullopt;
    std::vector<int32_t> p;
    for (tok::TokenId id : *enc) {
      if (id < 0 || static_cast<uint64_t>(id) >= m.architecture.vocab_size) return std::nullopt;
      p.push_back(id);
    }
    // Text prompts may run to 32 tokens (small vocabularies spend several tokens per word).
    const size_t cap = std::max<size_t>(in.options.tokens_per_prompt, kMaxTextPromptTokens);
    const bool cut = p.size() > cap;
    if (cut) p.resize(cap);
    ids.push_back(std::move(p));
    texts.push_back(cut ? std::string() : std::string(text));
  }
  return std::make_pair(std::move(ids), std::move(texts));
}

Result<Plan> make_plan(const GoldenInputs& in, std::vector<std::string>& texts) {
  const Manifest& m = *in.manifest;
  Plan plan;
  if (auto tp = text_prompts(in)) {
    plan.prompts = std::move(tp->first);
    texts = std::move(tp->second);
  } else {
    RDRR_ASSIGN_OR_RETURN(plan.prompts, golden_prompts(m, in.options));
  }
  std::vector<size_t> lengths;
  for (const auto& p : plan.prompts) lengths.push_back(p.size());
  plan.storage = choose_golden_storage(m.architecture.vocab_size, lengths, in.options.budget_bytes);
  plan.greedy_steps = in.options.greedy_steps;
  return plan;
}

constexpr std::string_view kProducer = "rdrr streaming CPU reference (f32 BLAS matmuls, double activations)";

}  // namespace

Result<GoldenSet> generate_golden(const GoldenInputs& in) {
  const Manifest& m = *in.manifest;
  std::vector<std::string> texts;
  RDRR_ASSIGN_OR_RETURN(Plan plan, make_plan(in, texts));
  GoldenSet g;
  g.vocab_size = m.architecture.vocab_size;
  g.greedy_steps = in.options.greedy_steps;
  g.value_type = plan.storage.value_type;
  g.source = {std::string(kProducer), std::string(source_format_name(in.format))};
  g.pack = {std::string(kProducer), "pack"};
  std::vector<GoldenRun> source_runs, pack_runs;
  {  // one engine at a time
    RDRR_ASSIGN_OR_RETURN(const StreamingReference src,
                          StreamingReference::open_source(in.src).context("source " + in.src.string()));
    RDRR_ASSIGN_OR_RETURN(source_runs, run_reference(src, plan, g.vocab_size, "source reference"));
  }
  {
    RDRR_ASSIGN_OR_RETURN(const StreamingReference pack,
                          StreamingReference::open_pack(m, in.pack_dir).context("pack"));
    RDRR_ASSIGN_OR_RETURN(pack_runs, run_reference(pack, plan, g.vocab_size, "pack reference"));
  }
  for (size_t i = 0; i < plan.prompts.size(); ++i) {
    g.prompts.push_back({i < texts.size() ? texts[i] : std::string(), std::move(plan.prompts[i]),
                         std::move(plan.storage.positions[i]), std::move(source_runs[i]), std::move(pack_runs[i])});
  }
  return g;
}

Result<uint64_t> golden_working_bytes(const GoldenInputs& in) {
  std::vector<std::string> texts;
  RDRR_ASSIGN_OR_RETURN(const Plan plan, make_plan(in, texts));
  size_t rows = 0, logit_rows = 0;
  for (size_t i = 0; i < plan.prompts.size(); ++i) {
    rows += plan.prompts[i].size() + plan.greedy_steps;
    logit_rows += plan.storage.positions[i].size() + 1;
  }
  RDRR_ASSIGN_OR_RETURN(const StreamingReference pack, StreamingReference::open_pack(*in.manifest, in.pack_dir));
  const auto threads = static_cast<size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
  return pack.working_bytes(rows, logit_rows, threads);
}

convert::GoldenWriter make_golden_writer(const GoldenOptions& options) {
  return [options](const convert::GoldenContext& ctx) -> Result<convert::GoldenOutput> {
    convert::GoldenOutput out;
    if (options.prompts == 0) return out;
    GoldenInputs in{.manifest = ctx.manifest, .pack_dir = ctx.pack_dir, .src = ctx.src, .format = ctx.format,
                    .options = options};
    uint64_t limit = options.max_reference_bytes;
    if (limit == 0) {
      const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
      limit = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4 * 3 : UINT64_MAX;
    }
    RDRR_ASSIGN_OR_RETURN(const uint64_t need, golden_working_bytes(in));
    if (need > limit) {
      const std::string why = "the streaming CPU reference needs " + std::to_string(need >> 20) + " MiB, the limit is " +
                              std::to_string(limit >> 20) + " MiB";
      out.warnings.push_back("goldens skipped: " + why + "; rdrr-verify will not check outputs (add goldens later " +
                             "with rdrr-verify PACK --make-goldens SRC)");
      out.flags = golden_flags({.prompts = 0});
      out.flags[std::string(kGoldenSkippedFlag)] = why;
      return out;
    }
    RDRR_ASSIGN_OR_RETURN(GoldenSet g, generate_golden(in));
    RDRR_ASSIGN_OR_RETURN(std::vector<GoldenBlob> blobs, encode_golden(g));
    for (GoldenBlob& b : blobs) out.files.push_back({std::move(b.name), std::move(b.kind), std::move(b.bytes)});
    return out;
  };
}

namespace {

// The source's architecture must be the pack's: the goldens' "source" reference is the conversion input.
Status check_source_matches(const Manifest& m, const convert::ModelConfig& c, const std::filesystem::path& src) {
  const Architecture& want = m.architecture;
  const Architecture& have = c.architecture;
  const std::pair<const char*, std::pair<uint64_t, uint64_t>> fields[] = {
      {"vocabSize", {have.vocab_size, want.vocab_size}},
      {"hiddenSize", {have.hidden_size, want.hidden_size}},
      {"numLayers", {have.num_layers, want.num_layers}},
      {"numAttentionHeads", {have.num_attention_heads, want.num_attention_heads}},
      {"numKeyValueHeads", {have.num_key_value_heads, want.num_key_value_heads}},
      {"headDim", {have.head_dim, want.head_dim}},
      {"intermediateSize", {have.intermediate_size, want.intermediate_size}}};
  for (const auto& [name, v] : fields) {
    if (v.first != v.second) {
      return error(StatusCode::kValidation, src.string() + ": architecture." + name + " " + std::to_string(v.first) +
                                                ", the pack's " + std::to_string(v.second) +
                                                " (--make-goldens needs the pack's conversion input)");
    }
  }
  return Status::Ok();
}

}  // namespace

namespace {

// The new manifest: the goldens (sizes and hashes computed from the bytes) and golden-* flags replaced.
Result<std::string> manifest_with_goldens(Manifest& m, const std::vector<GoldenBlob>& blobs,
                                          const GoldenOptions& options) {
  m.goldens.clear();
  for (const GoldenBlob& b : blobs) {
    RDRR_RETURN_IF_ERROR(validate_pack_file_name(b.name));
    m.goldens.push_back({b.name, b.bytes.size(), sha256_hex(std::span<const std::byte>(b.bytes)), b.kind});
  }
  std::map<std::string, std::string>& flags = m.metadata.converter.flags;
  std::erase_if(flags, [](const auto& kv) { return kv.first.starts_with("golden-"); });
  for (auto& [k, v] : golden_flags(options)) flags[k] = v;
  canonicalize(m);
  RDRR_RETURN_IF_ERROR(validate_manifest(m).context("manifest"));
  return serialize_manifest(m);
}

// Files "<name>.tmp-<pid>-<hex>" an interrupted --make-goldens left in `dir`.
void remove_stale_temps(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    const size_t at = n.rfind(".tmp-");
    if (at != std::string::npos && e.is_regular_file(ec) && n.find('-', at + 5) != std::string::npos) {
      std::filesystem::remove(e.path(), ec);
    }
  }
}

}  // namespace

Status add_goldens_to_pack(const std::filesystem::path& pack_dir, const std::filesystem::path& src,
                           const GoldenOptions& options, bool sync_to_disk) {
  namespace fs = std::filesystem;
  RDRR_ASSIGN_OR_RETURN(Manifest m, read_manifest_file(pack_dir));
  RDRR_ASSIGN_OR_RETURN(const convert::SourceModel source,
                        convert::SourceModel::open(src, convert::SourceOptions{.fuse_gate_up = false}));
  RDRR_RETURN_IF_ERROR(check_source_matches(m, source.config(), src));
  GoldenInputs in{.manifest = &m, .pack_dir = pack_dir, .src = src, .format = source.format(), .options = options};
  RDRR_ASSIGN_OR_RETURN(const GoldenSet g, generate_golden(in));
  RDRR_ASSIGN_OR_RETURN(const std::vector<GoldenBlob> blobs, encode_golden(g));
  const std::vector<GoldenFile> old = m.goldens;
  // Everything that can fail for a logical reason happens before the first file is touched.
  RDRR_ASSIGN_OR_RETURN(const std::string text, manifest_with_goldens(m, blobs, options));
  remove_stale_temps(pack_dir);
  remove_stale_temps(pack_dir / "golden");
  // Every new file is written under a temporary name first; any failure removes them all.
  const std::string suffix = ".tmp-" + std::to_string(::getpid()) + "-" + random_hex_suffix();
  std::vector<std::pair<fs::path, fs::path>> moves;  // (temp, final); the manifest last
  std::error_code ec;
  const auto write_temp = [&](const fs::path& final_path, const std::string& name,
                              std::span<const std::byte> bytes) -> Status {
    fs::create_directories(final_path.parent_path(), ec);
    if (ec) return error(StatusCode::kIo, final_path.parent_path().string() + ": cannot create: " + ec.message());
    const fs::path temp = final_path.string() + suffix;
    moves.emplace_back(temp, final_path);
    return write_new_file(temp, name, bytes, sync_to_disk).status();
  };
  Status written = Status::Ok();
  for (const GoldenBlob& b : blobs) {
    if (written.ok()) written = write_temp(pack_dir / b.name, b.name, b.bytes);
  }
  if (written.ok()) written = write_temp(pack_dir / "manifest.json", "manifest.json", std::as_bytes(std::span(text)));
  if (!written.ok()) {
    for (const auto& [temp, final_path] : moves) fs::remove(temp, ec);
    return written;
  }
  // The goldens, then the manifest: a crash in between leaves golden bytes the old manifest's hashes reject.
  for (const auto& [temp, final_path] : moves) {
    fs::rename(temp, final_path, ec);
    if (ec) return error(StatusCode::kIo, final_path.string() + ": cannot rename into place: " + ec.message());
  }
  if (sync_to_disk) {
    RDRR_RETURN_IF_ERROR(fsync_dir(pack_dir / "golden"));
    RDRR_RETURN_IF_ERROR(fsync_dir(pack_dir));
  }
  for (const GoldenFile& f : old) {  // files of the old goldens the new manifest no longer lists
    const bool kept = std::any_of(m.goldens.begin(), m.goldens.end(), [&](const GoldenFile& n) { return n.name == f.name; });
    if (!kept) fs::remove(pack_dir / f.name, ec);
  }
  return Status::Ok();
}

std::map<std::string, std::string> golden_flags(const GoldenOptions& o) {
  if (o.prompts == 0) return {{"golden-prompts", "none"}};
  return {{"golden-prompts", std::to_string(o.prompts)},
          {"golden-tokens", std::to_string(o.tokens_per_prompt)},
          {"golden-steps", std::to_string(o.greedy_steps)}};
}

}  // namespace rdrr::verify
