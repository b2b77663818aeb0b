// rdrr-verify PACK: the correctness gates of a pack (engine and gate definitions in verify/gates.h). Thin main:
// flags -> VerifyOptions, one line per gate on stdout, optional JSON report, exit code of the first failing
// gate (README "Exit codes", tools/exit_codes.h).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <string>

#include "rdrr/archive.h"
#include "tools/exit_codes.h"
#include "verify/gates.h"

static_assert(rdrr::tools::kExitVerifyInvalidPack == rdrr::verify::kExitVerifyInvalidPack);
static_assert(rdrr::tools::kExitVerifyIntegrity == rdrr::verify::kExitVerifyIntegrity);
static_assert(rdrr::tools::kExitVerifyKernelPin == rdrr::verify::kExitVerifyKernelPin);
static_assert(rdrr::tools::kExitVerifyFidelity == rdrr::verify::kExitVerifyFidelity);
static_assert(rdrr::tools::kExitVerifyQuality == rdrr::verify::kExitVerifyQuality);
static_assert(rdrr::tools::kExitVerifyNoDevice == rdrr::verify::kExitVerifyNoDevice);
static_assert(rdrr::tools::kExitVerifyLoad == rdrr::verify::kExitVerifyLoad);

int main(int argc, char** argv) {
  CLI::App app{"rdrr-verify: check a pack (structure, integrity, kernel pins, load, fidelity, quality)"};
  std::string pack, golden, json_path, thresholds, device;
  bool skip_gpu = false;
  bool quiet = false;
  app.add_option("PACK", pack, "pack directory or .rdrr.tar.zst")->required();
  app.add_option("--golden", golden, "also compare with a tiny-fixture-golden/v1 JSON (e.g. HF logits)");
  app.add_option("--json", json_path, "write the JSON report to this file ('-': stdout)");
  app.add_option("--thresholds", thresholds, "JSON file overriding the default bounds (verify/README.md)");
  app.add_option("--device", device, "Vulkan device: index or name substring (default: RDRR_DEVICE / automatic)");
  app.add_flag("--skip-gpu", skip_gpu, "no Vulkan: skip gate 4, run gates 5-7 on the CPU reference of the pack");
  app.add_flag("--quiet", quiet, "no gate lines");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : rdrr::tools::kExitUsage;
  }
  // A pack shipped as one .rdrr.tar.zst (rdrr-pack) is extracted to a private temp folder first.
  rdrr::Result<rdrr::PackLocation> loc = rdrr::locate_pack(pack);
  if (!loc.ok()) {
    std::cerr << "rdrr-verify: " << loc.status().to_string() << "\n";
    return rdrr::tools::exit_code_for(loc.status().code());
  }
  rdrr::verify::VerifyOptions o;
  o.pack = loc->dir;
  if (!golden.empty()) o.external_golden = golden;
  o.skip_gpu = skip_gpu;
  o.device_spec = device;
  if (!thresholds.empty()) {
    rdrr::Result<rdrr::verify::Thresholds> t = rdrr::verify::read_thresholds(thresholds);
    if (!t.ok()) {
      std::cerr << "rdrr-verify: --thresholds: " << t.status().to_string() << "\n";
      return rdrr::tools::exit_code_for(t.status().code());
    }
    o.thresholds = *t;
  }
  const bool json_stdout = json_path == "-";
  if (!quiet) {
    o.on_gate = [json_stdout](const rdrr::verify::GateResult& g) {
      (json_stdout ? std::cerr : std::cout) << rdrr::verify::format_gate_line(g) << std::flush;
    };
  }
  const rdrr::verify::VerifyReport r = rdrr::verify::run_verify(o);
  if (!quiet) {
    (json_stdout ? std::cerr : std::cout) << (r.exit_code == 0 ? "PASS" : "FAIL") << " (exit " << r.exit_code
                                          << (r.backend.empty() ? "" : ", backend " + r.backend) << ")\n";
  }
  if (json_stdout) {
    std::cout << rdrr::verify::report_to_json(r) << std::flush;
  } else if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << rdrr::verify::report_to_json(r);
    if (!out) {
      std::cerr << "rdrr-verify: --json " << json_path << ": cannot write\n";
      return rdrr::tools::exit_code_for(rdrr::StatusCode::kIo);
    }
  }
  return r.exit_code;
}
