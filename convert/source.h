// The converter's input side: the output tensors of a model under canonical Hugging Face names, each able
// to produce float32 rows on demand from the memory-mapped input (SafeTensors folder or GGUF file).
//
//  - Names: SafeTensors names are kept; GGUF names are mapped with gguf_to_hf_name (convert/gguf_names.h).
//  - Order: embedding, then layer 0, 1, ... (each layer's tensors by name), then the final norm and
//    lm_head. This is the writer's order (and so the shard placement order).
//  - Fusion: with fuse_gate_up, a layer's gate_proj and up_proj become one virtual tensor
//    model.layers.N.mlp.gate_up_proj.weight (gate rows first, SPEC.md section 6). A stored gate_up_proj
//    (Phi-3) stays as it is.
//  - GGUF quirks: llama-family q/k rows are stored permuted (convert_hf_to_gguf's
//    reshape(n_head, 2, rows/n_head/2, cols).swapaxes(1, 2)); reading undoes it with a row index map (q
//    uses n_head, k uses n_kv_head). Gemma norms stay as stored (they hold 1 + w; the config records offset 0).
//  - Storage types: F32/F16/BF16 and every GGUF block type quant/legacy_dequant.h decodes. A block-quantized
//    part whose type and layout equal the output's can be copied bit-exactly (raw_copy_possible()).
//  - With fuse_qkv, a layer's q_proj, k_proj and v_proj become one virtual qkv_proj (rows q, k, v) where the
//    three share a storage type; a stored qkv_proj (Phi-3) stays. Without it, Phi-3's fused qkv_proj becomes
//    q_proj / k_proj / v_proj by row ranges of the stored matrix (split_qkv: byte ranges, rows unchanged). A
//    fused qkv bias is always split (the graph adds q, k and v biases after the split); a checkpoint that also
//    stores one of them alone is kValidation.
//  - Mixture of experts (HF): each layer's per-expert matrices (Mixtral block_sparse_moe.experts.E.w1 / w3 / w2,
//    Qwen mlp.experts.E.gate_proj / up_proj / down_proj) become two stacked virtual tensors,
//    mlp.experts.gate_up_proj [E * 2 Fe, D] (expert e: gate rows at 2 Fe e, up rows at 2 Fe e + Fe) and
//    mlp.experts.down_proj [E * D, Fe]; Mixtral's router block_sparse_moe.gate is named mlp.gate. A missing
//    expert matrix is kNotFound, a misshapen one or one beyond numExperts kValidation. GGUF: ffn_gate_exps and
//    ffn_up_exps ([E, Fe, D]) interleave per expert into gate_up by row ranges (blocks untouched), ffn_down_exps
//    [E, D, Fe] is down_proj as it is, ffn_gate_inp the router, *_shexp the shared expert (its [D] gate as [1, D]).
// Tied embeddings: an lm_head.weight stored next to a tied embedding is dropped (with a warning), as is an HF
// rotary_emb.inv_freq. A GGUF's rope_freqs / rope_factors_* tensors are read into the manifest's RoPE
// (model_config_from_gguf), not weights. HF tensors outside the text model (a vision tower, its projector) are
// skipped with one summary warning. Anything else that is not a known weight of the model is kUnsupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "convert/gguf.h"
#include "convert/model_config.h"
#include "convert/safetensors.h"
#include "quant/dtype.h"
#include "quant/legacy_dequant.h"
#include "quant/status.h"
#include "rdrr/manifest.h"
#include "rdrr/model_tensors.h"

