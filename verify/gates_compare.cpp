// Gates 5-7 (fidelity, quality, external golden) and the CPU-reference backend.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "rdrr/json_strict.h"
#include "rdrr/mapped_file.h"
#include "verify/gates_internal.h"
#include "verify/metrics.h"
#include "verify/stream_reference.h"

namespace rdrr::verify {
namespace {

class CpuBackend final : public LogitsBackend {
 public:
  explicit CpuBackend(StreamingReference engine) : engine_(std::move(engine)) {}
  std::string name() const override { return "cpu-reference"; }
  bool f16_kv() const override { return false; }
  Result<std::vector<float>> logits(std::span<const int32_t> tokens) override { return engine_.logits(tokens); }
  Result<std::vector<int32_t>> greedy(std::span<const int32_t> prompt, size_t n_new) override {
    const StreamRequest r{.tokens = {prompt.begin(), prompt.end()}, .positions = {}, .greedy_steps = n_new};
    RDRR_ASSIGN_OR_RETURN(std::vector<StreamResponse> out, engine_.run(std::span(&r, 1)));
    return std::move(out[0].greedy.token_ids);
  }
  Result<std::vector<PromptRun>> run_prompts(std::span<const std::vector<int32_t>> prompts,
                                             size_t greedy_steps) override {
    std::vector<StreamRequest> reqs;
    for (const auto& p : prompts) {
      StreamRequest r{.tokens = p, .positions = {}, .greedy_steps = greedy_steps};
      for (uint32_t i = 0; i < p.size(); ++i) r.positions.push_back(i);
      reqs.push_back(std::move(r));
    }
    RDRR_ASSIGN_OR_RETURN(std::vector<StreamResponse> out, engine_.run(reqs));
    std::vector<PromptRun> runs;
    for (StreamResponse& o : out) runs.push_back({std::move(o.logits), std::move(o.greedy.token_ids)});
    return runs;
  }

