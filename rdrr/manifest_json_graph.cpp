// inference.execution <-> ExecutionGraph (both directions; the rest of the manifest is in
// manifest_json_read.cpp / manifest_json_write.cpp).
#include "rdrr/manifest_json_graph.h"

#include <string>
#include <utility>

#include "rdrr/json_fields.h"
#include "rdrr/json_strict.h"

namespace rdrr {

using json_fields::expect_array;
using json_fields::Object;
using json_fields::schema_error;
using nlohmann::json;

namespace {

Status read_constant(const json& v, const std::string& path, SpecConstant& out) {
  if (v.is_boolean()) {
    out = v.get<bool>();
    return Status::Ok();
  }
  if (v.is_number_integer()) {  // also unsigned
    int64_t x = 0;
    RDRR_RETURN_IF_ERROR(json_fields::to_int(v, path, x));
    out = x;
    return Status::Ok();
  }
  if (v.is_number_float()) {
    out = v.get<double>();
    return Status::Ok();
  }
  return schema_error(path, std::string("must be a boolean or a number, got ") + v.type_name());
}

Status read_kernel(const json& v, const std::string& path, KernelSpec& k) {
  RDRR_ASSIGN_OR_RETURN(Object o, Object::open(v, path));
  RDRR_RETURN_IF_ERROR(o.req_string("kernel", k.file, kMaxNameBytes));
  RDRR_RETURN_IF_ERROR(o.req_string("entry", k.entry, kMaxNameBytes));
  RDRR_RETURN_IF_ERROR(o.req_string("digest", k.digest, 128));
  k.constants.clear();
  k.precision.clear();
  if (const json* c = o.get("constants")) {
    RDRR_ASSIGN_OR_RETURN(Object co, Object::open(*c, o.child("constants")));
    if (c->size() > kMaxListEntries) return schema_error(co.path(), "too many entries");
    for (const auto& item : c->items()) {
      SpecConstant sc;
      RDRR_RETURN_IF_ERROR(read_constant(item.value(), co.child(item.key()), sc));
      k.constants.emplace(item.key(), sc);
    }
  }
  if (const json* p = o.get("precision")) {
    RDRR_ASSIGN_OR_RETURN(Object po, Object::open(*p, o.child("precision")));
    if (p->size() > kMaxListEntries) return schema_error(po.path(), "too many entries");
    for (const auto& item : p->items()) {
      std::string s;
      RDRR_RETURN_IF_ERROR(po.req_string(item.key(), s, kMaxNameBytes));
      k.precision.emplace(item.key(), std::move(s));
    }
  }
  return o.finish();
}

Status read_step(const json& v, const std::string& path, ExecStep& s) {
  if (!v.is_array() || v.size() < 2 || v.size() > 3) {
    return schema_error(path, "a step must be an array [op, kernelKey] or [op, kernelKey, weightRef]");
  }
  RDRR_RETURN_IF_ERROR(json_fields::to_string(v[0], json_pointer_child(path, "0"), kMaxNameBytes, s.op));
  RDRR_RETURN_IF_ERROR(json_fields::to_string(v[1], json_pointer_child(path, "1"), kMaxNameBytes, s.kernel_key));
  s.weight_ref.reset();
  if (v.size() == 3) {
    std::string w;
    RDRR_RETURN_IF_ERROR(json_fields::to_string(v[2], json_pointer_child(path, "2"), kMaxNameBytes, w));
    s.weight_ref = std::move(w);
  }
  return Status::Ok();
}

Status read_steps(const json& v, const std::string& path, std::vector<ExecStep>& out) {
  RDRR_RETURN_IF_ERROR(expect_array(v, path, kMaxListEntries));
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    ExecStep s;
    RDRR_RETURN_IF_ERROR(read_step(v[i], json_pointer_child(path, std::to_string(i)), s));
    out.push_back(std::move(s));
  }
  return Status::Ok();
}

Status read_group(const json& v, const std::string& path, LayerGroup& g) {
  RDRR_ASSIGN_OR_RETURN(Object o, Object::open(v, path));
  RDRR_ASSIGN_OR_RETURN(const json* layers, o.need("layers"));
  RDRR_RETURN_IF_ERROR(expect_array(*layers, o.child("layers"), kMaxLayers));
  for (size_t i = 0; i < layers->size(); ++i) {
    uint64_t l = 0;
    RDRR_RETURN_IF_ERROR(
        json_fields::to_uint((*layers)[i], json_pointer_child(o.child("layers"), std::to_string(i)), kMaxLayers, l));
    g.layers.push_back(static_cast<uint32_t>(l));
  }
  RDRR_ASSIGN_OR_RETURN(const json* steps, o.need("steps"));
  RDRR_RETURN_IF_ERROR(read_steps(*steps, o.child("steps"), g.steps));
  return o.finish();
}

Status read_layer_phase(Object& o, std::string_view key, std::vector<LayerEntry>& out) {
  RDRR_ASSIGN_OR_RETURN(const json* v, o.need(key));
  const std::string path = o.child(key);
  RDRR_RETURN_IF_ERROR(expect_array(*v, path, kMaxListEntries));
  out.clear();
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string p = json_pointer_child(path, std::to_string(i));
    if ((*v)[i].is_object()) {
      LayerGroup g;
      RDRR_RETURN_IF_ERROR(read_group((*v)[i], p, g));
      out.emplace_back(std::move(g));
    } else {
      ExecStep s;
      RDRR_RETURN_IF_ERROR(read_step((*v)[i], p, s));
      out.emplace_back(std::move(s));
    }
  }
  return Status::Ok();
}

