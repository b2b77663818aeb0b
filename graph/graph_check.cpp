#include "graph/graph_check.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/graph_ops.h"
#include "kernels/digest_table.h"
#include "kernels/kernel_choice.h"
#include "kernels/registry.h"
#include "rdrr/layer_ref.h"

namespace rdrr::graph {
namespace {

using kernels::find_kernel;
using kernels::KernelInfo;
using kernels::Op;
using quant::DType;
using quant::Layout;

// The graph's four step lists.
enum class Section : uint8_t { kPreLayer, kPrefill, kDecode, kPostLayer };

std::string_view section_name(Section p) {
  switch (p) {
    case Section::kPreLayer: return "preLayer";
    case Section::kPrefill: return "prefill";
    case Section::kDecode: return "decode";
    case Section::kPostLayer: return "postLayer";
  }
  return "?";
}

Phase op_phase(Section p) {
  if (p == Section::kPreLayer) return Phase::kPreLayer;
  if (p == Section::kPostLayer) return Phase::kPostLayer;
  return Phase::kLayer;
}

std::string q(std::string_view s) { return single_quoted(s); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

template <typename T>
bool contains(std::span<const T> s, const T& v) {
  return std::find(s.begin(), s.end(), v) != s.end();
}

std::string dtypes_string(std::span<const DType> ds) {
  std::string out;
  for (DType d : ds) {
    if (!out.empty()) out.push_back('|');
    out.append(quant::dtype_name(d));
  }
  return out;
}

std::string layouts_string(std::span<const Layout> ls) {
  std::string out;
  for (Layout l : ls) {
    if (!out.empty()) out.push_back('|');
    out.append(quant::layout_name(l));
  }
  return out;
}

bool is_kv_kernel(const KernelInfo& k) {
  return k.op == Op::kKvAppend || k.op == Op::kKvAppendRope || k.op == Op::kAttention;
}

// A step with where it sits: "decode[3]" or "decode[3].steps[1]", and the layers it runs for (empty in
// preLayer / postLayer).
struct StepRef {
  Section phase;
  std::string where;
  const ExecStep* step;
  std::vector<uint32_t> layers;

  std::string label() const { return where + " " + q(step->op); }
  std::string label(uint32_t layer) const { return where + " (layer " + std::to_string(layer) + ") " + q(step->op); }
  std::string first_label() const { return layers.empty() ? label() : label(layers.front()); }
};

class Checker {
 public:
  Checker(const Manifest& m, const ExecutionGraph& g) : m_(m), g_(g) {
    for (const TensorEntry& t : m.tensors) tensors_.emplace(t.name, &t);
    collect_flat(Section::kPreLayer, g.pre_layer);
    collect_layer(Section::kPrefill, g.prefill);
    collect_layer(Section::kDecode, g.decode);
    collect_flat(Section::kPostLayer, g.post_layer);
  }

  Status run(const GraphCheckOptions& o) {
    for (const auto& [key, spec] : g_.kernels) RDRR_RETURN_IF_ERROR(check_kernel_entry(key, spec));
    for (const StepRef& s : steps_) RDRR_RETURN_IF_ERROR(check_step(s));
    RDRR_RETURN_IF_ERROR(check_layers(Section::kPrefill));
    RDRR_RETURN_IF_ERROR(check_layers(Section::kDecode));
    RDRR_RETURN_IF_ERROR(check_companions());
    if (o.check_digests) RDRR_RETURN_IF_ERROR(check_digests());
    return Status::Ok();
  }

 private:
  void collect_flat(Section p, const std::vector<ExecStep>& steps) {
    for (size_t i = 0; i < steps.size(); ++i) {
      steps_.push_back({p, std::string(section_name(p)) + "[" + std::to_string(i) + "]", &steps[i], {}});
    }
  }

  void collect_layer(Section p, const std::vector<LayerEntry>& entries) {
    std::vector<uint32_t> all(m_.architecture.num_layers);
    for (uint32_t l = 0; l < m_.architecture.num_layers; ++l) all[l] = l;
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string where = std::string(section_name(p)) + "[" + std::to_string(i) + "]";
      if (const auto* step = std::get_if<ExecStep>(&entries[i])) {
        steps_.push_back({p, where, step, all});
        continue;
      }
      const LayerGroup& group = std::get<LayerGroup>(entries[i]);
      for (size_t j = 0; j < group.steps.size(); ++j) {
        steps_.push_back({p, where + ".steps[" + std::to_string(j) + "]", &group.steps[j], group.layers});
      }
    }
  }

  static Status check_kernel_entry(const std::string& key, const KernelSpec& spec) {
    const std::string field = "inference.execution.kernels." + key;
    const KernelInfo* k = find_kernel(key);
    if (k == nullptr) {
      return error(StatusCode::kUnsupported, field + ": " + q(key) +
                                                 " is not a kernel of this build (kernel keys are registry kernel "
                                                 "names; policy unresolvedKernel: error)");
    }
    if (spec.file != k->file || spec.entry != k->entry) {
      return error(StatusCode::kUnsupported, field + ": pinned " + q(spec.file) + " entry " + q(spec.entry) +
                                                 ", this build's kernel is " + q(k->file) + " entry " +
                                                 q(k->entry) + " (re-convert the pack)");
    }
    for (const auto& [name, value] : spec.precision) {
      if (name != kKvDtypeKey || !is_kv_kernel(*k)) {
        return error(StatusCode::kUnsupported,
                     field + ".precision: " + q(name) +
                         " is not supported (only kvDtype, on kv_append_* / attention_* kernels; policy "
                         "unsupportedPrecision: error)");
      }
      const std::optional<KvDtype> kv = parse_kv_dtype(value);
      if (!kv) {
        return error(StatusCode::kUnsupported, field + ".precision.kvDtype: " + q(value) +
                                                   " is not supported (f16 or f32; policy unsupportedPrecision: "
                                                   "error)");
      }
      const std::optional<KvDtype> kernel_kv = kv_dtype_of(k->dtypes.front());
      if (kv != kernel_kv) {
        const std::string expected = kernel_kv ? std::string(kv_dtype_name(*kernel_kv)) : lower(quant::dtype_name(k->dtypes.front()));
        return error(StatusCode::kUnsupported, field + ".precision.kvDtype: " + q(value) + ", but kernel " +
                                                   q(key) + " keeps the KV cache in " + expected);
      }
    }
    return Status::Ok();
  }

  Status check_step(const StepRef& s) {
    const ExecStep& step = *s.step;
    const OpInfo* op = find_op(step.op);
    if (op == nullptr) {
      return error(StatusCode::kUnsupported, s.label() + ": unknown op (not in the op vocabulary of this build)");
    }
    if (moe_op(*op) && !m_.architecture.moe.present()) {
      return error(StatusCode::kValidation, s.label() + ": an expert step in a model without architecture.moe");
    }
    if (op->phase != op_phase(s.phase)) {
      return error(StatusCode::kValidation, s.label() + ": op belongs in " + std::string(phase_name(op->phase)) +
                                                ", not " + std::string(section_name(s.phase)));
    }
    if (g_.kernels.find(step.kernel_key) == g_.kernels.end()) {
      return error(StatusCode::kValidation,
                   s.label() + ": kernel key " + q(step.kernel_key) + " is not in inference.execution.kernels");
    }
    const KernelInfo* k = find_kernel(step.kernel_key);  // non-null: the kernels map was checked
    if (kernels::is_optional_variant(step.kernel_key)) {
      return error(StatusCode::kValidation, s.label() + ": kernel " + q(step.kernel_key) +
                                                " is an optional variant; steps name its base kernel (rdrr/SPEC.md 9.1)");
    }
    if (!contains(op->kernel_ops, k->op)) {
      return error(StatusCode::kValidation, s.label() + ": kernel " + q(step.kernel_key) + " implements " +
                                                std::string(kernels::op_name(k->op)) + ", which cannot run this op");
    }
    if (op->weight == WeightKind::kMatmul) {
      const Op want = s.phase == Section::kPrefill ? Op::kGemm : Op::kGemv;
      if (k->op != want) {
        return error(StatusCode::kValidation, s.label() + ": kernel " + q(step.kernel_key) + " is a " +
                                                  std::string(kernels::op_name(k->op)) + " kernel; matmuls in " +
                                                  std::string(section_name(s.phase)) + " use " +
                                                  std::string(kernels::op_name(want)) + " kernels");
      }
    }
    if (!op->kernel.empty() && step.kernel_key != op->kernel) {
      return error(StatusCode::kValidation, s.label() + ": kernel " + q(step.kernel_key) + " does not run this op; it runs "
                                                "on kernel " + q(op->kernel) + " (rdrr/SPEC.md 9.2)");
    }
    if (op->param != nullptr) {
      const Result<float> param = op->param(m_);
      if (!param.ok()) return Status(param.status()).context(s.label());
    }
    if (op->dispatch == Dispatch::kRope) RDRR_RETURN_IF_ERROR(check_rope_kernel(s, *op));
    if (op->dispatch == Dispatch::kKvAppendRope &&
        kernels::fuses_head_norm(step.kernel_key) != (op->weight == WeightKind::kNorm)) {
      return error(StatusCode::kValidation,
                   s.label() + ": kernel " + q(step.kernel_key) +
                       (op->weight == WeightKind::kNorm ? " does not norm k; the op needs a kv_append_norm_rope_* kernel"
                                                        : " norms k; the op takes no norm weight (kv_append_rope_*)"));
    }
    if (is_kv_kernel(*k)) RDRR_RETURN_IF_ERROR(check_kv_type(s, *k));
    if (op->weight == WeightKind::kNone) {
      if (step.weight_ref) {
        return error(StatusCode::kValidation, s.label() + ": op takes no weight, but names " + q(*step.weight_ref));
      }
      return Status::Ok();
    }
    if (!step.weight_ref) return error(StatusCode::kValidation, s.label() + ": op needs a weight ref, none given");
    if (s.layers.empty()) return check_weight(s, *op, *k, s.label(), *step.weight_ref);
    for (uint32_t layer : s.layers) {
      RDRR_RETURN_IF_ERROR(check_weight(s, *op, *k, s.label(layer), substitute_layer(*step.weight_ref, layer)));
    }
    return Status::Ok();
  }

  // A rope step rotates with the CPU frequency table exactly when the model's scaling needs it and the step is
  // not local (kernels::rope_kernel): `rope` applies only linear scaling, `rope_freqs` needs its table.
  Status check_rope_kernel(const StepRef& s, const OpInfo& op) const {
    const bool table = !op.has(kLocal) && rope_needs_freq_table(m_.inference.rope);
    const std::string_view want = kernels::rope_kernel(table, op.weight == WeightKind::kNorm);
    if (s.step->kernel_key == want) return Status::Ok();
    const std::string scaling(rope_scaling_type_name(m_.inference.rope.scaling_type));
    return error(StatusCode::kValidation,
                 s.label() + ": kernel " + q(s.step->kernel_key) + " cannot rotate this step (" +
                     (op.has(kLocal) ? std::string("local rope: ropeLocalTheta, unscaled")
                                     : "inference.rope.ropeScalingType " + scaling) +
                     "); it needs kernel " + q(want));
  }

  // kv_append writes the cache that attention reads: one cache type for the whole graph (no cast step).
  Status check_kv_type(const StepRef& s, const KernelInfo& k) {
    if (kv_first_ == nullptr) {
      kv_first_ = &s;
      kv_type_ = k.dtypes.front();
      return Status::Ok();
    }
    if (k.dtypes.front() == kv_type_) return Status::Ok();
    return error(StatusCode::kValidation,
                 s.label() + ": kernel " + q(s.step->kernel_key) + " keeps the KV cache in " +
                     std::string(quant::dtype_name(k.dtypes.front())) + ", but " + kv_first_->label() + " (kernel " +
                     q(kv_first_->step->kernel_key) + ") uses " + std::string(quant::dtype_name(kv_type_)) +
                     " (policy dtypeTransition: require_cast_step; the op vocabulary has no cast)");
  }

  // An op of the mixture of experts: it reads or writes a router / expert / shared-expert buffer.
  static bool moe_op(const OpInfo& op) {
    const auto moe_buf = [](Buf b) { return b >= Buf::kRouter && b <= Buf::kSharedScale; };
    return std::any_of(op.reads.begin(), op.reads.end(), moe_buf) ||
           std::any_of(op.writes.begin(), op.writes.end(), moe_buf);
  }

  // A stacked expert weight (kExpertsIn, kExpertsOut, kExpertsGlu).
  static bool expert_weight(const OpInfo& op) {
    return op.weight == WeightKind::kExpertsIn || op.weight == WeightKind::kExpertsOut ||
           op.weight == WeightKind::kExpertsGlu;
  }

  // The length of a norm / bias weight (OpInfo::weight_length); kOutput: the written buffer's width.
  Result<uint64_t> weight_length(const OpInfo& op) const {
    if (op.weight_length == WeightLength::kHeadDim) return m_.architecture.head_dim;
    if (op.weight_length != WeightLength::kOutput) return m_.architecture.hidden_size;
    if (!dims_.ok()) return dims_.status();
    return uint64_t{buffer_width(*dims_, op.writes[0])};
  }

  // A matmul weight is [width(output), width(input)] of the op's buffers; an embedding table [>= V, D].
  Status check_two_d_shape(const OpInfo& op, const TensorEntry& t, const std::string& what) const {
    if (op.weight == WeightKind::kEmbedding) {
      if (t.shape[1] == m_.architecture.hidden_size && t.shape[0] >= m_.architecture.vocab_size) return Status::Ok();
      return error(StatusCode::kValidation, what + ": embedding shape " + shape_to_string(t.shape) +
                                                " != [>= vocabSize " + std::to_string(m_.architecture.vocab_size) +
                                                ", hiddenSize " + std::to_string(m_.architecture.hidden_size) + "]");
    }
    const bool experts = expert_weight(op);
    if (op.weight != WeightKind::kMatmul && !experts) return Status::Ok();
    if (!dims_.ok()) return dims_.status();
    uint64_t n = buffer_width(*dims_, op.output());
    uint64_t k = buffer_width(*dims_, op.input());
    if (experts) {  // stacked [E * per-expert outputs, per-expert inputs]; the buffers hold T experts per token
      if (dims_->experts == 0 || dims_->top_k == 0) {
        return error(StatusCode::kValidation, what + ": an expert step in a model without architecture.moe");
      }
      if (op.weight == WeightKind::kExpertsIn) n /= dims_->top_k;
      if (op.weight == WeightKind::kExpertsGlu) n = n / dims_->top_k * 2;
      if (op.weight == WeightKind::kExpertsOut) k /= dims_->top_k;
      n *= dims_->experts;
    }
    if (t.shape[0] == n && t.shape[1] == k) return Status::Ok();
    return error(StatusCode::kValidation, what + ": shape " + shape_to_string(t.shape) + " != [" + std::to_string(n) +
                                              ", " + std::to_string(k) + "] ([" + std::string(buf_name(op.output())) +
                                              " width, " + std::string(buf_name(op.input())) + " width])");
  }

  Status check_weight(const StepRef& s, const OpInfo& op, const KernelInfo& k, const std::string& label,
                      const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      return error(StatusCode::kValidation, label + ": weight " + q(name) + " (ref " + q(*s.step->weight_ref) +
                                                ") names no tensor");
    }
    const TensorEntry& t = *it->second;
    const std::string what = label + ": kernel " + q(s.step->kernel_key) + ", tensor " + q(name);
    const bool two_d = op.weight == WeightKind::kMatmul || op.weight == WeightKind::kEmbedding || expert_weight(op);
    if (two_d && t.shape.size() != 2) {
      return error(StatusCode::kValidation, what + ": shape " + shape_to_string(t.shape) + " is not 2-D [N, K]");
    }
    RDRR_RETURN_IF_ERROR(check_two_d_shape(op, t, what));
    // A kernel's dtypes are its weight's, except a KV append's (its cache type; its norm weight is F32, below).
    if (op.dispatch != Dispatch::kKvAppendRope && !contains(k.dtypes, t.dtype)) {
      return error(StatusCode::kUnsupported, what + ": kernel reads " + dtypes_string(k.dtypes) + ", tensor is " +
                                                 std::string(quant::dtype_name(t.dtype)));
    }
    const Layout layout = t.layout.value_or(Layout::kRowWise);
    if (!k.layouts.empty() && !contains(k.layouts, layout)) {
      return error(StatusCode::kUnsupported, what + ": kernel reads layout " + layouts_string(k.layouts) +
                                                 ", tensor is " + std::string(quant::layout_name(layout)));
    }
    std::string_view why;
    const bool expert_step = expert_weight(op);
    if ((op.weight == WeightKind::kMatmul || expert_step) && !kernels::matmul_kernel_fits(k, layout, t.shape[1], &why)) {
      return error(StatusCode::kUnsupported, what + ": kernel cannot read this " +
                                                 std::string(quant::layout_name(layout)) + " weight of K " +
                                                 std::to_string(t.shape[1]) + " (" + std::string(why) + ")");
    }
    if (two_d) return Status::Ok();
    RDRR_ASSIGN_OR_RETURN(const uint64_t want, weight_length(op));
    if (t.dtype != DType::kF32 || t.shape.size() != 1 || t.shape[0] != want) {
      return error(StatusCode::kValidation, what + ": expected F32 [" + std::to_string(want) + "], tensor is " +
                                                std::string(quant::dtype_name(t.dtype)) + " " +
                                                shape_to_string(t.shape));
    }
    return Status::Ok();
  }

