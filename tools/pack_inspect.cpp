// rdrr-inspect summary: text and JSON views of a validated manifest.
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <variant>

#include "kernels/digest_table.h"
#include "kernels/kernel_choice.h"
#include "rdrr/manifest_json.h"
#include "tools/pack_inspect.h"

namespace rdrr::tools {
namespace {

using nlohmann::json;

std::string placement_string(const TensorPlacement& p) {
  std::string out;
  for (size_t i = 0; i < p.spans.size(); ++i) {
    if (i) out += '+';
    out += std::to_string(p.spans[i].shard_index) + ":" + std::to_string(p.spans[i].offset_bytes);
  }
  return out;
}

std::string layout_string(const TensorEntry& e) {
  return e.layout ? std::string(quant::layout_name(*e.layout)) : std::string("-");
}

json step_json(const ExecStep& s) {
  json j = {{"op", s.op}, {"kernel", s.kernel_key}};
  if (s.weight_ref) j["weight"] = *s.weight_ref;
  return j;
}

json layer_entries_json(const std::vector<LayerEntry>& entries) {
  json out = json::array();
  for (const LayerEntry& e : entries) {
    if (const auto* s = std::get_if<ExecStep>(&e)) {
      out.push_back(step_json(*s));
    } else {
      const auto& g = std::get<LayerGroup>(e);
      json steps = json::array();
      for (const ExecStep& s2 : g.steps) steps.push_back(step_json(s2));
      out.push_back({{"layers", g.layers}, {"steps", steps}});
    }
  }
  return out;
}

json steps_json(const std::vector<ExecStep>& steps) {
  json out = json::array();
  for (const ExecStep& s : steps) out.push_back(step_json(s));
  return out;
}

// The kernels the runtime may run in place of `key` on some devices (kernels/kernel_choice.h), among those the
// graph pins.
std::vector<kernels::DeviceChoice> pinned_device_choices(const ExecutionGraph& g, const std::string& key) {
  std::vector<kernels::DeviceChoice> out;
  for (const kernels::DeviceChoice& c : kernels::device_choices(key)) {
    if (g.kernels.count(std::string(c.kernel)) != 0) out.push_back(c);
  }
  return out;
}

json graph_json(const Manifest& m) {
  if (!m.inference.execution) return nullptr;
  const ExecutionGraph& g = *m.inference.execution;
  json kernels = json::array();
  for (const KernelPinStatus& k : kernel_pin_statuses(m)) {
    const KernelSpec& spec = g.kernels.at(k.key);
    json choices = json::array();
    for (const kernels::DeviceChoice& c : pinned_device_choices(g, k.key)) {
      choices.push_back({{"kernel", c.kernel}, {"when", c.when}});
    }
    kernels.push_back({{"key", k.key},
                       {"kernel", spec.file},
                       {"entry", spec.entry},
                       {"pinnedDigest", k.pinned_digest},
                       {"builtDigest", k.built_digest.empty() ? json(nullptr) : json(k.built_digest)},
                       {"status", k.status},
                       {"deviceChoices", choices}});
  }
  return {{"kernels", kernels},
          {"phases",
           {{"preLayer", steps_json(g.pre_layer)},
            {"prefill", layer_entries_json(g.prefill)},
            {"decode", layer_entries_json(g.decode)},
            {"postLayer", steps_json(g.post_layer)}}}};
}

std::string step_text(const ExecStep& s) {
  std::string out = s.op + "  [" + s.kernel_key + "]";
  if (s.weight_ref) out += "  " + *s.weight_ref;
  return out;
}

std::string layers_text(const std::vector<uint32_t>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(layers[i]);
  }
  return out;
}

void graph_text(const Manifest& m, std::ostringstream& o) {
  if (!m.inference.execution) {
    o << "execution graph: none\n";
    return;
  }
  const ExecutionGraph& g = *m.inference.execution;
  o << "execution graph:\n";
  o << "  preLayer:\n";
  for (const ExecStep& s : g.pre_layer) o << "    " << step_text(s) << "\n";
  for (const auto& [phase, entries] : {std::pair<const char*, const std::vector<LayerEntry>*>{"prefill", &g.prefill},
                                       {"decode", &g.decode}}) {
    o << "  " << phase << " (every layer):\n";
    for (const LayerEntry& e : *entries) {
      if (const auto* s = std::get_if<ExecStep>(&e)) {
        o << "    " << step_text(*s) << "\n";
      } else {
        const auto& grp = std::get<LayerGroup>(e);
        o << "    group layers " << layers_text(grp.layers) << ":\n";
        for (const ExecStep& s2 : grp.steps) o << "      " << step_text(s2) << "\n";
      }
    }
  }
  o << "  postLayer:\n";
  for (const ExecStep& s : g.post_layer) o << "    " << step_text(s) << "\n";
  o << "kernels (" << g.kernels.size() << "):\n";
  for (const KernelPinStatus& k : kernel_pin_statuses(m)) {
    const KernelSpec& spec = g.kernels.at(k.key);
    o << "  " << k.key << "  " << spec.file << ":" << spec.entry << "  " << k.pinned_digest << "  " << k.status;
    if (k.status == kPinStale) o << " (this build: " << k.built_digest << "; run `rdrr-digests repin`)";
    o << "\n";
    for (const kernels::DeviceChoice& c : pinned_device_choices(g, k.key)) {
      o << "    device choice: runs " << c.kernel << " instead for " << c.when << "\n";
    }
  }
}

template <typename Map, typename NameFn>
std::string counts_text(const Map& counts, NameFn name) {
  std::string out;
  for (const auto& [k, n] : counts) {
    if (!out.empty()) out += ", ";
    out += name(k);
    out += ' ';
    out += std::to_string(n);
  }
  return out.empty() ? "-" : out;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / static_cast<double>(1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / static_cast<double>(1ull << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024.0);
  }
  return buf;
}

void header_text(const Manifest& m, std::ostringstream& o) {
  const Architecture& a = m.architecture;
  const Inference& inf = m.inference;
  o << "model: " << m.model_id << "\n";
  o << "family: " << arch_family_name(a.family) << " (" << m.model_type << ", from "
    << source_format_name(m.metadata.source.format) << ", " << m.metadata.converter.name << " "
    << m.metadata.converter.version << ")\n";
  o << "architecture: layers " << a.num_layers << ", hidden " << a.hidden_size << ", intermediate "
    << a.intermediate_size << ", heads " << a.num_attention_heads << " (kv " << a.num_key_value_heads
    << "), head dim " << a.head_dim << ", vocab " << a.vocab_size << ", max seq " << a.max_seq_len << "\n";
  if (a.moe.present()) {
    const MoeArchitecture& e = a.moe;
    o << "experts: " << e.num_experts << " of width " << e.expert_intermediate_size << ", " << e.experts_per_token
      << " per token (softmax, top-k" << (e.normalize_top_k ? ", renormalized" : "") << "), stacked per layer as "
      << "mlp.experts.gate_up_proj [" << e.num_experts << " x " << 2 * e.expert_intermediate_size << ", "
      << a.hidden_size << "] and mlp.experts.down_proj [" << e.num_experts << " x " << a.hidden_size << ", "
      << e.expert_intermediate_size << "]";
    if (e.shared_expert_intermediate_size > 0) {
      o << "; shared expert of width " << e.shared_expert_intermediate_size << (e.shared_expert_gated ? " (gated)" : "");
    }
    o << "; dense layers: ";
    if (e.dense_layers.empty()) o << "none";
    for (size_t i = 0; i < e.dense_layers.size(); ++i) o << (i ? ", " : "") << e.dense_layers[i];
    o << "\n";
  }
  size_t sliding = 0;
  for (LayerType t : inf.attention.layer_types) sliding += t == LayerType::kSlidingAttention ? 1 : 0;
  o << "inference: " << norm_type_name(inf.normalization.type) << " eps " << inf.normalization.rms_norm_eps << ", "
    << activation_name(inf.ffn.activation) << (inf.ffn.gated ? " gated" : "") << ", rope theta " << inf.rope.theta
    << " (" << rope_convention_name(inf.rope.convention) << ", " << rope_scaling_type_name(inf.rope.scaling_type)
    << "), layers: " << (a.num_layers - sliding) << " full / " << sliding << " sliding"
    << (inf.attention.sliding_window ? " (window " : "")
    << (inf.attention.sliding_window ? std::to_string(*inf.attention.sliding_window) + ")" : "")
    << ", tied embeddings " << (inf.output.tie_word_embeddings ? "yes" : "no") << "\n";
  o << "quantization: " << m.quantization << "; dtypes: "
    << counts_text(m.quantization_info.tensor_counts, quant::dtype_name)
    << "; layouts: " << counts_text(m.quantization_info.layout_counts, quant::layout_name) << "\n";
  o << "shards: " << m.shards.size() << ", total " << m.total_size_bytes << " bytes ("
    << human_bytes(m.total_size_bytes)
    << ")\n";
  for (const ShardInfo& s : m.shards) {
    o << "  " << s.filename << "  " << s.size_bytes << " bytes  sha256 " << s.sha256_hex << "\n";
  }
}

void tensors_text(const Manifest& m, std::ostringstream& o) {
  size_t name_w = 4;
  for (const TensorEntry& e : m.tensors) name_w = std::max(name_w, e.name.size());
  o << "tensors (" << m.tensors.size() << "):\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s  %-5s  %-11s  %-14s  %12s  %s\n", static_cast<int>(name_w), "name", "dtype",
                "layout", "shape", "bytes", "shard:offset");
  o << line;
  for (const TensorEntry& e : m.tensors) {
    o << "  " << e.name << std::string(name_w - e.name.size(), ' ');
    std::snprintf(line, sizeof line, "  %-5s  %-11s  %-14s  %12llu  %s\n",
                  std::string(quant::dtype_name(e.dtype)).c_str(), layout_string(e).c_str(),
                  shape_to_string(e.shape).c_str(), static_cast<unsigned long long>(e.size_bytes),
                  placement_string(e.placement).c_str());
    o << line;
  }
}

}  // namespace

