#include "verify/calibration.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>

#include "tokenizer/tokenizer.h"
#include "verify/reference_model.h"
#include "verify/splitmix.h"

namespace rdrr::verify {
namespace {

constexpr std::string_view kText =
    "The river rose slowly through the night, and by morning the lower fields were under a sheet of brown "
    "water. Farmers stood at the edge of the road with their hands in their pockets, talking about the last "
    "flood, which had come in the spring twenty years before.\n\n"
    "\"Did you lock the back door?\" she asked.\n\"I thought you did,\" he said, and they both laughed, "
    "because neither of them had, and nothing had ever been stolen in that house.\n\n"
    "Permission is granted to copy and distribute this document, provided that the notice above and this "
    "paragraph appear in all copies. The software is provided as is, without warranty of any kind, express "
    "or implied, including but not limited to fitness for a particular purpose. In no event shall the authors "
    "be liable for any claim or damages arising from its use.\n\n"
    "def merge_sorted(a, b):\n    \"\"\"Return one sorted list from two sorted lists.\"\"\"\n    out = []\n"
    "    i = j = 0\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n            out.append(a[i])\n"
    "            i += 1\n        else:\n            out.append(b[j])\n            j += 1\n"
    "    return out + a[i:] + b[j:]\n\n"
    "static int count_bits(unsigned x) {\n  int n = 0;\n  while (x) { x &= x - 1; ++n; }\n  return n;\n}\n\n"
    "A fortune cookie once said: you will travel far, but the best part of the journey is coming home. "
    "Another said: the early bird gets the worm, but the second mouse gets the cheese.\n\n"
    "Table of measurements: 12.5 cm, 7.25 kg, 3,600 seconds, 98.6 degrees, 1024 bytes, 0.001 mm, 42.\n\n"
    "Les enfants jouaient dans le jardin pendant que leurs parents préparaient le repas du soir. « Déjà "
    "fini ? » demanda l’aîné, déçu.\n\n"
    "She called it a “temporary” fix — the kind that lasts for years — and nobody’s complained since; "
    "naïve, maybe, but it works. Größe: 5 µm ± 0.2, 23 °C, €12.50.\n\n"
    "To install the package, download the archive, extract it into a new directory, and run the setup "
    "script. If the script reports a missing library, install it with your system's package manager and "
    "run the script again. Errors are written to the log file in the same directory.\n\n"
    "Help on function split in module os.path: split(p) Split a pathname. Returns a tuple (head, tail) where "
    "tail is everything after the final slash. Either part may be empty.\n\n"
    "The committee met on Tuesday to discuss the budget. After a long debate, the members agreed to delay "
    "the vote until the next meeting, when the final figures from the treasurer would be available.";

}  // namespace

std::string_view calibration_text() { return kText; }

namespace {

// The text cut at paragraph breaks, each paragraph encoded (with BOS) and cut to sequence_tokens.
Result<std::vector<std::vector<int32_t>>> text_sequences(const tok::Tokenizer& tk, size_t vocab,
                                                         const CalibrationOptions& options) {
  std::vector<std::vector<int32_t>> seqs;
  size_t total = 0;
  std::string_view rest = kText;
  while (!rest.empty() && total < options.max_tokens) {
    const size_t cut = rest.find("\n\n");
    const std::string_view para = rest.substr(0, cut);
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 2);
    RDRR_ASSIGN_OR_RETURN(std::vector<tok::TokenId> ids, tk.encode(para));
    std::vector<int32_t> seq;
    for (tok::TokenId id : ids) {
      if (id >= 0 && static_cast<size_t>(id) < vocab) seq.push_back(id);
    }
    seq.resize(std::min({seq.size(), options.sequence_tokens, options.max_tokens - total}));
    if (seq.size() < 2) continue;
    total += seq.size();
    seqs.push_back(std::move(seq));
  }
  return seqs;
}

// One sample of the model: from `start`, temperature 1, uniforms from a SplitMix64 stream (`state`). Every
// position (the last one too) runs once, through `observer`.
Result<std::vector<int32_t>> sample_sequence(const ReferenceModel& model, int32_t start, size_t length,
                                             uint64_t& state, const ReferenceModel::LinearInputObserver& observer) {
  std::vector<int32_t> seq = {start};
  ReferenceModel::KvCache cache;
  int32_t token = start;
  while (true) {
    RDRR_ASSIGN_OR_RETURN(std::vector<float> logits,
                          model.extend(cache, std::span<const int32_t>(&token, 1), &observer));
    if (seq.size() >= length) break;
    double mx = -INFINITY;
    for (float l : logits) mx = std::max(mx, static_cast<double>(l));
    std::vector<double> p(logits.size());
    double z = 0;
    for (size_t i = 0; i < p.size(); ++i) z += (p[i] = std::exp(static_cast<double>(logits[i]) - mx));
    double u = splitmix64_unit(state) * z;
    size_t pick = 0;
    while (pick + 1 < p.size() && (u -= p[pick]) >= 0) ++pick;
    token = static_cast<int32_t>(pick);
    seq.push_back(token);
  }
  return seq;
}

// Upper triangle of h += x^T x (k x k); each row of h by one task in token order: the same bits at any
// thread count. mirror_lower() completes h (x_i x_j == x_j x_i exactly, so both halves would be equal).
void accumulate_moments(std::vector<double>& h, const Matrix& x) {
  const size_t k = x.cols;
  if (h.empty()) h.assign(k * k, 0.0);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, k, 8), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) {
      double* hi = h.data() + i * k;
      for (size_t t = 0; t < x.rows; ++t) {
        const double* xt = x.data.data() + t * k;
        const double a = xt[i];
        for (size_t j = i; j < k; ++j) hi[j] += a * xt[j];
      }
    }
  }, tbb::static_partitioner());
}

