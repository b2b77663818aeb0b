#include "verify/reference_weights.h"

#include <utility>

#include "convert/tensor_view.h"
#include "rdrr/tensor_decode.h"

namespace rdrr::verify {
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