json step_to_json(const ExecStep& s) {
  json j = json::array({s.op, s.kernel_key});
  if (s.weight_ref) j.push_back(*s.weight_ref);
  return j;
}

json steps_to_json(const std::vector<ExecStep>& steps) {
  json j = json::array();
  for (const ExecStep& s : steps) j.push_back(step_to_json(s));
  return j;
}

json layer_phase_to_json(const std::vector<LayerEntry>& entries) {
  json j = json::array();
  for (const LayerEntry& e : entries) {
    if (const auto* s = std::get_if<ExecStep>(&e)) {
      j.push_back(step_to_json(*s));
    } else {
      const auto& g = std::get<LayerGroup>(e);
      j.push_back(json{{"layers", g.layers}, {"steps", steps_to_json(g.steps)}});
    }
  }
  return j;
}

}  // namespace

Status read_execution_graph(const json& v, const std::string& path, ExecutionGraph& g) {
  RDRR_ASSIGN_OR_RETURN(Object o, Object::open(v, path));
  RDRR_ASSIGN_OR_RETURN(const json* kernels, o.need("kernels"));
  RDRR_ASSIGN_OR_RETURN(Object ko, Object::open(*kernels, o.child("kernels")));
  if (kernels->size() > kMaxListEntries) return schema_error(ko.path(), "too many kernels");
  g.kernels.clear();
  for (const auto& item : kernels->items()) {
    KernelSpec k;
    RDRR_RETURN_IF_ERROR(read_kernel(item.value(), ko.child(item.key()), k));
    g.kernels.emplace(item.key(), std::move(k));
  }
  RDRR_ASSIGN_OR_RETURN(const json* pre, o.need("preLayer"));
  RDRR_RETURN_IF_ERROR(read_steps(*pre, o.child("preLayer"), g.pre_layer));
  RDRR_RETURN_IF_ERROR(read_layer_phase(o, "prefill", g.prefill));
  RDRR_RETURN_IF_ERROR(read_layer_phase(o, "decode", g.decode));
  RDRR_ASSIGN_OR_RETURN(const json* post, o.need("postLayer"));
  RDRR_RETURN_IF_ERROR(read_steps(*post, o.child("postLayer"), g.post_layer));
  {
    RDRR_ASSIGN_OR_RETURN(const json* pol, o.need("policies"));
    RDRR_ASSIGN_OR_RETURN(Object po, Object::open(*pol, o.child("policies")));
    RDRR_RETURN_IF_ERROR(po.req_string("unsupportedPrecision", g.policies.unsupported_precision, 64));
    RDRR_RETURN_IF_ERROR(po.req_string("dtypeTransition", g.policies.dtype_transition, 64));
    RDRR_RETURN_IF_ERROR(po.req_string("unresolvedKernel", g.policies.unresolved_kernel, 64));
    RDRR_RETURN_IF_ERROR(po.finish());
  }
  return o.finish();
}

json execution_graph_to_json(const ExecutionGraph& g) {
  json kernels = json::object();
  for (const auto& [key, k] : g.kernels) {
    json kj{{"kernel", k.file}, {"entry", k.entry}, {"digest", k.digest}};
    if (!k.constants.empty()) {
      json c = json::object();
      for (const auto& [name, value] : k.constants) {
        std::visit([&c, &name = name](const auto& x) { c[name] = x; }, value);
      }
      kj["constants"] = std::move(c);
    }
    if (!k.precision.empty()) kj["precision"] = k.precision;
    kernels[key] = std::move(kj);
  }
  return json{{"kernels", std::move(kernels)},
              {"preLayer", steps_to_json(g.pre_layer)},
              {"prefill", layer_phase_to_json(g.prefill)},
              {"decode", layer_phase_to_json(g.decode)},
              {"postLayer", steps_to_json(g.post_layer)},
              {"policies",
               {{"unsupportedPrecision", g.policies.unsupported_precision},
                {"dtypeTransition", g.policies.dtype_transition},
                {"unresolvedKernel", g.policies.unresolved_kernel}}}};
}

}  // namespace rdrr
