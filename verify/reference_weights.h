// Where the CPU reference reads its weights from: an HF SafeTensors folder, an RDRR pack (every tensor
// decoded through quant/), or any converter input seen through convert::SourceModel (GGUF: names mapped to
// HF, q/k rows un-permuted, any GGUF block type decoded). Each source answers by canonical HF tensor name
// and returns float32 values in the logical row-major order of the tensor's HF shape.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "convert/source.h"
#include "quant/status.h"
#include "rdrr/manifest.h"
#include "rdrr/shard_reader.h"

namespace rdrr::verify {

class ReferenceWeights {
 public:
  virtual ~ReferenceWeights() = default;
  virtual bool has(const std::string& name) const = 0;
  // Logical shape. kNotFound (naming the tensor and the source) when absent.
  virtual Result<std::vector<int64_t>> shape(const std::string& name) const = 0;
  // Float32 values, row-major over shape(name).
  virtual Result<std::vector<float>> read_f32(const std::string& name) const = 0;
  // Streaming reads (verify/stream_reference.h): the tensor seen as [shape[0], product of the rest] (a 1-D
  // tensor is one row). Rows [row_begin, row_begin + rows) into `out` (rows x row length values); row_begin and
  // rows must be multiples of row_alignment(name), except that a range may end at the last row. The default
  // decodes the whole tensor and copies the rows (sources that cannot do better; quadratic if chunked).
  // `scratch` is the caller's reusable working memory (one per concurrent reader).
  struct RowScratch {
    std::vector<float> floats;
    std::vector<uint8_t> bytes;
  };
  virtual uint64_t row_alignment(const std::string& name) const;
  virtual Status read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows, std::span<float> out,
                               RowScratch& scratch) const;
  // Any row range: reads the aligned range around it and copies the rows out (e.g. the gate rows of a fused
  // column_wise gate_up_proj whose intermediate size is not a multiple of 256).
  Status read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows, std::span<float> out) const;
  // Drops the memory-mapped pages of rows [row_begin, row_begin + rows) (or of the whole tensor when the rows are
  // not contiguous bytes) from the process's RSS; the next read faults them back in from the page cache.
  virtual void release_rows(const std::string& name, uint64_t row_begin, uint64_t rows) const {
    (void)name, (void)row_begin, (void)rows;
  }
  // Bytes of the tensor as stored (0 when unknown): what reading it maps into the process.
  virtual uint64_t stored_bytes(const std::string& name) const {
    (void)name;
    return 0;
  }
  // Where the expected shapes come from, for messages: "config.json", "the manifest", ...
  virtual std::string config_origin() const = 0;
};

// Views `st` (which must outlive the result).
std::unique_ptr<ReferenceWeights> safetensors_weights(const convert::SafeTensorsModel& st);

// Views a pack: `manifest` and `reader` must outlive the result.
std::unique_ptr<ReferenceWeights> pack_weights(const Manifest& manifest, const ShardReader& reader);

// Views a source model (`source` must outlive the result).
std::unique_ptr<ReferenceWeights> source_weights(const convert::SourceModel& source);

// A ModelConfig (what the reference reads) from a manifest's architecture, inference and tokenizer; tied
// embeddings from inference.output.tieWordEmbeddings. The pack's values are already resolved.
convert::ModelConfig model_config_from_manifest(const Manifest& manifest);

}  // namespace rdrr::verify
