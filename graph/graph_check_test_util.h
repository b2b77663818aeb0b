// Helpers of the graph checker's tests (graph_check_test.cpp, graph_check_rope_test.cpp, graph_check_moe_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph_check.h"
#include "graph/graph_plan.h"
#include "kernels/digest_table.h"
#include "rdrr/manifest_testutil.h"

namespace rdrr::graph {

// tiny-gemma3-like manifest (sliding layers 0-1, Q6_K v/down on layer 2, q/k norms, tied Q6_K embedding)
// with the planner's graph.
inline Manifest planned_manifest() {
  Manifest m = testing::tiny_gemma3_manifest();
  m.inference.execution.reset();
  Result<ExecutionGraph> g = plan_execution_graph(m);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (g.ok()) m.inference.execution = std::move(g).value();
  return m;
}

inline ExecutionGraph& graph(Manifest& m) { return *m.inference.execution; }

// Every step of a layer phase with op `op` (plain or inside a group).
inline std::vector<ExecStep*> steps_with_op(std::vector<LayerEntry>& phase, std::string_view op) {
  std::vector<ExecStep*> out;
  for (LayerEntry& e : phase) {
    if (auto* s = std::get_if<ExecStep>(&e)) {
      if (s->op == op) out.push_back(s);
      continue;
    }
    for (ExecStep& s : std::get<LayerGroup>(e).steps) {
      if (s.op == op) out.push_back(&s);
    }
  }
  return out;
}

inline ExecStep& first_step(Manifest& m, std::string_view op, bool decode = true) {
  std::vector<ExecStep*> s = steps_with_op(decode ? graph(m).decode : graph(m).prefill, op);
  EXPECT_FALSE(s.empty()) << op;
  return *s.front();
}

inline TensorEntry& tensor(Manifest& m, std::string_view name) {
  for (TensorEntry& t : m.tensors) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return m.tensors.front();
}

inline void expect_error(const Manifest& m, StatusCode code, const std::vector<std::string>& fragments,
                  const GraphCheckOptions& o = {}) {
  const Status s = check_execution_graph(m, o);
  ASSERT_EQ(s.code(), code) << s.to_string();
  for (const std::string& f : fragments) EXPECT_NE(s.message().find(f), std::string::npos) << s.message() << "\n  lacks: " << f;
}

// Rewrites every step of a layer phase (plain or in a group) into the steps `f` returns for it (the step itself when
// it returns nothing).
using StepRewrite = std::function<std::vector<ExecStep>(const ExecStep&)>;
inline void rewrite_steps(std::vector<LayerEntry>& phase, const StepRewrite& f) {
  std::vector<LayerEntry> out;
  for (LayerEntry& e : phase) {
    if (auto* g = std::get_if<LayerGroup>(&e)) {
      std::vector<ExecStep> steps;
      for (const ExecStep& s : g->steps) {
        std::vector<ExecStep> r = f(s);
        if (r.empty()) r = {s};
        steps.insert(steps.end(), r.begin(), r.end());
      }
      g->steps = std::move(steps);
      out.push_back(std::move(e));
      continue;
    }
    std::vector<ExecStep> r = f(std::get<ExecStep>(e));
    if (r.empty()) r = {std::get<ExecStep>(e)};
    for (ExecStep& s : r) out.emplace_back(std::move(s));
  }
  phase = std::move(out);
}

// The graph of packs converted before the q / k norms ran inside the rotations: q_norm_rope[_local] becomes q_norm +
// rope_q[_local] and kv_append_norm_rope[_local] k_norm + kv_append_rope[_local] (their kernels added to the map).
inline void unfuse_head_norms(Manifest& m) {
  const auto spec = [](std::string_view file, const std::string& k, bool kv) {
    return KernelSpec{std::string(file), "main", kernels::pinned_kernel_digest(k).value(), {},
                      kv ? std::map<std::string, std::string>{{"kvDtype", k.ends_with("f32") ? "f32" : "f16"}}
                         : std::map<std::string, std::string>{}};
  };
  std::vector<std::pair<std::string, KernelSpec>> added;
  const StepRewrite unfuse = [&](const ExecStep& s) -> std::vector<ExecStep> {
    const bool local = s.op.ends_with("_local");
    if (s.op.starts_with("q_norm_rope")) {
      const std::string rope = s.kernel_key == "rope_freqs_norm" ? "rope_freqs" : "rope";
      added.push_back({rope, spec("rope.comp", rope, false)});
      added.push_back({"rms_norm", spec("rmsnorm.comp", "rms_norm", false)});
      return {ExecStep{"q_norm", "rms_norm", s.weight_ref},
              ExecStep{local ? "rope_q_local" : "rope_q", rope, std::nullopt}};
    }
    if (s.op.starts_with("kv_append_norm_rope")) {
      const std::string kv = "kv_append_rope_" + s.kernel_key.substr(s.kernel_key.size() - 3);
      added.push_back({kv, spec("kv_append.comp", kv, true)});
      return {ExecStep{"k_norm", "rms_norm", s.weight_ref},
              ExecStep{local ? "kv_append_rope_local" : "kv_append_rope", kv, std::nullopt}};
    }
    return {};
  };
  rewrite_steps(graph(m).prefill, unfuse);
  rewrite_steps(graph(m).decode, unfuse);
  for (const auto& [name, k] : added) graph(m).kernels.emplace(name, k);
}

// planned_manifest() with the head norms unfused (the op names the older tests address).
inline Manifest planned_unfused_manifest() {
  Manifest m = planned_manifest();
  unfuse_head_norms(m);
  return m;
}

}  // namespace rdrr::graph
