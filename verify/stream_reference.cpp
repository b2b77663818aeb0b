// StreamingReference: layer-at-a-time passes over streamed weights (see the header).
#include "verify/stream_reference.h"

#include "verify/stream_reference_internal.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "convert/source.h"
#include "quant/blas.h"
#include "rdrr/manifest_json.h"
#include "rdrr/shard_reader.h"
#include "rdrr/validate.h"
#include "verify/reference_load.h"
#include "verify/reference_weights.h"

namespace rdrr::verify {

namespace {

using M = ModelTensor;

Status resolve(StreamingReference::State& s) {
  const ReferenceWeights& w = *s.weights;
  const auto& a = s.config.architecture;
  const TensorRoot root = text_model_root(w);
  RDRR_ASSIGN_OR_RETURN(s.embed, matrix_source(w, a, root, M::kEmbedTokens));
  RDRR_ASSIGN_OR_RETURN(s.final_norm, read_checked(w, a, root, M::kFinalNorm));
  s.head = s.embed;
  if (!s.config.tied_embeddings && !s.config.inference.output.tie_word_embeddings) {
    RDRR_ASSIGN_OR_RETURN(s.head, matrix_source(w, a, head_root(w), M::kLmHead));
  }
  for (uint32_t i = 0; i < a.num_layers; ++i) {
    RDRR_ASSIGN_OR_RETURN(LayerLinears l, layer_linears(w, s.config, root, i));
    RDRR_ASSIGN_OR_RETURN(LayerParams p, layer_params(w, s.config, root, i));
    RDRR_ASSIGN_OR_RETURN(std::vector<ExpertLinears> e, expert_linears(w, s.config, root, i));
    s.linears.push_back(std::move(l));
    s.experts.push_back(std::move(e));
    s.params.push_back(std::move(p));
  }
  return Status::Ok();
}

uint64_t ceil_to(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

// Rows of activations at or below which each row is a matrix-vector product: a GEMM would first repack the
// weight chunk (measured: the repacking cost more than the products for decode steps).
constexpr size_t kGemvMaxRows = 8;

// y[t, 0..n) (row stride ldy) = x[t] . w[0..n) for t < t_rows; w is [n, k] row-major.
void multiply_chunk(std::span<const float> x, size_t t_rows, const float* w, uint64_t n, uint64_t k, float* y,
                    uint64_t ldy) {
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  if (t_rows <= kGemvMaxRows) {
    for (size_t t = 0; t < t_rows; ++t) {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, ni, ki, 1.0f, w, ki, x.data() + t * k, 1, 0.0f, y + t * ldy, 1);
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(t_rows), ni, ki, 1.0f, x.data(), ki, w, ki,
              0.0f, y, static_cast<int>(ldy));
}

// Weight rows at least in one chunk task of a GEMM: every chunk re-packs the activations, so a chunk of few rows
// spends more time packing than multiplying.
constexpr uint64_t kGemmMinChunkRows = 256;

// Rows of one chunk task: a multiple of the tensor's row alignment.
uint64_t chunk_rows(const StreamingReference::State& s, const LinearSource& src, uint64_t align, size_t t_rows) {
  uint64_t rows = std::max<uint64_t>(1, s.options.chunk_bytes / (src.in_features * sizeof(float)));
  if (t_rows > kGemvMaxRows) rows = std::max(rows, kGemmMinChunkRows);
  return ceil_to(rows, align);
}

// y [T, src.rows] (f32) = x [T, K] W^T over the map's rows, streamed in chunks on the tensor's aligned grid.
Status streamed_matmul(const StreamingReference::State& s, const LinearSource& src, std::span<const float> x,
                       size_t t_rows, quant::UninitVector<float>& y) {
  const ReferenceWeights& w = *s.weights;
  const uint64_t k = src.in_features, begin = src.row_begin, end = src.row_begin + src.rows;
  RDRR_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, w.shape(src.weight));
  const uint64_t n = static_cast<uint64_t>(shape[0]);
  const uint64_t align = std::max<uint64_t>(1, w.row_alignment(src.weight));
  const uint64_t step = chunk_rows(s, src, align, t_rows), first = begin / align * align;
  const uint64_t read_end = std::min(n, ceil_to(end, align));
  const uint64_t chunks = (read_end - first + step - 1) / step;
  y.resize(t_rows * src.rows);  // every element is written by exactly one chunk
  std::mutex mu;
  Status failure = Status::Ok();
  tbb::parallel_for(uint64_t{0}, chunks, [&](uint64_t c) {
    const uint64_t a = first + c * step, b = std::min(a + step, read_end);
    std::unique_ptr<ChunkScratch> scratch = s.scratch.take();
    quant::UninitVector<float>& rows = scratch->rows;
    rows.resize((b - a) * k);
    // Isolated: while the decode's nested parallel loop waits, this thread must not start another chunk task
    // (that could nest without bound).
    Status st = tbb::this_task_arena::isolate([&] { return w.read_rows_f32(src.weight, a, b - a, rows, scratch->read); });
    const uint64_t u0 = std::max(a, begin), u1 = std::min(b, end);
    if (st.ok() && u1 > u0) multiply_chunk(x, t_rows, rows.data() + (u0 - a) * k, u1 - u0, k,
                                           y.data() + (u0 - begin), src.rows);
    s.scratch.give(std::move(scratch));
    if (!st.ok()) {
      const std::lock_guard lock(mu);
      if (failure.ok()) failure = std::move(st);
    }
  });
  s.resident.note(w, src.weight, s.options.resident_bytes);
  return failure;
}

}  // namespace

namespace stream_detail {

// The map applied to activations x (double): f32 matmul, bias added, back to double.
Result<Matrix> apply_linear(const StreamingReference::State& s, const LinearSource& src, const Matrix& x) {
  // The f32 input and output reuse pooled buffers: fresh ones of this size (up to hundreds of MB in a
  // calibration pass) would be mapped, faulted in page by page, zeroed and unmapped on every call.
  std::unique_ptr<ChunkScratch> io = s.linear_io.take();
  quant::UninitVector<float>& xf = io->rows;
  quant::UninitVector<float>& y = io->out;
  xf.resize(x.data.size());
  constexpr size_t kConvertGrain = 1 << 16;  // values per conversion task
  tbb::parallel_for(tbb::blocked_range<size_t>(0, xf.size(), kConvertGrain), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) xf[i] = static_cast<float>(x.data[i]);
  });
  const Status st = streamed_matmul(s, src, xf, x.rows, y);
  Matrix out;
  if (st.ok()) {
    out = Matrix::uninitialized(x.rows, src.rows);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, out.data.size(), kConvertGrain),
                      [&](const tbb::blocked_range<size_t>& r) {
                        for (size_t i = r.begin(); i < r.end(); ++i) out.data[i] = y[i];
                      });
  }
  s.linear_io.give(std::move(io));
  RDRR_RETURN_IF_ERROR(st);
  if (!src.bias.empty()) {
    RDRR_ASSIGN_OR_RETURN(const std::vector<float> bias, s.weights->read_f32(src.bias));
    for (size_t t = 0; t < out.rows; ++t) {
      for (size_t o = 0; o < out.cols; ++o) out.data[t * out.cols + o] += bias[o];
    }
  }
  return out;
}