  bool is_sliding_layer(uint32_t layer) const {
    const auto& types = m_.inference.attention.layer_types;
    return layer < types.size() && types[layer] == LayerType::kSlidingAttention;
  }

  // Sliding / full attention layers (inference.attention.layerTypes): kLocal attention only on sliding
  // layers and the other only on full ones; kLocal rope only on sliding layers of a model with ropeLocalTheta,
  // where the other rope ops are not allowed (they apply ropeTheta and its scaling).
  Status check_layer_kind(const StepRef& s, const OpInfo& op, uint32_t layer) const {
    const bool sliding = is_sliding_layer(layer);
    const bool local_theta = m_.inference.rope.local_theta.has_value();
    const bool local = op.has(kLocal);
    const std::string kind = sliding ? "sliding_attention" : "full_attention";
    const std::string where = s.label(layer) + ": layer " + std::to_string(layer) + " is " + kind +
                              " (inference.attention.layerTypes)";
    if (op.has(kAttends) && local != sliding) {
      return error(StatusCode::kValidation, where + "; it must run " + std::string(counterpart(op)));
    }
    const bool rope = op.has(kRotatesQ) || op.has(kRotatesK);
    if (rope && local && !(sliding && local_theta)) {
      return error(StatusCode::kValidation, where + (local_theta ? "" : " and inference.rope.ropeLocalTheta is absent") +
                                                "; local rope runs only on sliding layers with ropeLocalTheta");
    }
    if (rope && !local && sliding && local_theta) {
      return error(StatusCode::kValidation,
                   where + " and inference.rope.ropeLocalTheta is set; it must run " + std::string(counterpart(op)));
    }
    return Status::Ok();
  }