 private:
  StreamingReference engine_;
};

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

double top1_margin(std::span<const float> row) {
  float a = -INFINITY, b = -INFINITY;
  for (float v : row) {
    if (v > a) {
      b = a;
      a = v;
    } else if (v > b) {
      b = v;
    }
  }
  return static_cast<double>(a) - static_cast<double>(b);
}

// Rows of `all` ([n, vocab]) at `positions`.
std::vector<float> rows_at(const std::vector<float>& all, const std::vector<uint32_t>& positions, uint64_t vocab) {
  std::vector<float> out;
  out.reserve(positions.size() * vocab);
  for (uint32_t p : positions) {
    const auto row = all.begin() + static_cast<std::ptrdiff_t>(p * vocab);
    out.insert(out.end(), row, row + static_cast<std::ptrdiff_t>(vocab));
  }
  return out;
}

const QualityBound* bound_for(const Manifest& m, const Thresholds& t) {
  const auto it = t.quality.find(m.quantization);
  return it == t.quality.end() ? nullptr : &it->second;
}

std::string quality_bound_text(const QualityBound& b) {
  return "KLD mean <= " + sci(b.kld_mean_max) + ", top-1 >= " + sci(b.top1_min * 100) + "%";
}

// Greedy tokens vs the golden's, up to its first near-tie step (there either token is right and later steps
// may differ). Counts compared / identical steps; notes the first mismatch.
void compare_greedy(const GoldenRun& want, const std::vector<int32_t>& have, double eps, size_t prompt,
                    size_t& compared, size_t& identical, std::string& first_problem) {
  for (size_t s = 0; s < want.greedy_token_ids.size() && s < have.size(); ++s) {
    if (want.greedy_top1_margins[s] < eps) return;
    ++compared;
    if (have[s] != want.greedy_token_ids[s]) {
      if (first_problem.empty()) {
        first_problem = "prompt " + std::to_string(prompt) + " greedy step " + std::to_string(s) + ": token " +
                        std::to_string(have[s]) + " != golden " + std::to_string(want.greedy_token_ids[s]);
      }
      return;
    }
    ++identical;
  }
}

}  // namespace

Result<std::unique_ptr<LogitsBackend>> open_cpu_backend(const Manifest& m, const std::filesystem::path& pack_dir) {
  RDRR_ASSIGN_OR_RETURN(StreamingReference engine, StreamingReference::open_pack(m, pack_dir));
  return std::unique_ptr<LogitsBackend>(new CpuBackend(std::move(engine)));
}

Result<std::vector<LogitsBackend::PromptRun>> LogitsBackend::run_prompts(
    std::span<const std::vector<int32_t>> prompts, size_t greedy_steps) {
  std::vector<PromptRun> runs;
  for (const auto& p : prompts) {
    PromptRun r;
    RDRR_ASSIGN_OR_RETURN(r.logits, logits(p));
    if (greedy_steps > 0) {
      RDRR_ASSIGN_OR_RETURN(r.greedy, greedy(p, greedy_steps));
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

namespace internal {

Result<BackendRuns> run_backend(LogitsBackend& backend, const GoldenSet& golden) {
  std::vector<std::vector<int32_t>> prompts;
  for (const GoldenPrompt& p : golden.prompts) prompts.push_back(p.token_ids);
  RDRR_ASSIGN_OR_RETURN(std::vector<LogitsBackend::PromptRun> runs,
                        backend.run_prompts(prompts, golden.greedy_steps).context("golden prompts"));
  BackendRuns r;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].logits.size() != prompts[i].size() * golden.vocab_size) {
      return error(StatusCode::kInternal, "golden prompt " + std::to_string(i) + ": backend returned " +
                                              std::to_string(runs[i].logits.size()) + " logits");
    }
    r.logits.push_back(std::move(runs[i].logits));
    r.greedy.push_back(std::move(runs[i].greedy));
  }
  return r;
}

GateResult gate_fidelity(const BackendRuns& runs, const GoldenSet& golden, const Thresholds& t, bool f16_kv) {
  GateResult g = make_gate(5, "fidelity");
  const double nmse_max = f16_kv ? t.nmse_f16_kv : t.nmse_f32;
  const double eps = t.near_tie_margin;
  const uint64_t vocab = golden.vocab_size;
  double err = 0, ref = 0;
  size_t rows = 0, top1 = 0, near_ties = 0, hard_misses = 0, steps_cmp = 0, steps_ok = 0;
  std::string first_problem;
  for (size_t i = 0; i < golden.prompts.size(); ++i) {
    const GoldenPrompt& p = golden.prompts[i];
    const std::vector<float> got = rows_at(runs.logits[i], p.positions, vocab);
    for (size_t k = 0; k < got.size(); ++k) {
      const double d = static_cast<double>(got[k]) - p.pack.logits[k];
      err += d * d;
      ref += static_cast<double>(p.pack.logits[k]) * p.pack.logits[k];
    }
    for (size_t r = 0; r < p.positions.size(); ++r) {
      const std::span<const float> want(p.pack.logits.data() + r * vocab, vocab);
      const std::span<const float> have(got.data() + r * vocab, vocab);
      ++rows;
      if (argmax(want) == argmax(have)) {
        ++top1;
      } else if (top1_margin(want) < eps) {
        ++near_ties;
      } else if (hard_misses++ == 0) {
        first_problem = "prompt " + std::to_string(i) + " position " + std::to_string(p.positions[r]) + ": top-1 " +
                        std::to_string(argmax(have)) + " != golden " + std::to_string(argmax(want)) + " (margin " +
                        sci(top1_margin(want)) + ")";
      }
    }
    compare_greedy(p.pack, runs.greedy[i], eps, i, steps_cmp, steps_ok, first_problem);
  }
  const double nmse = ref > 0 ? err / ref : err;
  g.figure = "NMSE " + sci(nmse) + ", top-1 " + std::to_string(top1) + "/" + std::to_string(rows) +
             (near_ties ? " (+" + std::to_string(near_ties) + " near-ties)" : "") + ", greedy " +
             std::to_string(steps_ok) + "/" + std::to_string(steps_cmp) + " steps";
  g.bound = "NMSE <= " + sci(nmse_max) + (f16_kv ? " (F16 KV)" : " (f32)") +
            ", top-1 and greedy identical except near-ties (margin < " + sci(eps) + ")";
  g.metrics = {{"nmse", nmse},          {"nmse_max", nmse_max},         {"positions", rows},
               {"top1_matches", top1},  {"near_ties", near_ties},       {"top1_mismatches", hard_misses},
               {"greedy_steps_compared", steps_cmp}, {"greedy_steps_identical", steps_ok},
               {"near_tie_margin", eps}};
  if (nmse > nmse_max) {
    fail(g, kExitVerifyFidelity, "NMSE " + sci(nmse) + " > " + sci(nmse_max) +
                                     (first_problem.empty() ? "" : "; " + first_problem));
  } else if (hard_misses > 0 || steps_ok != steps_cmp) {
    fail(g, kExitVerifyFidelity, first_problem);
  }
  return g;
}

GateResult gate_quality(const BackendRuns& runs, const GoldenSet& golden, const Manifest& m, const Thresholds& t) {
  GateResult g = make_gate(6, "quality");
  const QualityBound* b = bound_for(m, t);
  if (!b) return skipped(6, "quality", "no quality bound for quantization " + m.quantization + " (--thresholds)");
  g.bound = quality_bound_text(*b) + " (" + m.quantization + ")";
  std::vector<float> ref, got;
  for (size_t i = 0; i < golden.prompts.size(); ++i) {
    const GoldenPrompt& p = golden.prompts[i];
    ref.insert(ref.end(), p.source.logits.begin(), p.source.logits.end());
    const std::vector<float> rows = rows_at(runs.logits[i], p.positions, golden.vocab_size);
    got.insert(got.end(), rows.begin(), rows.end());
  }
  Result<LogitsComparison> c = compare_logits(ref, got, golden.vocab_size);
  if (!c.ok()) {
    fail(g, kExitVerifyQuality, c.status().to_string());
    return g;
  }
  g.figure = "KLD mean " + sci(c->kld_mean) + " (max " + sci(c->kld_max) + "), top-1 " +
             std::to_string(c->top1_matches) + "/" + std::to_string(c->positions);
  g.metrics = {{"kld_mean", c->kld_mean}, {"kld_max", c->kld_max}, {"top1_agreement", c->top1_agreement()},
               {"positions", c->positions}, {"kld_mean_max", b->kld_mean_max}, {"top1_min", b->top1_min}};
  if (c->kld_mean > b->kld_mean_max || c->top1_agreement() < b->top1_min) {
    fail(g, kExitVerifyQuality, "quantization quality below the " + m.quantization + " bound");
  }
  return g;
}

GateResult gate_external(LogitsBackend& backend, const std::filesystem::path& file, const Manifest& m,
                         const Thresholds& t, const std::optional<ExternalAnchor>& anchor) {
  GateResult g = make_gate(7, "external");
  auto bad = [&](const Status& s) {
    fail(g, kExitVerifyQuality, file.string() + ": " + s.to_string());
    return g;
  };
  QualityBound from_anchor;
  const QualityBound* b = bound_for(m, t);
  std::string bound_name = m.quantization;
  if (anchor) {
    from_anchor = {kAnchorKldFactor * anchor->kld_mean, std::max(0.0, anchor->top1 - kAnchorTop1Slack)};
    b = &from_anchor;
    bound_name = "anchor: KLD " + sci(anchor->kld_mean) + ", top-1 " + sci(anchor->top1 * 100) + "% on this file";
  }
  if (!b) return skipped(7, "external", "no quality bound for quantization " + m.quantization + " (--thresholds)");
  g.bound = quality_bound_text(*b) + " (" + bound_name + ")";
  Result<MappedFile> f = MappedFile::open(file);
  if (!f.ok()) return bad(f.status());
  const std::string_view text(reinterpret_cast<const char*>(f->bytes().data()), f->bytes().size());
  Result<nlohmann::json> j = parse_json_strict(text, file.string());
  if (!j.ok()) return bad(j.status());
  std::vector<float> ref, got;
  try {
    if (j->at("schema").get<std::string>() != "tiny-fixture-golden/v1") {
      return bad(error(StatusCode::kSchema, "schema is not tiny-fixture-golden/v1"));
    }
    const uint64_t vocab = j->at("vocab_size").get<uint64_t>();
    if (vocab != m.architecture.vocab_size) {
      return bad(error(StatusCode::kValidation, "vocab_size " + std::to_string(vocab) + " != the pack's " +
                                                    std::to_string(m.architecture.vocab_size)));
    }
    for (const nlohmann::json& p : j->at("prompts")) {
      const auto tokens = p.at("token_ids").get<std::vector<int32_t>>();
      const std::filesystem::path lf = file.parent_path() / p.at("logits_file").get<std::string>();
      Result<MappedFile> lm = MappedFile::open(lf);
      if (!lm.ok()) return bad(lm.status());
      if (lm->size_bytes() != tokens.size() * vocab * sizeof(float)) {
        return bad(error(StatusCode::kValidation, lf.string() + ": " + std::to_string(lm->size_bytes()) +
                                                      " bytes, expected n_tokens x vocab x 4"));
      }
      const size_t n = ref.size();
      ref.resize(n + tokens.size() * vocab);
      std::memcpy(ref.data() + n, lm->bytes().data(), lm->size_bytes());
      Result<std::vector<float>> out = backend.logits(tokens);
      if (!out.ok()) return bad(out.status());
      got.insert(got.end(), out->begin(), out->end());
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(error(StatusCode::kSchema, e.what()));
  }
  Result<LogitsComparison> c = compare_logits(ref, got, m.architecture.vocab_size);
  if (!c.ok()) return bad(c.status());
  g.figure = "KLD mean " + sci(c->kld_mean) + " (max " + sci(c->kld_max) + "), top-1 " +
             std::to_string(c->top1_matches) + "/" + std::to_string(c->positions);
  g.metrics = {{"file", file.string()}, {"kld_mean", c->kld_mean}, {"kld_max", c->kld_max},
               {"top1_agreement", c->top1_agreement()}, {"positions", c->positions},
               {"kld_mean_max", b->kld_mean_max}, {"top1_min", b->top1_min}};
  if (c->kld_mean > b->kld_mean_max || c->top1_agreement() < b->top1_min) {
    fail(g, kExitVerifyQuality, "quality vs " + file.filename().string() + " below the " + bound_name + " bound");
  }
  return g;
}

}  // namespace internal
}  // namespace rdrr::verify