// Embedding rows of `tokens` times the embedding scale: each aligned group of the embedding decoded once, one
// group in memory at a time.
Result<Matrix> embed_tokens(const StreamingReference::State& s, std::span<const int32_t> tokens) {
  const uint64_t hidden = s.embed.in_features, vocab = s.embed.rows;
  const uint64_t align = std::max<uint64_t>(1, s.weights->row_alignment(s.embed.weight));
  const double scale = s.config.inference.output.embedding_scale;
  std::vector<std::pair<uint64_t, size_t>> order;  // (group, token index)
  for (size_t t = 0; t < tokens.size(); ++t) order.emplace_back(static_cast<uint64_t>(tokens[t]) / align * align, t);
  std::sort(order.begin(), order.end());
  Matrix h(tokens.size(), hidden);
  std::vector<float> group;
  for (size_t i = 0; i < order.size();) {
    const uint64_t g = order[i].first, rows = std::min(align, vocab - g);
    group.resize(rows * hidden);
    RDRR_RETURN_IF_ERROR(s.weights->read_rows_f32(s.embed.weight, g, rows, group));
    for (; i < order.size() && order[i].first == g; ++i) {
      const size_t t = order[i].second;
      const float* e = group.data() + (static_cast<uint64_t>(tokens[t]) - g) * hidden;
      for (size_t k = 0; k < hidden; ++k) h.data[t * hidden + k] = static_cast<double>(e[k]) * scale;
    }
  }
  s.resident.note(*s.weights, s.embed.weight, s.options.resident_bytes);
  return h;
}

