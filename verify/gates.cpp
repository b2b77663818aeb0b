// rdrr-verify orchestration: gate order, skipping, exit code, thresholds, text and JSON output.
#include "verify/gates.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "rdrr/json_strict.h"
#include "rdrr/mapped_file.h"
#include "verify/gates_internal.h"
#include "verify/golden_gen.h"

namespace rdrr::verify {

using internal::skipped;

Thresholds default_thresholds() {
  Thresholds t;
  // Measured on the fixture models with the golden prompts and the HF prompts (verify/README.md "Bounds"),
  // with head room; an 8B model quantizes far better than these tiny ones.
  // Fixtures, golden prompts from text (the pack's tokenizer, 86 positions): Q4_K_M KLD 0.032-0.078, top-1
  // 0.76-0.87; random token-id prompts (packs without a readable tokenizer, flat distributions): Q8_0 KLD
  // <= 0.0016, top-1 >= 0.95; Q4_K / Q4_K_M KLD 0.039-0.19, top-1 0.61-0.83 (HF prompts: KLD 0.024-0.057,
  // top-1 0.89-0.93).
  t.quality = {{"F32", {1e-4, 0.98}},  {"F16", {1e-3, 0.95}}, {"BF16", {5e-3, 0.90}},
               {"Q8_0", {0.01, 0.90}}, {"Q4_K", {0.2, 0.6}},   {"Q4_K_M", {0.2, 0.6}}};
  return t;
}

Result<ExternalAnchor> parse_external_anchor(std::string_view text) {
  const std::string s(text);
  const size_t comma = s.find(',');
  auto number = [](const std::string& field, const std::string& v, double lo, double hi,
                   const char* range) -> Result<double> {
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size() || !std::isfinite(x) || x < lo || x > hi) {
      return error(StatusCode::kInvalidArgument,
                   "--golden-anchor " + field + " '" + v + "': expected a number in " + std::string(range));
    }
    return x;
  };
  ExternalAnchor a;
  RDRR_ASSIGN_OR_RETURN(a.kld_mean, number("KLD", s.substr(0, comma), 0.0, HUGE_VAL, "[0, inf)"));
  if (comma != std::string::npos) {
    RDRR_ASSIGN_OR_RETURN(a.top1, number("TOP1", s.substr(comma + 1), 0.0, 1.0, "[0, 1]"));
  }
  return a;
}

Result<Thresholds> read_thresholds(const std::filesystem::path& file, Thresholds base) {
  RDRR_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(file));
  const std::string name = file.string();
  RDRR_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_strict(std::string_view(reinterpret_cast<const char*>(f.bytes().data()),
                                                                             f.bytes().size()), name));
  auto number = [&](const nlohmann::json& v, const std::string& where, double hi) -> Result<double> {
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > hi) {
      return error(StatusCode::kSchema, name + ": " + where + ": " + json_brief(v) + " is not a number in [0, " +
                                            (hi > 1 ? std::string("inf") : std::string("1")) + "]");
    }
    return v.get<double>();
  };
  const double inf = 1e300;
  if (!j.is_object()) return error(StatusCode::kSchema, name + ": not a JSON object");
  for (const auto& [key, val] : j.items()) {
    if (key == "fidelity" && val.is_object()) {
      for (const auto& [k, v] : val.items()) {
        double* dst = k == "nmse_f32" ? &base.nmse_f32 : k == "nmse_f16_kv" ? &base.nmse_f16_kv
                    : k == "near_tie_margin" ? &base.near_tie_margin : nullptr;
        if (!dst) return error(StatusCode::kSchema, name + ": fidelity." + k + ": unknown key");
        RDRR_ASSIGN_OR_RETURN(*dst, number(v, "fidelity." + k, inf));
      }
    } else if (key == "quality" && val.is_object()) {
      for (const auto& [preset, b] : val.items()) {
        if (!b.is_object()) return error(StatusCode::kSchema, name + ": quality." + preset + ": not an object");
        QualityBound q = base.quality[preset];
        for (const auto& [k, v] : b.items()) {
          if (k == "kld_mean") {
            RDRR_ASSIGN_OR_RETURN(q.kld_mean_max, number(v, "quality." + preset + ".kld_mean", inf));
          } else if (k == "top1") {
            RDRR_ASSIGN_OR_RETURN(q.top1_min, number(v, "quality." + preset + ".top1", 1.0));
          } else {
            return error(StatusCode::kSchema, name + ": quality." + preset + "." + k + ": unknown key");
          }
        }
        base.quality[preset] = q;
      }
    } else {
      return error(StatusCode::kSchema, name + ": " + key + ": unknown key or not an object");
    }
  }
  return base;
}