  // The op that differs from `op` only in kLocal (attention <-> attention_sliding, rope_q <-> rope_q_local).
  static std::string_view counterpart(const OpInfo& op) {
    for (const OpInfo& o : all_ops()) {
      if (o.dispatch == op.dispatch && o.weight == op.weight && o.flags == (op.flags ^ kLocal)) return o.name;
    }
    return "?";
  }

  // The names of the ops with flag `f`, e.g. "kv_append, kv_append_rope, kv_append_rope_local".
  static std::string ops_with(OpFlag f) {
    std::string out;
    for (const OpInfo& o : all_ops()) {
      if (!o.has(f)) continue;
      if (!out.empty()) out += ", ";
      out += o.name;
    }
    return out;
  }

  Status check_layers(Section p) const {
    const uint32_t n_layers = m_.architecture.num_layers;
    std::vector<uint32_t> attention_ops(n_layers, 0);
    std::vector<uint32_t> residuals(n_layers, 0);       // kAddsOwnOutput steps of each layer
    std::vector<uint32_t> fused_residuals(n_layers, 0);  // kAddsPrevOutput steps (adding the layer before)
    std::vector<KPath> k_path(n_layers);
    for (size_t i = 0; i < steps_.size(); ++i) {
      const StepRef& s = steps_[i];
      if (s.phase != p) continue;
      const OpInfo& op = *find_op(s.step->op);  // known: check_step ran first
      for (uint32_t layer : s.layers) {
        RDRR_RETURN_IF_ERROR(check_layer_kind(s, op, layer));
        if (op.has(kAttends)) ++attention_ops[layer];
        if (op.has(kAddsOwnOutput)) ++residuals[layer];
        if (op.has(kAddsPrevOutput)) ++fused_residuals[layer];
        k_path[layer].note(op, i);
      }
    }
    const std::string phase(section_name(p));
    for (uint32_t layer = 0; layer < n_layers; ++layer) {
      if (attention_ops[layer] != 1) {
        return error(StatusCode::kValidation, phase + ": layer " + std::to_string(layer) + " runs " +
                                                  std::to_string(attention_ops[layer]) +
                                                  " attention ops, expected exactly 1");
      }
    }
    for (uint32_t layer = 0; layer < n_layers; ++layer) RDRR_RETURN_IF_ERROR(k_path[layer].check(phase, layer));
    return check_residual_chain(phase, residuals, fused_residuals);
  }