std::vector<KernelPinStatus> kernel_pin_statuses(const Manifest& m) {
  std::vector<KernelPinStatus> out;
  if (!m.inference.execution) return out;
  for (const auto& [key, spec] : m.inference.execution->kernels) {
    KernelPinStatus s{.key = key, .pinned_digest = spec.digest, .built_digest = {}, .status = {}};
    Result<std::string> built = kernels::pinned_kernel_digest(key);
    if (!built.ok()) {
      s.status = kPinUnknown;
    } else {
      s.built_digest = *built;
      s.status = *built == spec.digest ? kPinOk : kPinStale;
    }
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json inspect_json(const Manifest& m) {
  // The manifest's own JSON gives architecture and inference parameters in their SPEC spelling.
  const json full = json::parse(serialize_manifest(m));
  json inference = full.at("inference");
  inference.erase("execution");
  json tensors = json::array();
  for (const TensorEntry& e : m.tensors) {
    json spans = json::array();
    for (const Span& s : e.placement.spans) {
      spans.push_back({{"shard", s.shard_index}, {"offset", s.offset_bytes}, {"size", s.size_bytes}});
    }
    tensors.push_back({{"name", e.name},
                       {"dtype", quant::dtype_name(e.dtype)},
                       {"layout", e.layout ? json(quant::layout_name(*e.layout)) : json(nullptr)},
                       {"shape", e.shape},
                       {"bytes", e.size_bytes},
                       {"role", tensor_role_name(e.role)},
                       {"group", e.group},
                       {"spans", spans}});
  }
  json shards = json::array();
  for (const ShardInfo& s : m.shards) {
    shards.push_back({{"filename", s.filename}, {"size", s.size_bytes}, {"sha256", s.sha256_hex}});
  }
  json goldens = json::array();
  for (const GoldenFile& g : m.goldens) goldens.push_back({{"name", g.name}, {"kind", g.kind}, {"size", g.size_bytes}});
  return {{"modelId", m.model_id},
          {"modelType", m.model_type},
          {"family", arch_family_name(m.architecture.family)},
          {"source", full.at("metadata").at("source").at("format")},
          {"converter", full.at("metadata").at("converter")},
          {"architecture", full.at("architecture")},
          {"inference", inference},
          {"quantization",
           {{"preset", m.quantization},
            {"tensorCounts", full.at("quantizationInfo").at("tensorCounts")},
            {"layoutCounts", full.at("quantizationInfo").at("layoutCounts")}}},
          {"totalSize", m.total_size_bytes},
          {"shards", shards},
          {"tensors", tensors},
          {"graph", graph_json(m)},
          {"goldens", goldens}};
}

std::string inspect_text(const Manifest& m) {
  std::ostringstream o;
  header_text(m, o);
  tensors_text(m, o);
  graph_text(m, o);
  o << "goldens: " << m.goldens.size() << "\n";
  for (const GoldenFile& g : m.goldens) o << "  " << g.name << "  " << g.kind << "  " << g.size_bytes << " bytes\n";
  return o.str();
}

}  // namespace rdrr::tools
