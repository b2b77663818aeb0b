// The graph executor: runs a loaded pack (runtime/pack.h) from its manifest-pinned execution graph
// (inference.execution, rdrr/SPEC.md section 9; op vocabulary kernels/graph_ops.h) and nothing else: no
// architecture `if`s; every parameter (norm eps and weight offset, RoPE incl. scaling and partial rotary,
// softcaps, query_pre_attn_scalar, sliding window, embedding scale, tied embeddings through the lm_head
// weight ref) comes from the manifest.
//
// Fail closed at create(): no graph, an op the executor does not implement or that is misplaced, a kernel
// key that is not a registry kernel or whose op cannot implement the step, a pinned digest that differs
// from this build's (kIntegrity: "step decode[3] 'q_proj' kernel gemv_q4_k_col_split: pinned digest
// sha256:... != this build's sha256:...; re-pin the pack after a kernel update: rdrr-digests repin PACK"),
// a companion kernel missing from the graph, an unresolved weight, an unsupported dtype / layout or
// precision. While running, every dispatch is checked against the pinned set (RecorderOptions::
// allowed_kernels): a kernel the graph does not pin fails with kIntegrity naming it.
//
// One command buffer per prefill chunk and per decode step. Prefill runs the prompt at positions
// position() .. position() + n - 1 (appending to the KV cache); decode feeds the previously sampled token
// (a host-visible slot the GPU writes) to the next step's embed, and submits the following step before
// waiting for its own, from a second recorder, so the host records while the device runs.
//
//   RDRR_ASSIGN_OR_RETURN(auto pack, Pack::load(device, dir));
//   RDRR_ASSIGN_OR_RETURN(auto exec, Executor::create(device, *pack, {}));
//   RDRR_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, exec->generate(prompt, 32, {}));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"
#include "runtime/recorder.h"

namespace rdrr::runtime {

class Device;
class Pack;

// ExecutorOptions::gemv_prefill_rows default (H100, 8B shape: see runtime/README.md).
inline constexpr uint32_t kDefaultGemvPrefillRows = 8;

struct ExecutorOptions {
  uint32_t context_length = 0;    // KV cache positions; 0 = min(architecture.maxSeqLen, 4096)
  uint32_t max_batch_tokens = 0;  // rows per prefill submit (activation buffers); 0 = min(context, 512)
  bool profile = false;           // GPU timestamps per dispatch (last_timings())
  // Prefill passes of at most this many rows run each GEMM matmul as one GEMV dispatch per row, with the
  // kernel the decode phase pins for the same weight: a GEMM of a few rows streams its weight once but
  // walks K tile by tile in few workgroups, far from the memory bandwidth. 0 = always the pinned GEMM.
  uint32_t gemv_prefill_rows = kDefaultGemvPrefillRows;
  // Prefill GEMMs run their cooperative-matrix variant (f16 products, f32 sums; GemmArgs::cooperative_matrix)
  // where the device has it and the pack pins it. false = always the f32 GEMM.
  bool cooperative_matrix = true;
  // One GPU timestamp pair per submission (gpu_span_ms()): the device time of each prefill chunk and decode step
  // without serializing its dispatches. Exclusive with profile (per-dispatch timestamps).
  bool gpu_span = false;
};

// Token choice on the GPU (runtime/ops_sample.h). temperature <= 0: greedy argmax (first max wins).
struct SampleOptions {
  float temperature = 0.0f;
  uint32_t top_k = 0;  // 0 = all
  uint64_t seed = 0;   // step seed = seed + position of the sampled token
  bool operator==(const SampleOptions&) const = default;
};

enum class LogitsMode : uint8_t {
  kNone,  // only the sampled token
  kLast,  // the last prompt position's logits [1, vocab]
  kAll,   // every prompt position's logits [n_tokens, vocab] (row t predicts token t + 1)
};

struct PrefillResult {
  uint32_t next_token = 0;     // sampled from the last position's logits (also kept on the GPU for decode)
  std::vector<float> logits;   // per LogitsMode, row-major f32
  uint32_t logits_rows = 0;
};

// Per-op GPU time summed over the dispatches labelled with the op (profile only).
struct OpTiming {
  std::string op;
  double gpu_ms = 0.0;
  uint32_t dispatches = 0;
};

// What the last submit (a prefill chunk or a decode step) recorded.
struct SubmitCounts {
  uint32_t dispatches = 0;
  uint32_t barriers = 0;
};

class Executor {
 public:
  // Checks the graph (see the file comment), sizes the KV cache (kvDtype precision of the graph, F16 or
  // F32) and the activation buffers. Pipelines are built on first use and kept in the device's cache (the
  // first prefill of a process pays for them). The pack must outlive the executor.
  static Result<std::unique_ptr<Executor>> create(Device& device, const Pack& pack, const ExecutorOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs tokens through the model from position(), in chunks of max_batch_tokens, then the post-layer
  // phase for the last row (kAll: every row) and samples the next token. Errors: kInvalidArgument (empty,
  // past the context length, a token id >= vocab).
  Result<PrefillResult> prefill(std::span<const uint32_t> tokens, LogitsMode logits = LogitsMode::kNone,
                                const SampleOptions& sample = {});
  // One decode step: embeds the last sampled token (on the GPU), runs the decode phase at position(),
  // samples and returns the new token. Needs a prefill first; kInvalidArgument past the context length.
  // Before waiting for its step, decode() submits the next one (same options, fed the GPU's sampled token),
  // so consecutive calls keep the device busy; a call with other options, prefill() and reset() drop it.
  Result<uint32_t> decode(const SampleOptions& sample = {});
  // reset(), prefill(prompt), then n_new - 1 decode steps: the n_new sampled tokens (n_new 0: prefill only,
  // returns nothing).
  Result<std::vector<uint32_t>> generate(std::span<const uint32_t> prompt, uint32_t n_new,
                                         const SampleOptions& sample = {});

  // Forgets the cached positions (the KV cache contents are overwritten by the next prefill).
  void reset();
  uint32_t position() const { return position_; }
  uint32_t context_length() const;
  quant::DType kv_dtype() const;
  uint64_t vocab_size() const;

  // Timings of the submits since the last clear_timings() (ExecutorOptions::profile), summed per op label
  // in first-seen order; raw per-dispatch timings in raw_timings().
  std::vector<OpTiming> op_timings() const;
  const std::vector<DispatchTiming>& raw_timings() const { return timings_; }
  void clear_timings() { timings_.clear(); }
  SubmitCounts last_submit_counts() const { return last_counts_; }
  // ExecutorOptions::gpu_span: GPU milliseconds of the prefill chunks and decode steps waited for since the last
  // clear_gpu_span() (a step submitted ahead and dropped is not counted).
  double gpu_span_ms() const { return gpu_span_ms_; }
  void clear_gpu_span() { gpu_span_ms_ = 0.0; }

  struct Impl;  // the compiled plan and device buffers (executor.cpp)

 private:
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  Status drop_ahead();
  uint32_t position_ = 0;
  bool has_token_ = false;  // a sampled token is on the GPU (decode may run)
  std::optional<SampleOptions> ahead_;  // decode step position_ submitted ahead with these options
  std::vector<DispatchTiming> timings_;
  SubmitCounts last_counts_;
  double gpu_span_ms_ = 0.0;
};

}  // namespace rdrr::runtime