  // How one layer's k reaches the cache: rotated exactly once (a kRotatesK op, possibly while appending) and
  // written exactly once (a kAppendsKv op), a separate rotation before the append. Without this a graph that
  // rotated k twice, or appended it unrotated, would pass and run wrong.
  struct KPath {
    uint32_t rotations = 0;
    uint32_t appends = 0;
    size_t first_rope = SIZE_MAX;    // step index of the first rotation that does not append
    size_t first_append = SIZE_MAX;  // step index of the first append that does not rotate
    void note(const OpInfo& op, size_t index) {
      const bool rotates = op.has(kRotatesK);
      const bool writes = op.has(kAppendsKv);
      if (rotates) ++rotations;
      if (writes) ++appends;
      if (rotates && !writes) first_rope = std::min(first_rope, index);
      if (writes && !rotates) first_append = std::min(first_append, index);
    }
    Status check(const std::string& phase, uint32_t layer) const {
      const std::string where = phase + ": layer " + std::to_string(layer);
      if (appends != 1) {
        return error(StatusCode::kValidation, where + " writes k and v into the cache " + std::to_string(appends) +
                                                  " times (" + ops_with(kAppendsKv) + "), expected exactly 1");
      }
      if (rotations != 1) {
        return error(StatusCode::kValidation, where + " rotates k " + std::to_string(rotations) + " times (" +
                                                  ops_with(kRotatesK) + "), expected exactly 1");
      }
      if (first_append < first_rope && first_rope != SIZE_MAX) {
        return error(StatusCode::kValidation, where + " runs kv_append before rope_k: the cache would hold k "
                                                      "unrotated");
      }
      return Status::Ok();
    }
  };

