#include "verify/reference_weights.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "convert/tensor_view.h"
#include "rdrr/mapped_file.h"
#include "rdrr/tensor_decode.h"

namespace rdrr::verify {

uint64_t ReferenceWeights::row_alignment(const std::string& name) const {
  const Result<std::vector<int64_t>> s = shape(name);
  return s.ok() && !s->empty() ? static_cast<uint64_t>((*s)[0]) : 1;  // the whole tensor at once
}

Status ReferenceWeights::read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows,
                                       std::span<float> out, RowScratch&) const {
  RDRR_ASSIGN_OR_RETURN(const std::vector<float> all, read_f32(name));
  const uint64_t first = row_begin * (out.size() / std::max<uint64_t>(rows, 1));
  if (rows == 0 || first + out.size() > all.size()) {
    return error(StatusCode::kInvalidArgument, "tensor " + name + ": rows " + std::to_string(row_begin) + "+" +
                                                   std::to_string(rows) + " outside the tensor");
  }
  std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(first), out.size(), out.begin());
  return Status::Ok();
}

Status ReferenceWeights::read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows,
                                       std::span<float> out) const {
  RowScratch scratch;
  RDRR_ASSIGN_OR_RETURN(const std::vector<int64_t> s, shape(name));
  const uint64_t n = s.empty() ? 1 : static_cast<uint64_t>(s[0]), align = std::max<uint64_t>(1, row_alignment(name));
  const uint64_t a0 = row_begin / align * align, a1 = std::min(n, (row_begin + rows + align - 1) / align * align);
  if (rows == 0 || (a0 == row_begin && a1 == row_begin + rows)) return read_rows_f32(name, row_begin, rows, out, scratch);
  const uint64_t cols = out.size() / rows;
  std::vector<float> wide((a1 - a0) * cols);
  RDRR_RETURN_IF_ERROR(read_rows_f32(name, a0, a1 - a0, wide, scratch));
  std::copy_n(wide.begin() + static_cast<std::ptrdiff_t>((row_begin - a0) * cols), out.size(), out.begin());
  return Status::Ok();
}

namespace {

class SafeTensorsWeights final : public ReferenceWeights {
 public:
  explicit SafeTensorsWeights(const convert::SafeTensorsModel& st) : st_(st) {}
  bool has(const std::string& name) const override { return st_.find(name) != nullptr; }
  Result<std::vector<int64_t>> shape(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const convert::TensorView* t, st_.get(name));
    return t->shape;
  }
  Result<std::vector<float>> read_f32(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const convert::TensorView* t, st_.get(name));
    return convert::read_as_f32(*t);
  }
  std::string config_origin() const override { return "config.json"; }

 private:
  const convert::SafeTensorsModel& st_;
};

class PackWeights final : public ReferenceWeights {
 public:
  PackWeights(const Manifest& m, const ShardReader& reader) : index_(m), reader_(reader) {}
  bool has(const std::string& name) const override { return index_.find(name) != nullptr; }
  Result<std::vector<int64_t>> shape(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* e, get(name));
    return std::vector<int64_t>(e->shape.begin(), e->shape.end());
  }
  Result<std::vector<float>> read_f32(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* e, get(name));
    return read_tensor_f32(reader_, *e);
  }
  uint64_t row_alignment(const std::string& name) const override {
    const TensorEntry* e = index_.find(name);
    return e == nullptr ? 1 : tensor_row_alignment(*e);
  }
  Status read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows, std::span<float> out,
                       RowScratch& scratch) const override {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* e, get(name));
    if (e->placement.spans.size() <= 1) {
      RDRR_ASSIGN_OR_RETURN(const TensorBytes bytes, reader_.tensor_bytes(e->name, e->placement));
      return decode_tensor_rows_f32(*e, bytes.bytes(), row_begin, rows, out, &scratch.bytes);
    }
    // A tensor that crosses shards: copy only the byte ranges these rows need out of its spans.
    RDRR_ASSIGN_OR_RETURN(const std::vector<TensorByteRange> ranges, tensor_row_byte_ranges(*e, row_begin, rows));
    RDRR_ASSIGN_OR_RETURN(const std::vector<std::span<const std::byte>> spans,
                          reader_.tensor_spans(e->name, e->placement));
    uint64_t total = 0;
    for (const TensorByteRange& r : ranges) total += r.size;
    scratch.bytes.resize(total);
    auto* dst = reinterpret_cast<std::byte*>(scratch.bytes.data());
    for (const TensorByteRange& r : ranges) {
      RDRR_RETURN_IF_ERROR(copy_from_spans(spans, r, dst).context("tensor " + name));
      dst += r.size;
    }
    return decode_packed_rows_f32(*e, std::as_bytes(std::span(scratch.bytes)), row_begin, rows, out);
  }
  void release_rows(const std::string& name, uint64_t, uint64_t) const override {
    if (const TensorEntry* e = index_.find(name)) reader_.release_tensor(e->placement);  // whole tensor
  }
  uint64_t stored_bytes(const std::string& name) const override {
    const TensorEntry* e = index_.find(name);
    return e == nullptr ? 0 : e->placement.total_bytes();
  }
  std::string config_origin() const override { return "the manifest"; }

 private:
  // Bytes [r.offset, r.offset + r.size) of the spans' concatenation into dst.
  static Status copy_from_spans(std::span<const std::span<const std::byte>> spans, const TensorByteRange& r,
                                std::byte* dst) {
    uint64_t pos = 0, done = 0;
    for (const auto& sp : spans) {
      const uint64_t lo = std::max(r.offset + done, pos), hi = std::min(r.offset + r.size, pos + sp.size());
      if (lo < hi) {
        RDRR_RETURN_IF_ERROR(copy_mapped_bytes(sp.subspan(lo - pos, hi - lo), {dst + (lo - r.offset), hi - lo}));
        done = hi - r.offset;
      }
      pos += sp.size();
    }
    if (done != r.size) return error(StatusCode::kValidation, "byte range past the tensor's spans");
    return Status::Ok();
  }
  Result<const TensorEntry*> get(const std::string& name) const {
    const TensorEntry* e = index_.find(name);
    if (e == nullptr) return error(StatusCode::kNotFound, "tensor " + name + ": not in the pack's manifest");
    return e;
  }
  TensorIndex index_;  // a forward pass looks every weight up
  const ShardReader& reader_;
};

