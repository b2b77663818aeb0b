// rdrr-verify PACK: the correctness gates of a pack (engine and gate definitions in verify/gates.h). Thin main:
// flags -> VerifyOptions, one line per gate on stdout, optional JSON report, exit code of the first failing
// gate (README "Exit codes", tools/exit_codes.h).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <string>

#include "rdrr/archive.h"
#include "rdrr/file_io.h"
#include "tools/exit_codes.h"
#include "verify/gates.h"
#include "verify/golden_gen.h"

static_assert(rdrr::tools::kExitVerifyInvalidPack == rdrr::verify::kExitVerifyInvalidPack);
static_assert(rdrr::tools::kExitVerifyIntegrity == rdrr::verify::kExitVerifyIntegrity);
static_assert(rdrr::tools::kExitVerifyKernelPin == rdrr::verify::kExitVerifyKernelPin);
static_assert(rdrr::tools::kExitVerifyFidelity == rdrr::verify::kExitVerifyFidelity);
static_assert(rdrr::tools::kExitVerifyQuality == rdrr::verify::kExitVerifyQuality);
static_assert(rdrr::tools::kExitVerifyNoDevice == rdrr::verify::kExitVerifyNoDevice);
static_assert(rdrr::tools::kExitVerifyLoad == rdrr::verify::kExitVerifyLoad);
static_assert(rdrr::tools::kExitVerifyStructureOnly == rdrr::verify::kExitVerifyStructureOnly);

namespace {

// --make-goldens SRC: add goldens to the pack directory (then verify it as usual).
int make_goldens(const std::string& pack, const std::string& src, const rdrr::verify::GoldenOptions& options) {
  if (rdrr::is_archive_path(pack)) {
    std::cerr << "rdrr-verify: --make-goldens: " << pack << " is a pack archive; give the pack directory\n";
    return rdrr::tools::kExitUsage;
  }
  std::cerr << "rdrr-verify: making goldens for " << pack << " from " << src << "\n";
  const rdrr::Status s = rdrr::verify::add_goldens_to_pack(pack, src, options);
  if (!s.ok()) {
    std::cerr << "rdrr-verify: --make-goldens: " << s.to_string() << "\n";
    return rdrr::tools::exit_code_for(s.code());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  rdrr::ignore_sigxfsz();  // a file size limit (disk full) is an error with exit 6, not death by SIGXFSZ
  CLI::App app{"rdrr-verify: check a pack (structure, integrity, kernel pins, load, fidelity, quality)"};
  std::string pack, golden, anchor, json_path, thresholds, device, make_goldens_src;
  rdrr::verify::GoldenOptions golden_options;
  bool skip_gpu = false, structure_only = false;
  bool quiet = false;
  app.add_option("PACK", pack, "pack directory or .rdrr.tar.zst")->required();
  app.add_option("--golden", golden, "also compare with a tiny-fixture-golden/v1 JSON (e.g. HF logits)");
  app.add_option("--golden-anchor", anchor,
                 "KLD[,TOP1]: another implementation's figures on the same file vs the same --golden (e.g. "
                 "llama.cpp's); gate 7 then requires KLD <= 1.1x and top-1 >= TOP1 - 0.1 instead of the "
                 "quantization's bound");
  app.add_option("--json", json_path, "write the JSON report to this file ('-': stdout)");
  app.add_option("--thresholds", thresholds, "JSON file overriding the default bounds (verify/README.md)");
  app.add_option("--device", device, "Vulkan device: index or name substring (default: RDRR_DEVICE / automatic)");
  app.add_flag("--skip-gpu", skip_gpu, "no Vulkan: skip gate 4, run gates 5-7 on the CPU reference of the pack");
  app.add_flag("--quiet", quiet, "no gate lines");
  app.add_flag("--structure-only", structure_only,
               "a pack without goldens passes on structure, integrity, pins and load (exit 0, not 27)");
  app.add_option("--make-goldens", make_goldens_src,
                 "first add goldens to the pack (a directory) from its conversion input SRC, then verify");
  app.add_option("--golden-prompts", golden_options.prompts, "with --make-goldens: prompts (default 4)");
  app.add_option("--golden-tokens", golden_options.tokens_per_prompt, "with --make-goldens: tokens per prompt");
  app.add_option("--golden-steps", golden_options.greedy_steps, "with --make-goldens: greedy steps");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : rdrr::tools::kExitUsage;
  }
  if (make_goldens_src.empty() &&
      app.count("--golden-prompts") + app.count("--golden-tokens") + app.count("--golden-steps") > 0) {
    std::cerr << "rdrr-verify: --golden-prompts / --golden-tokens / --golden-steps size --make-goldens\n";
    return rdrr::tools::kExitUsage;
  }
  if (!make_goldens_src.empty()) {
    if (golden_options.prompts == 0) {
      std::cerr << "rdrr-verify: --golden-prompts must be at least 1 with --make-goldens\n";
      return rdrr::tools::kExitUsage;
    }
    if (const int rc = make_goldens(pack, make_goldens_src, golden_options); rc != 0) return rc;
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
  if (!anchor.empty()) {
    if (golden.empty()) {
      std::cerr << "rdrr-verify: --golden-anchor bounds gate 7: it needs --golden\n";
      return rdrr::tools::kExitUsage;
    }
    rdrr::Result<rdrr::verify::ExternalAnchor> a = rdrr::verify::parse_external_anchor(anchor);
    if (!a.ok()) {
      std::cerr << "rdrr-verify: " << a.status().message() << "\n";
      return rdrr::tools::kExitUsage;
    }
    o.external_anchor = *a;
  }
  o.skip_gpu = skip_gpu;
  o.structure_only = structure_only;
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
    (json_stdout ? std::cerr : std::cout) << rdrr::verify::format_summary(r) << "\n";
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
