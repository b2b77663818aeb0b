#include "verify/golden_gen.h"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "verify/reference_model.h"

namespace rdrr::verify {
namespace {

struct Plan {
  std::vector<std::vector<int32_t>> prompts;
  GoldenStorage storage;
  size_t greedy_steps = 0;
};

// Logits at the stored positions and the greedy continuation of every prompt.
Result<std::vector<GoldenRun>> run_reference(const ReferenceModel& model, const Plan& plan, uint64_t vocab,
                                             const std::string& what) {
  if (model.vocab_size() != vocab) {
    return error(StatusCode::kValidation, what + ": vocabulary of " + std::to_string(model.vocab_size()) +
                                              " tokens, the manifest's vocabSize is " + std::to_string(vocab));
  }
  std::vector<GoldenRun> runs;
  for (size_t i = 0; i < plan.prompts.size(); ++i) {
    const std::vector<int32_t>& tokens = plan.prompts[i];
    GoldenRun run;
    RDRR_ASSIGN_OR_RETURN(std::vector<float> all, model.logits(tokens).context(what));
    for (uint32_t p : plan.storage.positions[i]) {
      const auto row = all.begin() + static_cast<std::ptrdiff_t>(p * vocab);
      run.logits.insert(run.logits.end(), row, row + static_cast<std::ptrdiff_t>(vocab));
    }
    if (plan.greedy_steps > 0) {
      RDRR_ASSIGN_OR_RETURN(GreedyResult g, model.greedy(tokens, plan.greedy_steps).context(what));
      run.greedy_token_ids = std::move(g.token_ids);
      run.greedy_top1_margins = std::move(g.top1_margins);
    }
    runs.push_back(std::move(run));
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

Result<ReferenceModel> load_source(const GoldenInputs& in) {
  return ReferenceModel::load_source(in.src).context("source " + in.src.string());
}

}  // namespace

Result<GoldenSet> generate_golden(const GoldenInputs& in) {
  const Manifest& m = *in.manifest;
  const GoldenOptions& o = in.options;
  Plan plan;
  std::vector<std::string> texts;
  if (auto tp = text_prompts(in)) {
    plan.prompts = std::move(tp->first);
    texts = std::move(tp->second);
  } else {
    RDRR_ASSIGN_OR_RETURN(plan.prompts, golden_prompts(m, o));
  }
  std::vector<size_t> lengths;
  for (const auto& p : plan.prompts) lengths.push_back(p.size());
  plan.storage = choose_golden_storage(m.architecture.vocab_size, lengths, o.budget_bytes);
  plan.greedy_steps = o.greedy_steps;

  GoldenSet g;
  g.vocab_size = m.architecture.vocab_size;
  g.greedy_steps = o.greedy_steps;
  g.value_type = plan.storage.value_type;
  g.source = {"rdrr-verify CPU reference (double accumulation)", std::string(source_format_name(in.format))};
  g.pack = {"rdrr-verify CPU reference (double accumulation)", "pack"};
  std::vector<GoldenRun> source_runs, pack_runs;
  {  // one model in memory at a time
    RDRR_ASSIGN_OR_RETURN(ReferenceModel src, load_source(in));
    RDRR_ASSIGN_OR_RETURN(source_runs, run_reference(src, plan, g.vocab_size, "source reference"));
  }
  {
    RDRR_ASSIGN_OR_RETURN(ReferenceModel pack, ReferenceModel::load_pack(m, in.pack_dir).context("pack"));
    RDRR_ASSIGN_OR_RETURN(pack_runs, run_reference(pack, plan, g.vocab_size, "pack reference"));
  }
  for (size_t i = 0; i < plan.prompts.size(); ++i) {
    g.prompts.push_back({i < texts.size() ? texts[i] : std::string(), std::move(plan.prompts[i]),
                         std::move(plan.storage.positions[i]), std::move(source_runs[i]), std::move(pack_runs[i])});
  }
  return g;
}

uint64_t reference_f32_bytes(const Manifest& m) {
  uint64_t elems = 0;
  for (const TensorEntry& t : m.tensors) {
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    elems += n;
  }
  return elems * sizeof(float);
}

convert::GoldenWriter make_golden_writer(const GoldenOptions& options) {
  return [options](const convert::GoldenContext& ctx) -> Result<convert::GoldenOutput> {
    convert::GoldenOutput out;
    if (options.prompts == 0) return out;
    const uint64_t need = reference_f32_bytes(*ctx.manifest);
    uint64_t limit = options.max_reference_bytes;
    if (limit == 0) {
      const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
      limit = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4 * 3 : UINT64_MAX;
    }
    if (need > limit) {
      out.warnings.push_back("goldens skipped: the CPU reference needs " + std::to_string(need >> 20) +
                             " MiB for the f32 weights, the limit is " + std::to_string(limit >> 20) +
                             " MiB (75% of the physical memory); rdrr-verify will skip its golden gates");
      out.flags = golden_flags({.prompts = 0});
      return out;
    }
    GoldenInputs in{.manifest = ctx.manifest, .pack_dir = ctx.pack_dir, .src = ctx.src, .format = ctx.format,
                    .options = options};
    RDRR_ASSIGN_OR_RETURN(GoldenSet g, generate_golden(in));
    RDRR_ASSIGN_OR_RETURN(std::vector<GoldenBlob> blobs, encode_golden(g));
    for (GoldenBlob& b : blobs) out.files.push_back({std::move(b.name), std::move(b.kind), std::move(b.bytes)});
    return out;
  };
}

std::map<std::string, std::string> golden_flags(const GoldenOptions& o) {
  if (o.prompts == 0) return {{"golden-prompts", "none"}};
  return {{"golden-prompts", std::to_string(o.prompts)},
          {"golden-tokens", std::to_string(o.tokens_per_prompt)},
          {"golden-steps", std::to_string(o.greedy_steps)}};
}

}  // namespace rdrr::verify
