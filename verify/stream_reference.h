// The fast CPU reference: the same model as ReferenceModel (verify/reference_layer.h holds the shared layer
// math), built for real model sizes. Weights are never held whole: each pass streams them one layer at a time
// from the memory-mapped source (HF folder or GGUF, through convert::SourceModel) or pack (every dtype and
// layout, rdrr/tensor_decode.h), decoded to f32 a chunk of rows at a time right before a single-threaded BLAS
// sgemm consumes it (chunks spread over oneTBB; the chunk grid is fixed, so the bits do not depend on the thread
// count). All sequences of a job go through each layer together (one sgemm per linear map for all of their
// rows), the output head is streamed in vocabulary chunks, and greedy continuations are KV-cached and batched:
// a job costs 1 + (greedy steps - 1) passes over the weights. Memory: one chunk of decoded rows per thread,
// at most StreamOptions::resident_bytes of mapped weights, the activations and the KV caches of the job
// (independent of depth). Activations between the maps, norms,
// RoPE and attention run in double as in ReferenceModel; matmuls accumulate in f32 (BLAS), so logits agree with
// the double reference to f32 rounding (tests: verify/stream_reference_test.cpp).
//
//   RDRR_ASSIGN_OR_RETURN(StreamingReference ref, StreamingReference::open_source("model/"));
//   RDRR_ASSIGN_OR_RETURN(auto out, ref.run(requests));   // logits at chosen positions + greedy tokens
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "convert/model_config.h"
#include "quant/status.h"
#include "rdrr/manifest.h"
#include "verify/reference_layer.h"
#include "verify/reference_model.h"

namespace rdrr::verify {

struct StreamRequest {
  std::vector<int32_t> tokens;      // the prompt (position t = index t)
  std::vector<uint32_t> positions;  // prompt positions whose logits are returned, ascending
  size_t greedy_steps = 0;          // greedy continuation length after the prompt
};

struct StreamResponse {
  std::vector<float> logits;  // [positions.size(), vocab]
  GreedyResult greedy;        // greedy_steps tokens and their top-1 margins
};

struct StreamOptions {
  uint64_t chunk_bytes = 256ull << 10;  // f32 weight rows decoded per matmul task (rounded to the row alignment)
  // Mapped weight bytes read since the last release that may stay in the process's RSS; past it, every tensor
  // read since is released (madvise), and later reads fault the pages back in from the page cache. A model
  // whose weights fit is read with no page faults after the first pass.
  uint64_t resident_bytes = 1ull << 30;
};

class StreamingReference {
 public:
  struct State;  // opaque: the weight source and the resolved per-layer parameters

  // Any converter input: an HF folder or a .gguf file (convert::SourceModel: GGUF names mapped to HF, llama q/k
  // rows un-permuted, every GGUF block type). Errors: SourceModel::open's, shape checks (kValidation, naming the
  // tensor), kUnsupported (a feature the reference lacks).
  static Result<StreamingReference> open_source(const std::filesystem::path& src, StreamOptions options = {});
  // A pack's shards with an already-parsed manifest (validate_model_parameters is run). Errors prefixed
  // "pack <dir>: ": ShardReader's, shape checks.
  static Result<StreamingReference> open_pack(const Manifest& manifest, const std::filesystem::path& pack_dir,
                                              StreamOptions options = {});
  static Result<StreamingReference> open_pack(const std::filesystem::path& pack_dir, StreamOptions options = {});

  StreamingReference(StreamingReference&&) noexcept;
  StreamingReference& operator=(StreamingReference&&) noexcept;
  ~StreamingReference();

  const convert::ModelConfig& config() const;
  size_t vocab_size() const;

  // Every request's logits at its positions and its greedy continuation. Errors: kInvalidArgument (an empty
  // prompt, a token id outside the vocabulary, positions not ascending inside the prompt), the weight readers'.
  // `observer` (optional) sees every linear input of every pass, all sequences' rows stacked.
  Result<std::vector<StreamResponse>> run(std::span<const StreamRequest> requests,
                                          const ReferenceModel::LinearInputObserver* observer = nullptr) const;
  // Logits of every position of one sequence, [tokens.size(), vocab] (ReferenceModel::logits' contract).
  Result<std::vector<float>> logits(std::span<const int32_t> tokens) const;

  // Samples at temperature 1, one sequence per start token, `length` tokens each (the start included), all
  // sequences batched through each pass (KV-cached: length - 1 passes over the weights). Sequence i draws from
  // its own SplitMix64 stream, state seed + i (verify/splitmix.h sample_token), so the tokens do not depend on
  // the thread count or on the other sequences. Errors: kInvalidArgument (a start outside the vocabulary),
  // the weight readers'.
  Result<std::vector<std::vector<int32_t>>> sample(std::span<const int32_t> starts, size_t length,
                                                   uint64_t seed) const;

  // Calibration statistics at real sizes: every sequence goes through one layer per run_layer() call (all
  // their rows together, in groups of whole sequences of at most max_group_rows rows, so one layer's weights
  // and activations are held at a time), and the observer sees each group's linear inputs. Holds the residual
  // stream of every row (double). The engine must outlive the pass.
  class LayerPass {
   public:
    LayerPass(LayerPass&&) noexcept;
    LayerPass& operator=(LayerPass&&) noexcept;
    ~LayerPass();
    uint32_t next_layer() const { return layer_; }
    // Runs layer next_layer() and advances. Errors: kOutOfRange past the last layer, the weight readers'.
    Status run_layer(const ObserveLinearInput& observe);

   private:
    friend class StreamingReference;
    LayerPass() = default;
    const State* s_ = nullptr;
    Matrix h_;
    std::vector<std::pair<size_t, size_t>> groups_;  // row ranges [begin, end) of whole sequences
    std::vector<size_t> lengths_;                    // rows per sequence, in order
    uint32_t layer_ = 0;
  };
  // Errors: kInvalidArgument (an empty sequence, a token outside the vocabulary), the embedding reader's.
  Result<LayerPass> start_layer_pass(std::span<const std::vector<int32_t>> sequences, size_t max_group_rows) const;

  // Bytes a job of `rows` rows (prompt tokens of all requests) may hold: decoded chunks for `threads` threads, the
  // resident budget of mapped weights, activations, KV caches and the selected logits (an upper estimate).
  uint64_t working_bytes(size_t rows, size_t logit_rows, size_t threads) const;


 private:
  explicit StreamingReference(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace rdrr::verify
