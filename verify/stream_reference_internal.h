// Internal to verify/stream_reference*.cpp: the engine's state and the pass helpers shared by its entry points
// (stream_reference.cpp: open, run; stream_passes.cpp: sample, LayerPass).
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "convert/source.h"
#include "rdrr/shard_reader.h"
#include "verify/reference_load.h"
#include "verify/reference_weights.h"
#include "verify/stream_reference.h"
#include "quant/uninitialized.h"

namespace rdrr::verify {

// Working memory of one chunk task, reused: fresh multi-MB buffers per chunk would cost a page fault and a
// memset per page (most of the time, measured). A pool, not thread_local: a thread that waits inside a nested
// parallel decode may start another chunk task.
struct ChunkScratch {
  quant::UninitVector<float> rows;
  quant::UninitVector<float> out;
  ReferenceWeights::RowScratch read;
};

class ScratchPool {
 public:
  std::unique_ptr<ChunkScratch> take() {
    const std::lock_guard lock(mu_);
    if (free_.empty()) return std::make_unique<ChunkScratch>();
    std::unique_ptr<ChunkScratch> s = std::move(free_.back());
    free_.pop_back();
    return s;
  }
  void give(std::unique_ptr<ChunkScratch> s) {
    const std::lock_guard lock(mu_);
    free_.push_back(std::move(s));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<ChunkScratch>> free_;
};

// Tensors read since the last release, and their mapped bytes (StreamOptions::resident_bytes).
class ResidentSet {
 public:
  void note(const ReferenceWeights& w, const std::string& name, uint64_t budget) {
    const std::lock_guard lock(mu_);
    if (names_.insert(name).second) bytes_ += w.stored_bytes(name);
    if (bytes_ <= budget) return;
    for (const std::string& n : names_) w.release_rows(n, 0, UINT64_MAX);
    names_.clear();
    bytes_ = 0;
  }

 private:
  std::mutex mu_;
  std::set<std::string> names_;
  uint64_t bytes_ = 0;
};

struct StreamingReference::State {
  StreamOptions options;
  mutable ScratchPool scratch;
  mutable ResidentSet resident;
  mutable ScratchPool linear_io;  // apply_linear's f32 input (rows) and output (out)
  std::unique_ptr<convert::SourceModel> source;  // one of source / (manifest, reader) backs `weights`
  std::unique_ptr<Manifest> manifest;
  std::unique_ptr<ShardReader> reader;
  std::unique_ptr<ReferenceWeights> weights;
  convert::ModelConfig config;
  LinearSource embed, head;  // head == embed when tied
  std::vector<float> final_norm;
  std::vector<LayerLinears> linears;
  std::vector<std::vector<ExpertLinears>> experts;  // per layer: MoE layers' experts (empty for dense layers)
  std::vector<LayerParams> params;
};

namespace stream_detail {

// One sequence of a job: its KV cache per layer.
struct Sequence {
  std::vector<Matrix> k, v;
};

// The map applied to activations x (double): f32 matmul, bias added, back to double.
Result<Matrix> apply_linear(const StreamingReference::State& s, const LinearSource& src, const Matrix& x);
// Embedding rows of `tokens` times the embedding scale.
Result<Matrix> embed_tokens(const StreamingReference::State& s, std::span<const int32_t> tokens);
// One layer over h (the rows of `segments`), the linear maps streamed; observe (may be empty) sees its inputs.
Status run_layer(const StreamingReference::State& s, size_t layer, Matrix& h, std::span<const BatchSegment> segments,
                 const ObserveLinearInput& observe);
// h (the new rows of each sequence, stacked in `rows_of` order) through every layer.
Status forward(const StreamingReference::State& s, Matrix& h, std::vector<Sequence>& seqs,
               std::span<const std::pair<size_t, size_t>> rows_of,  // (sequence, rows) per segment
               const ReferenceModel::LinearInputObserver* observer);
// Logits [rows, vocab] of the chosen rows of h (final norm, streamed head, softcapping).
Result<Matrix> head_logits(const StreamingReference::State& s, const Matrix& h, std::span<const size_t> rows);
// kInvalidArgument naming `what` when a token is outside [0, vocab).
Status check_tokens(std::span<const int32_t> tokens, uint64_t vocab, const std::string& what);

}  // namespace stream_detail
}  // namespace rdrr::verify