std::string_view gate_status_name(GateStatus s) {
  switch (s) {
    case GateStatus::kPass: return "PASS";
    case GateStatus::kFail: return "FAIL";
    case GateStatus::kSkip: return "SKIP";
    case GateStatus::kNotRun: return "NOT RUN";
  }
  return "?";
}

namespace {

struct Runner {
  const VerifyOptions& o;
  VerifyReport r;

  void add(GateResult g) {
    if (g.status == GateStatus::kFail && r.exit_code == 0) r.exit_code = g.exit_code;
    if (o.on_gate) o.on_gate(g);
    r.gates.push_back(std::move(g));
  }
  void skip_from(int first, const std::string& why) {
    static const char* names[] = {"", "structure", "integrity", "kernels", "load", "fidelity", "quality", "external"};
    for (int n = first; n <= 7; ++n) {
      if (n == 7 && !o.external_golden) break;
      add(skipped(n, names[n], why));
    }
  }
  bool failed() const { return r.gates.back().status == GateStatus::kFail; }

  void run() {
    r.pack = o.pack.string();
    std::optional<Manifest> m;
    add(internal::gate_structure(o.pack, m));
    if (failed()) return skip_from(2, "after gate 1 failed");
    add(internal::gate_integrity(*m, o.pack));
    if (failed()) return skip_from(3, "after gate 2 failed");
    add(internal::gate_kernels(*m, o.pack));
    std::unique_ptr<LogitsBackend> backend;
    if (o.skip_gpu) {
      add(skipped(4, "load", "--skip-gpu (gates 5-7 run on the CPU reference of the pack)"));
      if (m->goldens.empty() && !o.external_golden) return not_run_outputs(*m);  // nothing to compare against
      Result<std::unique_ptr<LogitsBackend>> cpu = open_cpu_backend(*m, o.pack);
      if (!cpu.ok()) {
        GateResult g = internal::make_gate(5, "fidelity");
        internal::fail(g, kExitVerifyInvalidPack, "CPU reference of the pack: " + cpu.status().to_string());
        add(std::move(g));
        return skip_from(6, "no backend");
      }
      backend = std::move(*cpu);
    } else {
      if (failed()) return skip_from(4, "after gate 3 failed (the runtime refuses stale kernel pins)");
      add(internal::gate_load(o.pack, o, backend));
      if (failed()) return skip_from(5, "after gate 4 failed");
    }
    r.backend = backend->name();
    run_golden_gates(*m, *backend);
    if (o.external_golden) add(internal::gate_external(*backend, *o.external_golden, *m, o.thresholds, o.external_anchor));
  }

  // Gates 5-6 cannot run: the pack has no goldens.
  void not_run_outputs(const Manifest& m) {
    r.not_checked_reason = missing_goldens_reason(m);
    for (auto [n, name] : {std::pair{5, "fidelity"}, std::pair{6, "quality"}}) {
      GateResult g = internal::make_gate(n, name);
      g.status = GateStatus::kNotRun;
      g.detail = r.not_checked_reason + (o.structure_only ? " (--structure-only)" : "") +
                 "; add goldens: rdrr-verify PACK --make-goldens SRC";
      add(std::move(g));
    }
  }