class SourceWeights final : public ReferenceWeights {
 public:
  explicit SourceWeights(const convert::SourceModel& source) : source_(source) {
    for (size_t i = 0; i < source.tensors().size(); ++i) index_.emplace(source.tensors()[i].name, i);
  }
  bool has(const std::string& name) const override { return index_.contains(name); }
  Result<std::vector<int64_t>> shape(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const convert::SourceTensor* t, get(name));
    return t->shape;
  }
  Result<std::vector<float>> read_f32(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const convert::SourceTensor* t, get(name));
    std::vector<float> out(static_cast<size_t>(t->rows() * t->cols()));
    std::vector<float> scratch;
    RDRR_RETURN_IF_ERROR(convert::read_rows(*t, 0, t->rows(), out, scratch).context("tensor " + name));
    return out;
  }
  uint64_t row_alignment(const std::string&) const override { return 1; }  // GGUF / SafeTensors rows stand alone
  Status read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows, std::span<float> out,
                       RowScratch& scratch) const override {
    RDRR_ASSIGN_OR_RETURN(const convert::SourceTensor* t, get(name));
    const auto r0 = static_cast<int64_t>(row_begin), r1 = static_cast<int64_t>(row_begin + rows);
    if (rows == 0 || r1 > t->rows() || out.size() != rows * static_cast<uint64_t>(t->cols())) {
      return error(StatusCode::kInvalidArgument, "tensor " + name + ": rows [" + std::to_string(r0) + ", " +
                                                     std::to_string(r1) + ") of " + std::to_string(t->rows()) +
                                                     " into " + std::to_string(out.size()) + " floats");
    }
    return convert::read_rows(*t, r0, r1, out, scratch.floats).context("tensor " + name);
  }
  void release_rows(const std::string& name, uint64_t row_begin, uint64_t rows) const override {
    const auto it = index_.find(name);
    if (it == index_.end()) return;
    const convert::SourceTensor& t = source_.tensors()[it->second];
    const auto n = static_cast<uint64_t>(t.rows());
    if (row_begin >= n) return;
    const auto r0 = static_cast<int64_t>(row_begin), r1 = static_cast<int64_t>(row_begin + std::min(rows, n - row_begin));
    convert::release_rows(t, r0, r1, r1 == t.rows());
  }
  uint64_t stored_bytes(const std::string& name) const override {
    const auto it = index_.find(name);
    if (it == index_.end()) return 0;
    uint64_t n = 0;
    for (const convert::SourcePart& p : source_.tensors()[it->second].parts) n += p.stored.bytes.size();
    return n;
  }
  std::string config_origin() const override {
    return source_.format() == SourceFormat::kGguf ? "the GGUF metadata" : "config.json";
  }

 private:
  Result<const convert::SourceTensor*> get(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) return error(StatusCode::kNotFound, "tensor " + name + ": not in the source model");
    return &source_.tensors()[it->second];
  }
  const convert::SourceModel& source_;
  std::map<std::string, size_t> index_;
};

}  // namespace

std::unique_ptr<ReferenceWeights> safetensors_weights(const convert::SafeTensorsModel& st) {
  return std::make_unique<SafeTensorsWeights>(st);
}

std::unique_ptr<ReferenceWeights> pack_weights(const Manifest& manifest, const ShardReader& reader) {
  return std::make_unique<PackWeights>(manifest, reader);
}

std::unique_ptr<ReferenceWeights> source_weights(const convert::SourceModel& source) {
  return std::make_unique<SourceWeights>(source);
}

convert::ModelConfig model_config_from_manifest(const Manifest& manifest) {
  convert::ModelConfig c;
  c.family = std::string(arch_family_name(manifest.architecture.family));
  c.architecture = manifest.architecture;
  c.inference = manifest.inference;
  c.inference.execution.reset();  // the reference does not use the graph
  c.tokenizer = manifest.tokenizer;
  c.tokenizer.files.clear();
  c.tied_embeddings = manifest.inference.output.tie_word_embeddings;
  return c;
}

}  // namespace rdrr::verify