Status run_layer(const StreamingReference::State& s, size_t layer, Matrix& h, std::span<const BatchSegment> segments,
                 const ObserveLinearInput& observe) {
  Status failure = Status::Ok();
  const auto apply = [&](const Matrix& x, const LinearSource& src) {
    Result<Matrix> y = failure.ok() ? apply_linear(s, src, x) : Result<Matrix>(failure);
    if (y.ok()) return std::move(*y);
    if (failure.ok()) failure = y.status();
    return Matrix(x.rows, src.rows);
  };
  const ApplyExpert expert = [&](LayerLinear which, uint32_t e, const Matrix& x) {
    return apply(x, s.experts[layer][e][expert_slot(which)]);
  };
  run_decoder_layer(s.config, s.params[layer], [&](LayerLinear which, const Matrix& x) {
    return apply(x, s.linears[layer][static_cast<size_t>(which)]);
  }, h, segments, observe, expert);
  return failure.context("layer " + std::to_string(layer));
}

Status forward(const StreamingReference::State& s, Matrix& h, std::vector<Sequence>& seqs,
               std::span<const std::pair<size_t, size_t>> rows_of,
               const ReferenceModel::LinearInputObserver* observer) {
  for (size_t layer = 0; layer < s.linears.size(); ++layer) {
    std::vector<BatchSegment> segments;
    size_t row = 0;
    for (const auto& [seq, rows] : rows_of) {
      segments.push_back({.row_begin = row, .rows = rows, .k = &seqs[seq].k[layer], .v = &seqs[seq].v[layer]});
      row += rows;
    }
    ObserveLinearInput observe;
    if (observer != nullptr) {
      observe = [observer, layer](LinearInput which, const Matrix& x) { (*observer)(layer, which, x); };
    }
    RDRR_RETURN_IF_ERROR(run_layer(s, layer, h, segments, observe));
  }
  return Status::Ok();
}

// Logits [rows, vocab] of the chosen rows of h (final norm, streamed head, softcapping).
Result<Matrix> head_logits(const StreamingReference::State& s, const Matrix& h, std::span<const size_t> rows) {
  Matrix x(rows.size(), h.cols);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy_n(h.row(rows[r]).begin(), h.cols, x.row(r).begin());
  }
  final_norm(s.config, s.final_norm, x);
  RDRR_ASSIGN_OR_RETURN(Matrix logits, apply_linear(s, s.head, x));
  softcap_logits(s.config, logits);
  return logits;
}