  // Every layer's output (proj after down_proj / post_ffn_norm) is added to hidden exactly once: by the layer's
  // own kAddsOwnOutput step (residual) or by the next layer's kAddsPrevOutput step (residual_attn_norm); layer 0
  // has nothing to add, and the last layer's output has no next layer to carry it.
  static Status check_residual_chain(const std::string& phase, const std::vector<uint32_t>& residuals,
                                     const std::vector<uint32_t>& fused) {
    const size_t n = residuals.size();
    if (n != 0 && fused[0] != 0) {
      return error(StatusCode::kValidation, phase + ": layer 0 runs residual_attn_norm, but no layer before it "
                                                    "has an output to add (layer 0 runs attn_norm)");
    }
    for (size_t layer = 0; layer < n; ++layer) {
      const uint32_t next = layer + 1 < n ? fused[layer + 1] : 0;
      const uint32_t adds = residuals[layer] + next;
      if (adds == 1) continue;
      std::string how = std::to_string(residuals[layer]) + " residual step(s) in layer " + std::to_string(layer);
      how += layer + 1 < n ? " and " + std::to_string(next) + " residual_attn_norm in layer " + std::to_string(layer + 1)
                           : " (the last layer: only its own residual step can add it)";
      return error(StatusCode::kValidation, phase + ": the output of layer " + std::to_string(layer) + " is added to "
                                                    "hidden " + std::to_string(adds) + " times, expected exactly 1 (" +
                                                    how + ")");
    }
    return Status::Ok();
  }

