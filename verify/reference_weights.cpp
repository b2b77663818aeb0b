#include "verify/reference_weights.h"

#include <algorithm>
#include <utility>

#include "convert/tensor_view.h"
#include "rdrr/tensor_decode.h"

namespace rdrr::verify {

uint64_t ReferenceWeights::row_alignment(const std::string& name) const {
  const Result<std::vector<int64_t>> s = shape(name);
  return s.ok() && !s->empty() ? static_cast<uint64_t>((*s)[0]) : 1;  // the whole tensor at once
}

Status ReferenceWeights::read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows,
                                       std::span<float> out) const {
  RDRR_ASSIGN_OR_RETURN(const std::vector<float> all, read_f32(name));
  const uint64_t first = row_begin * (out.size() / std::max<uint64_t>(rows, 1));
  if (rows == 0 || first + out.size() > all.size()) {
    return error(StatusCode::kInvalidArgument, "tensor " + name + ": rows " + std::to_string(row_begin) + "+" +
                                                   std::to_string(rows) + " outside the tensor");
  }
  std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(first), out.size(), out.begin());
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
  PackWeights(const Manifest& m, const ShardReader& reader) : m_(m), reader_(reader) {}
  bool has(const std::string& name) const override { return find_tensor(m_, name) != nullptr; }
  Result<std::vector<int64_t>> shape(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* e, get(name));
    return std::vector<int64_t>(e->shape.begin(), e->shape.end());
  }
  Result<std::vector<float>> read_f32(const std::string& name) const override {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* e, get(name));
    return read_tensor_f32(reader_, *e);
  }
  uint64_t row_alignment(const std::string& name) const override {
    const TensorEntry* e = find_tensor(m_, name);
    return e == nullptr ? 1 : tensor_row_alignment(*e);
  }
  Status read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows,
                       std::span<float> out) const override {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* e, get(name));
    RDRR_ASSIGN_OR_RETURN(const TensorBytes bytes, reader_.tensor_bytes(e->name, e->placement));
    return decode_tensor_rows_f32(*e, bytes.bytes(), row_begin, rows, out);
  }
  std::string config_origin() const override { return "the manifest"; }

 private:
  Result<const TensorEntry*> get(const std::string& name) const {
    const TensorEntry* e = find_tensor(m_, name);
    if (e == nullptr) return error(StatusCode::kNotFound, "tensor " + name + ": not in the pack's manifest");
    return e;
  }
  const Manifest& m_;
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
  Status read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows,
                       std::span<float> out) const override {
    RDRR_ASSIGN_OR_RETURN(const convert::SourceTensor* t, get(name));
    const auto r0 = static_cast<int64_t>(row_begin), r1 = static_cast<int64_t>(row_begin + rows);
    if (rows == 0 || r1 > t->rows() || out.size() != rows * static_cast<uint64_t>(t->cols())) {
      return error(StatusCode::kInvalidArgument, "tensor " + name + ": rows [" + std::to_string(r0) + ", " +
                                                     std::to_string(r1) + ") of " + std::to_string(t->rows()) +
                                                     " into " + std::to_string(out.size()) + " floats");
    }
    std::vector<float> scratch;
    return convert::read_rows(*t, r0, r1, out, scratch).context("tensor " + name);
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