Status check_tokens(std::span<const int32_t> tokens, uint64_t vocab, const std::string& what) {
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || static_cast<uint64_t>(tokens[t]) >= vocab) {
      return error(StatusCode::kInvalidArgument, what + ": token " + std::to_string(t) + " id " +
                                                     std::to_string(tokens[t]) + " outside [0, " +
                                                     std::to_string(vocab) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace stream_detail

namespace {

using namespace stream_detail;

// Appends the greedy token of a logits row (and its margin) to `out`; returns the token.
int32_t take_greedy(std::span<const double> logits, GreedyResult& out) {
  const auto [best, margin] = top1_with_margin(logits);
  out.token_ids.push_back(best);
  out.top1_margins.push_back(margin);
  return best;
}

Status check_request(const StreamRequest& r, size_t index, uint64_t vocab) {
  const std::string what = "request " + std::to_string(index);
  if (r.tokens.empty()) return error(StatusCode::kInvalidArgument, what + ": empty token sequence");
  RDRR_RETURN_IF_ERROR(check_tokens(r.tokens, vocab, what));
  for (size_t i = 0; i < r.positions.size(); ++i) {
    if (r.positions[i] >= r.tokens.size() || (i > 0 && r.positions[i] <= r.positions[i - 1])) {
      return error(StatusCode::kInvalidArgument, what + ": positions must ascend inside the prompt of " +
                                                     std::to_string(r.tokens.size()) + " tokens");
    }
  }
  return Status::Ok();
}

}  // namespace

StreamingReference::StreamingReference(std::unique_ptr<State> s) : s_(std::move(s)) {}
StreamingReference::StreamingReference(StreamingReference&&) noexcept = default;
StreamingReference& StreamingReference::operator=(StreamingReference&&) noexcept = default;
StreamingReference::~StreamingReference() = default;

Result<StreamingReference> StreamingReference::open_source(const std::filesystem::path& src, StreamOptions options) {
  quant::use_single_threaded_blas();
  auto s = std::make_unique<State>();
  s->options = options;
  // Unfused: a stored gate_up_proj (Phi-3) stays fused, and layer_linears splits it by rows.
  RDRR_ASSIGN_OR_RETURN(convert::SourceModel source,
                        convert::SourceModel::open(src, convert::SourceOptions{.fuse_gate_up = false}));
  s->source = std::make_unique<convert::SourceModel>(std::move(source));
  s->config = s->source->config();
  s->weights = source_weights(*s->source);
  RDRR_RETURN_IF_ERROR(resolve(*s).context(src.string()));
  return StreamingReference(std::move(s));
}

Result<StreamingReference> StreamingReference::open_pack(const Manifest& manifest,
                                                         const std::filesystem::path& pack_dir, StreamOptions options) {
  quant::use_single_threaded_blas();
  const std::string ctx = "pack " + pack_dir.string();
  RDRR_RETURN_IF_ERROR(
      validate_model_parameters(manifest.architecture, manifest.inference, manifest.tokenizer).context(ctx));
  auto s = std::make_unique<State>();
  s->options = options;
  s->manifest = std::make_unique<Manifest>(manifest);
  Result<ShardReader> reader = ShardReader::open(pack_dir, manifest.shards);
  if (!reader.ok()) return reader.status().context(ctx);
  s->reader = std::make_unique<ShardReader>(std::move(*reader));
  s->config = model_config_from_manifest(*s->manifest);
  s->weights = pack_weights(*s->manifest, *s->reader);
  RDRR_RETURN_IF_ERROR(resolve(*s).context(ctx));
  return StreamingReference(std::move(s));
}

Result<StreamingReference> StreamingReference::open_pack(const std::filesystem::path& pack_dir,
                                                         StreamOptions options) {
  RDRR_ASSIGN_OR_RETURN(const Manifest manifest, read_manifest_file(pack_dir));
  return open_pack(manifest, pack_dir, options);
}

const convert::ModelConfig& StreamingReference::config() const { return s_->config; }
size_t StreamingReference::vocab_size() const { return s_->head.rows; }

Result<std::vector<StreamResponse>> StreamingReference::run(std::span<const StreamRequest> requests,
                                                            const ReferenceModel::LinearInputObserver* observer) const {
  const State& s = *s_;
  const size_t vocab = vocab_size(), layers = s.linears.size();
  std::vector<Sequence> seqs(requests.size(), Sequence{std::vector<Matrix>(layers), std::vector<Matrix>(layers)});
  std::vector<StreamResponse> out(requests.size());
  // Pass 0: every prompt. Logits at the requested positions and at the last one (the first greedy token).
  std::vector<int32_t> tokens;
  std::vector<std::pair<size_t, size_t>> rows_of;
  std::vector<size_t> wanted;  // rows of h whose logits are needed
  for (size_t i = 0; i < requests.size(); ++i) {
    RDRR_RETURN_IF_ERROR(check_request(requests[i], i, vocab));
    const size_t base = tokens.size();
    tokens.insert(tokens.end(), requests[i].tokens.begin(), requests[i].tokens.end());
    rows_of.emplace_back(i, requests[i].tokens.size());
    for (uint32_t p : requests[i].positions) wanted.push_back(base + p);
    if (requests[i].greedy_steps > 0) wanted.push_back(base + requests[i].tokens.size() - 1);
  }
  if (tokens.empty()) return out;
  RDRR_ASSIGN_OR_RETURN(Matrix h, embed_tokens(s, tokens));
  RDRR_RETURN_IF_ERROR(forward(s, h, seqs, rows_of, observer));
  RDRR_ASSIGN_OR_RETURN(const Matrix logits, head_logits(s, h, wanted));
  std::vector<int32_t> next(requests.size(), 0);
  size_t row = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    for (size_t p = 0; p < requests[i].positions.size(); ++p, ++row) {
      for (double v : logits.row(row)) out[i].logits.push_back(static_cast<float>(v));
    }
    if (requests[i].greedy_steps > 0) next[i] = take_greedy(logits.row(row++), out[i].greedy);
  }
  // Greedy passes: the sequences still stepping run their last token, all together.
  for (size_t step = 1;; ++step) {
    std::vector<int32_t> step_tokens;
    rows_of.clear();
    for (size_t i = 0; i < requests.size(); ++i) {
      if (step < requests[i].greedy_steps) {
        step_tokens.push_back(next[i]);
        rows_of.emplace_back(i, 1);
      }
    }
    if (step_tokens.empty()) break;
    RDRR_ASSIGN_OR_RETURN(Matrix hs, embed_tokens(s, step_tokens));
    RDRR_RETURN_IF_ERROR(forward(s, hs, seqs, rows_of, observer));
    std::vector<size_t> all(step_tokens.size());
    for (size_t r = 0; r < all.size(); ++r) all[r] = r;
    RDRR_ASSIGN_OR_RETURN(const Matrix step_logits, head_logits(s, hs, all));
    for (size_t r = 0; r < rows_of.size(); ++r) {
      const size_t i = rows_of[r].first;
      next[i] = take_greedy(step_logits.row(r), out[i].greedy);
    }
  }
  return out;
}

Result<std::vector<float>> StreamingReference::logits(std::span<const int32_t> tokens) const {
  StreamRequest r{.tokens = {tokens.begin(), tokens.end()}, .positions = {}, .greedy_steps = 0};
  for (uint32_t p = 0; p < tokens.size(); ++p) r.positions.push_back(p);
  RDRR_ASSIGN_OR_RETURN(std::vector<StreamResponse> out, run(std::span(&r, 1)));
  return std::move(out[0].logits);
}

uint64_t StreamingReference::working_bytes(size_t rows, size_t logit_rows, size_t threads) const {
  const State& s = *s_;
  const auto& a = s.config.architecture;
  uint64_t chunk = 0;
  auto consider = [&](const LinearSource& src) {
    const uint64_t align = std::max<uint64_t>(1, s.weights->row_alignment(src.weight));
    chunk = std::max(chunk, chunk_rows(s, src, align, rows) * src.in_features * sizeof(float));
  };
  consider(s.head);
  for (const LayerLinears& l : s.linears) {
    for (const LinearSource& src : l) {
      if (!src.weight.empty()) consider(src);
    }
  }
  for (const std::vector<ExpertLinears>& layer : s.experts) {
    for (const ExpertLinears& e : layer) {
      for (const LinearSource& src : e) consider(src);
    }
  }
  // The widest activation row: the MLP's, a shared expert's, or a token's selected experts' gate_up.
  const uint64_t width = std::max({a.hidden_size, a.intermediate_size, a.moe.shared_expert_intermediate_size,
                                   uint64_t{a.moe.experts_per_token} * 2 * a.moe.expert_intermediate_size});
  const uint64_t acts = rows * width * 8 * (sizeof(double) + sizeof(float));
  const uint64_t kv = rows * a.num_layers * a.num_key_value_heads * a.head_dim * 2 * sizeof(double);
  const uint64_t logits = logit_rows * s.head.rows * (2 * sizeof(double) + 2 * sizeof(float));
  return chunk * threads + s.options.resident_bytes + acts + kv + logits;
}

}  // namespace rdrr::verify