  Status check_companions() const {
    for (const auto& [key, spec] : g_.kernels) {
      for (std::string_view other : kernels::kernel_companions(key)) {
        if (g_.kernels.find(std::string(other)) == g_.kernels.end()) {
          return error(StatusCode::kValidation, "inference.execution.kernels: kernel " + q(key) +
                                                    " is dispatched with companion " + q(other) +
                                                    ", which is not in the kernels map (so not pinned)");
        }
      }
    }
    return Status::Ok();
  }

  static Status compare_digest(const std::string& where, const std::string& key, const KernelSpec& spec) {
    Result<std::string> compiled = kernels::pinned_kernel_digest(key);
    if (!compiled.ok()) return Status(compiled.status()).context(where);
    if (*compiled == spec.digest) return Status::Ok();
    return error(StatusCode::kIntegrity, where + ": kernel " + q(key) + " is pinned at digest " + spec.digest +
                                             ", this build's kernel has digest " + *compiled +
                                             " (the kernel changed since the pack was converted); run "
                                             "`rdrr-digests repin <pack>`");
  }

  Status check_digests() const {
    std::set<std::string> done;
    for (const StepRef& s : steps_) {
      if (!done.insert(s.step->kernel_key).second) continue;
      RDRR_RETURN_IF_ERROR(compare_digest(s.first_label(), s.step->kernel_key, g_.kernels.at(s.step->kernel_key)));
    }
    for (const auto& [key, spec] : g_.kernels) {
      if (done.count(key) != 0) continue;
      RDRR_RETURN_IF_ERROR(compare_digest("inference.execution.kernels." + key, key, spec));
    }
    return Status::Ok();
  }

  const Manifest& m_;
  const ExecutionGraph& g_;
  std::unordered_map<std::string_view, const TensorEntry*> tensors_;
  std::vector<StepRef> steps_;
  const StepRef* kv_first_ = nullptr;
  Result<Dims> dims_ = model_dims(m_.architecture);
  DType kv_type_ = DType::kF16;
};

}  // namespace

Status check_execution_graph(const Manifest& m, const GraphCheckOptions& o) {
  if (!m.inference.execution) {
    return error(StatusCode::kValidation, "inference.execution: missing (the pack has no execution graph)");
  }
  Checker checker(m, *m.inference.execution);
  return checker.run(o);
}

}  // namespace rdrr::graph