  void run_golden_gates(const Manifest& m, LogitsBackend& backend) {
    if (m.goldens.empty()) return not_run_outputs(m);
    Result<GoldenSet> golden = read_golden(m, o.pack);
    if (!golden.ok()) {
      GateResult g = internal::make_gate(5, "fidelity");
      internal::fail(g, kExitVerifyInvalidPack, "golden: " + golden.status().to_string());
      add(std::move(g));
      add(skipped(6, "quality", "no readable golden"));
      return;
    }
    Result<internal::BackendRuns> runs = internal::run_backend(backend, *golden);
    if (!runs.ok()) {
      GateResult g = internal::make_gate(5, "fidelity");
      internal::fail(g, kExitVerifyFidelity, backend.name() + ": " + runs.status().to_string());
      add(std::move(g));
      add(skipped(6, "quality", "the backend failed"));
      return;
    }
    add(internal::gate_fidelity(*runs, *golden, o.thresholds, backend.f16_kv()));
    add(internal::gate_quality(*runs, *golden, m, o.thresholds));
  }
};

}  // namespace

VerifyReport run_verify(const VerifyOptions& options) {
  Runner runner{options, {}};
  runner.run();
  VerifyReport& r = runner.r;
  for (const GateResult& g : r.gates) r.outputs_checked |= g.number >= 5 && g.status == GateStatus::kPass;
  if (r.outputs_checked) {
    r.not_checked_reason.clear();
  } else if (r.not_checked_reason.empty()) {
    r.not_checked_reason = "no output gate passed";
  }
  // Never PASS for outputs that were not checked, unless structure-only checks were asked for.
  if (r.exit_code == 0 && !r.outputs_checked && !options.structure_only) r.exit_code = kExitVerifyStructureOnly;
  return std::move(r);
}

std::string missing_goldens_reason(const Manifest& m) {
  const auto& flags = m.metadata.converter.flags;
  if (const auto it = flags.find(std::string(kGoldenSkippedFlag)); it != flags.end()) {
    return "the pack has no goldens: they were skipped at conversion (" + it->second + ")";
  }
  if (const auto it = flags.find("golden-prompts"); it != flags.end() && it->second == "none") {
    return "the pack has no goldens: converted with --golden-prompts none";
  }
  return "the pack has no goldens";
}

std::string format_summary(const VerifyReport& r) {
  std::string head;
  if (r.exit_code == kExitVerifyStructureOnly) {
    head = "NOT VERIFIED: structure only, outputs not checked (" + r.not_checked_reason + ")";
  } else if (r.exit_code == 0) {
    head = r.outputs_checked ? "PASS" : "PASS (structure only, --structure-only; " + r.not_checked_reason + ")";
  } else {
    head = "FAIL";
  }
  return head + " (exit " + std::to_string(r.exit_code) + (r.backend.empty() ? "" : ", backend " + r.backend) + ")";
}

std::string format_gate_line(const GateResult& g) {
  char head[64];
  std::snprintf(head, sizeof head, "[%d] %-10s %s", g.number, g.name.c_str(), std::string(gate_status_name(g.status)).c_str());
  std::string line = head;
  if (!g.figure.empty()) line += "  " + g.figure;
  if (!g.bound.empty() && g.status != GateStatus::kSkip) line += "  (bound: " + g.bound + ")";
  line += "\n";
  if (!g.detail.empty()) {
    std::string d = g.detail;
    size_t pos = 0;
    while ((pos = d.find('\n', pos)) != std::string::npos) d.replace(pos, 1, "\n      "), pos += 7;
    line += "      " + d + "\n";
  }
  return line;
}

std::string report_to_json(const VerifyReport& r) {
  nlohmann::json gates = nlohmann::json::array();
  for (const GateResult& g : r.gates) {
    gates.push_back({{"gate", g.number}, {"name", g.name}, {"status", gate_status_name(g.status)},
                     {"figure", g.figure}, {"bound", g.bound}, {"detail", g.detail}, {"metrics", g.metrics}});
  }
  const nlohmann::json j = {{"pack", r.pack}, {"backend", r.backend}, {"exit_code", r.exit_code},
                            {"pass", r.exit_code == 0}, {"outputs_checked", r.outputs_checked},
                            {"outputs_not_checked_reason", r.not_checked_reason}, {"gates", gates}};
  return j.dump(2) + "\n";
}

}  // namespace rdrr::verify
