#include "verify/calibration.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

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

// Every layer's H (double), handed out one layer at a time as float.
class ReferenceCalibration final : public convert::LayerCalibration {
 public:
  explicit ReferenceCalibration(std::vector<std::array<std::vector<double>, 4>> h) : h_(std::move(h)) {}
  Result<Hessians> layer_hessians(uint32_t layer, std::array<bool, 4> wanted) override {
    Hessians out;
    if (layer >= h_.size()) return out;
    for (size_t i = 0; i < out.size(); ++i) {
      if (wanted[i]) {
        out[i].resize(h_[layer][i].size());
        std::transform(h_[layer][i].begin(), h_[layer][i].end(), out[i].begin(),
                       [](double v) { return static_cast<float>(v); });
      }
      h_[layer][i] = {};
    }
    return out;
  }

 private:
  std::vector<std::array<std::vector<double>, 4>> h_;
};

// One sample of the model: from `start`, temperature 1, uniforms from `state`. Every position (the last one
// too) runs once, through `observer`.
Result<std::vector<int32_t>> sample_sequence(const ReferenceModel& model, int32_t start, size_t length,
                                             uint64_t state, const ReferenceModel::LinearInputObserver& observer) {
  std::vector<int32_t> seq = {start};
  ReferenceModel::KvCache cache;
  int32_t token = start;
  while (true) {
    RDRR_ASSIGN_OR_RETURN(std::vector<float> logits,
                          model.extend(cache, std::span<const int32_t>(&token, 1), &observer));
    if (seq.size() >= length) break;
    const std::vector<double> l(logits.begin(), logits.end());
    token = sample_token(l, state);
    seq.push_back(token);
  }
  return seq;
}

}  // namespace

Result<std::unique_ptr<tok::Tokenizer>> source_tokenizer(const convert::CalibrationContext& ctx,
                                                         const convert::ModelConfig& config, std::string& why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(ctx.src, ec)) {
    Result<std::unique_ptr<tok::Tokenizer>> tk = tok::load_tokenizer(ctx.src);
    if (tk.ok()) return tk;
    why = tk.status().to_string();
    return std::unique_ptr<tok::Tokenizer>();
  }
  if (!config.gguf_tokenizer_json) {
    why = ctx.src.string() + " carries no tokenizer";
    return std::unique_ptr<tok::Tokenizer>();
  }
  // The loader reads files: the GGUF's tokenizer metadata through a private temporary folder.
  static std::atomic<uint64_t> counter{0};
  const fs::path dir = fs::temp_directory_path(ec) /
                       ("rdrr-calibration-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  if (ec || !fs::create_directories(dir, ec)) {
    return error(StatusCode::kIo, "calibration: cannot create a temporary folder " + dir.string() + ": " + ec.message());
  }
  const fs::path file = dir / convert::kGgufTokenizerFileName;
  Result<std::unique_ptr<tok::Tokenizer>> tk = [&]() -> Result<std::unique_ptr<tok::Tokenizer>> {
    std::ofstream out(file, std::ios::binary);
    out << *config.gguf_tokenizer_json;
    out.close();
    if (!out) return error(StatusCode::kIo, "calibration: cannot write " + file.string());
    return tok::load_tokenizer_file(file);
  }();
  fs::remove_all(dir, ec);
  if (tk.ok()) return tk;
  why = tk.status().to_string();
  return std::unique_ptr<tok::Tokenizer>();
}

// The text cut at paragraph breaks, each paragraph encoded (with BOS) and cut to sequence_tokens.
Result<std::vector<std::vector<int32_t>>> calibration_sequences(const tok::Tokenizer& tk, size_t vocab,
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

Result<std::optional<CalibrationSet>> calibration_set(const convert::CalibrationContext& ctx,
                                                      const convert::ModelConfig& config, size_t vocab,
                                                      const CalibrationOptions& options,
                                                      convert::CalibrationOutput& out) {
  std::string why;
  RDRR_ASSIGN_OR_RETURN(std::unique_ptr<tok::Tokenizer> tk, source_tokenizer(ctx, config, why));
  if (!tk) {
    out.warnings.push_back("calibration skipped: " + why + " (Q4_K rounded without calibration)");
    return std::optional<CalibrationSet>();
  }
  CalibrationSet set;
  RDRR_ASSIGN_OR_RETURN(set.sequences, calibration_sequences(*tk, vocab, options));
  for (const auto& s : set.sequences) set.text_tokens += s.size();
  set.start = tk->bos_id().value_or(set.sequences.empty() ? 0 : set.sequences.front().front());
  return std::optional<CalibrationSet>(std::move(set));
}

std::string calibration_description(size_t text_tokens, const CalibrationOptions& options) {
  return std::to_string(text_tokens) + " text tokens + " + std::to_string(options.samples) + " samples x " +
         std::to_string(options.sample_tokens) + " tokens";
}

Result<convert::CalibrationOutput> calibrate_reference(const convert::CalibrationContext& ctx,
                                                       const CalibrationOptions& options) {
  convert::CalibrationOutput out;
  RDRR_ASSIGN_OR_RETURN(ReferenceModel model, ReferenceModel::load_source(ctx.src));
  RDRR_ASSIGN_OR_RETURN(std::optional<CalibrationSet> set,
                        calibration_set(ctx, model.config(), model.vocab_size(), options, out));
  if (!set) return out;
  std::vector<std::array<std::vector<double>, 4>> h(model.config().architecture.num_layers);
  const ReferenceModel::LinearInputObserver observe = [&](size_t layer, ReferenceModel::LinearInput which,
                                                          const Matrix& x) {
    accumulate_moments(h[layer][static_cast<size_t>(which)], x);
  };
  size_t total = 0;
  for (const std::vector<int32_t>& s : set->sequences) {  // the text, then the samples (observed as drawn)
    total += s.size();
    RDRR_RETURN_IF_ERROR(model.observe_linear_inputs(s, observe).context("calibration"));
  }
  for (size_t n = 0; n < options.samples; ++n) {
    RDRR_ASSIGN_OR_RETURN(std::vector<int32_t> s,
                          sample_sequence(model, set->start, options.sample_tokens, options.seed + n, observe));
    total += s.size();
  }
  for (auto& layer : h) {
    for (std::vector<double>& m : layer) {
      mirror_lower(m);
      for (double& v : m) v /= static_cast<double>(total);
    }
  }
  out.session = std::make_unique<ReferenceCalibration>(std::move(h));
  out.tokens = total;
  out.description = calibration_description(set->text_tokens, options);
  return out;
}

convert::Calibrator make_reference_calibrator(CalibrationOptions options) {
  return [options](const convert::CalibrationContext& ctx) { return calibrate_reference(ctx, options); };
}

}  // namespace rdrr::verify
