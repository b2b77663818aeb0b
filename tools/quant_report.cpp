// rdrr-quant-report MODEL_DIR [--hf PATH] [--gguf PATH] [--json]
// Per 2-D tensor that llama.cpp stored as Q4_K or Q6_K: our relative RMSE, llama.cpp's, and the ratio.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "tools/exit_codes.h"
#include "verify/quant_quality.h"

int main(int argc, char** argv) {
  CLI::App app{"Quantization error of rdrr's Q4_K/Q6_K encoders vs llama.cpp's blocks in a GGUF"};
  std::string model_dir, hf, gguf;
  bool json = false;
  app.add_option("model_dir", model_dir, "folder with hf/ (SafeTensors) and gguf/ (one llama.cpp GGUF)");
  app.add_option("--hf", hf, "SafeTensors file or HF folder (overrides MODEL_DIR/hf)");
  app.add_option("--gguf", gguf, "llama.cpp GGUF (overrides MODEL_DIR/gguf/*.gguf)");
  app.add_flag("--json", json, "print JSON instead of a table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
  rdrr::tools::QualityInputs inputs;
  if (model_dir.empty() && (hf.empty() || gguf.empty())) {
    std::fprintf(stderr, "rdrr-quant-report: give MODEL_DIR, or both --hf and --gguf\n");
    return rdrr::tools::kExitUsage;
  }
  if (!model_dir.empty()) {
    inputs.hf = std::filesystem::path(model_dir) / "hf";
    if (gguf.empty()) {
      auto found = rdrr::tools::find_quality_inputs(model_dir);
      if (!found.ok()) {
        std::fprintf(stderr, "rdrr-quant-report: %s\n", found.status().to_string().c_str());
        return rdrr::tools::exit_code_for(found.status().code());
      }
      inputs = *found;
    }
  }
  if (!hf.empty()) inputs.hf = hf;
  if (!gguf.empty()) inputs.gguf = gguf;
  auto report = rdrr::tools::measure_quant_quality(inputs);
  if (!report.ok()) {
    std::fprintf(stderr, "rdrr-quant-report: %s\n", report.status().to_string().c_str());
    return rdrr::tools::exit_code_for(report.status().code());
  }
  const std::string text = json ? rdrr::tools::format_quality_json(*report) : rdrr::tools::format_quality_table(*report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (json) std::fputc('\n', stdout);
  return rdrr::tools::kExitOk;
}