void mirror_lower(std::vector<double>& h) {
  const auto k = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(h.size()))));
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < i; ++j) h[i * k + j] = h[j * k + i];
  }
}

}  // namespace

Result<convert::CalibrationOutput> calibrate(const convert::CalibrationContext& ctx,
                                             const CalibrationOptions& options) {
  convert::CalibrationOutput out;
  std::error_code ec;
  if (!std::filesystem::is_directory(ctx.src, ec)) {
    out.warnings.push_back("calibration skipped: " + ctx.src.string() +
                           " is not a folder with tokenizer files (Q4_K rounded without calibration)");
    return out;
  }
  Result<std::unique_ptr<tok::Tokenizer>> tk = tok::load_tokenizer(ctx.src);
  if (!tk.ok()) {
    out.warnings.push_back("calibration skipped: " + tk.status().to_string());
    return out;
  }
  RDRR_ASSIGN_OR_RETURN(ReferenceModel model, ReferenceModel::load_source(ctx.src));
  RDRR_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> seqs, text_sequences(**tk, model.vocab_size(), options));
  size_t text_tokens = 0;
  for (const auto& s : seqs) text_tokens += s.size();
  const int32_t start = (*tk)->bos_id().value_or(seqs.empty() ? 0 : seqs.front().front());
  out.hessians.resize(model.config().architecture.num_layers);
  const ReferenceModel::LinearInputObserver observe = [&](size_t layer, ReferenceModel::LinearInput which,
                                                          const Matrix& x) {
    accumulate_moments(out.hessians[layer][static_cast<size_t>(which)], x);
  };
  size_t total = 0;
  for (const std::vector<int32_t>& s : seqs) {  // the text, then the samples (observed as they are drawn)
    total += s.size();
    RDRR_RETURN_IF_ERROR(model.observe_linear_inputs(s, observe).context("calibration"));
  }
  uint64_t state = 0x9E3779B97F4A7C15ull;  // the SplitMix64 seed
  for (size_t n = 0; n < options.samples; ++n) {
    RDRR_ASSIGN_OR_RETURN(std::vector<int32_t> s,
                          sample_sequence(model, start, options.sample_tokens, state, observe));
    total += s.size();
  }
  for (auto& layer : out.hessians) {
    for (std::vector<double>& h : layer) {
      mirror_lower(h);
      for (double& v : h) {
        v /= static_cast<double>(total);
        if (!std::isfinite(v)) {  // NaN/Inf weights: the pipeline names them (or --allow-nonfinite keeps them)
          out.hessians.clear();
          out.warnings.push_back("calibration skipped: the source model's activations are not finite");
          return out;
        }
      }
    }
  }
  out.tokens = total;
  out.description = std::to_string(text_tokens) + " text tokens + " + std::to_string(options.samples) + " samples x " +
                    std::to_string(options.sample_tokens) + " tokens";
  return out;
}

convert::Calibrator make_calibrator(CalibrationOptions options) {
  return [options](const convert::CalibrationContext& ctx) { return calibrate(ctx, options); };
}

}  // namespace rdrr::verify