namespace rdrr::convert {

// One stored input tensor seen as a row-major matrix [rows, cols] of ggml blocks.
struct StoredMatrix {
  std::string name;                                       // name in the input file
  quant::GgmlBlockType type = quant::GgmlBlockType::kF32;  // storage type
  int64_t rows = 0;                                       // product of all dims but the last (1 for 1-D)
  int64_t cols = 0;                                       // last dim (row length)
  uint64_t row_bytes = 0;                                 // cols / block values * block bytes
  std::span<const std::byte> bytes;                       // rows * row_bytes bytes inside the mapping
  int64_t permute_heads = 0;  // > 0: rows are in GGUF's interleaved q/k order for this many heads
};

// A stored matrix placed at output rows [row_begin, row_begin + stored.rows) of a source tensor.
struct SourcePart {
  StoredMatrix stored;
  int64_t row_begin = 0;
};

struct SourceTensor {
  std::string name;               // canonical HF name of the output tensor
  std::vector<int64_t> shape;     // logical HF shape ([out, in] for matmuls)
  std::vector<SourcePart> parts;  // stacked rows: one part, or gate then up for a fused gate_up_proj
  int64_t rows() const;           // product of all dims but the last
  int64_t cols() const;           // last dim
  // "F16", or the parts' types joined by '+' when they differ ("Q4_K+Q6_K").
  std::string source_dtype() const;
  uint64_t stored_bytes() const;  // input bytes read to produce it
};

// An input file read by the conversion (recorded in the manifest's provenance).
struct SourceFile {
  std::filesystem::path path;
  std::string name;  // relative to the input folder (GGUF: the file name)
};

struct SourceOptions {
  bool fuse_gate_up = true;
  // q_proj, k_proj and v_proj of a layer become one virtual qkv_proj (q rows, then k, then v) where the three are
  // stored in one type; a stored qkv_proj (Phi-3) stays fused. Off: a stored qkv_proj is split into the three.
  bool fuse_qkv = false;
  // Called with a layer's part names (q, k, v or gate, up); true keeps them unfused (the converter: where the
  // preset would give them different types). Parts `overridden` selects never get here.
  std::function<bool(const std::vector<std::string>& part_names, const ModelConfig& config)> keep_separate = nullptr;
  // True for a tensor name a --tensor-type override selects: a stored qkv_proj whose q_proj, k_proj or v_proj it
  // selects is split (the override then applies to that part).
  std::function<bool(const std::string& name)> overridden = nullptr;
};

class SourceModel {
 public:
  // `src` is a Hugging Face folder (config.json + model.safetensors or model.safetensors.index.json) or a
  // .gguf file. Errors: kNotFound (src, config.json or a required tensor missing), the readers' and
  // model-config errors (kParse/kSchema/kValidation/kUnsupported), kUnsupported (unknown tensor, a GGUF
  // block type that cannot be decoded), kValidation (a tensor shape that disagrees with the config).
  static Result<SourceModel> open(const std::filesystem::path& src, const SourceOptions& options);

  SourceModel(SourceModel&&) noexcept = default;
  SourceModel& operator=(SourceModel&&) noexcept = default;
  ~SourceModel();

  SourceFormat format() const { return format_; }
  const ModelConfig& config() const { return config_; }
  const std::vector<SourceTensor>& tensors() const { return tensors_; }
  const std::vector<SourceFile>& files() const { return files_; }  // sorted by name
  const std::string& default_model_id() const { return model_id_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  SourceModel() = default;
  Status load_safetensors(const std::filesystem::path& folder, const SourceOptions& options);
  Status load_gguf(const std::filesystem::path& file, const SourceOptions& options);
  Status finish(const SourceOptions& options);
  Status split_qkv(const SourceOptions& options);
  void fuse_rows(ModelTensor fused, std::initializer_list<ModelTensor> parts, const SourceOptions& options);

  SourceFormat format_ = SourceFormat::kSafetensors;
  ModelConfig config_;
  std::vector<SourceTensor> tensors_;
  std::vector<SourceFile> files_;
  std::string model_id_;
  std::vector<std::string> warnings_;
  std::unique_ptr<SafeTensorsModel> safetensors_;  // owners of the mappings the views point into
  std::unique_ptr<GgufFile> gguf_;
};

// GGUF q/k row order: the stored row that holds output (HF) row `r` of a [rows, ...] tensor with
// `n_heads` heads (rows divisible by 2 * n_heads): head h = r / D, j = (r % D) / (D/2), i = r % (D/2)
// -> h*D + 2*i + j, with D = rows / n_heads.
int64_t permuted_source_row(int64_t r, int64_t rows, int64_t n_heads);

// Float32 values of output rows [r0, r1) of `t` into `out` ((r1 - r0) * cols values, row-major).
// `scratch` is working memory reused across calls. Errors: kInvalidArgument (range or size).
Status read_rows(const SourceTensor& t, int64_t r0, int64_t r1, std::span<float> out, std::vector<float>& scratch);

// Float32 values of part-local rows [r0, r1) of one part (in output order).
Status read_part_rows(const SourcePart& p, int64_t r0, int64_t r1, std::span<float> out, std::vector<float>& scratch);

// True when the stored blocks of `m` are, row for row, the bytes of the output in `dtype`/`layout`:
// same block type, row_wise layout and a row length that is a whole number of blocks (always the case
// for GGUF). Plain types never count (they are converted through float32, which is exact).
bool raw_copy_possible(const StoredMatrix& m, quant::DType dtype, std::optional<quant::Layout> layout);

// Copies the stored bytes of part-local rows [r0, r1) (in output order, permutation undone) to `out`
// ((r1 - r0) * row_bytes bytes).
Status copy_raw_rows(const SourcePart& p, int64_t r0, int64_t r1, std::span<std::byte> out);

// Tells the kernel that the input pages of output rows [r0, r1) are no longer needed (madvise DONTNEED on
// the read-only mapping; a later read faults them in again). `to_end`: also the page holding the last
// byte (call it with the tensor's last chunk). Advisory only.
void release_rows(const SourceTensor& t, int64_t r0, int64_t r1, bool to_end);

// The quant dtype whose bytes a ggml block type has (F32, F16, BF16, Q8_0, Q4_K, Q6_K), or nullopt.
std::optional<quant::DType> dtype_of(quant::GgmlBlockType t);

}  // namespace rdrr::convert
