// rdrr-inspect PACK [--json]: a pack's summary (model, architecture, quantization, shards, tensors, execution
// graph, kernels with digest status). rdrr-inspect PACK --tensor NAME --dequantize OUT.f32: one tensor decoded
// to raw little-endian f32, logical [N, K] row-major. rdrr-inspect --ops: the execution graph's op vocabulary
// (graph/graph_ops.h) as the markdown table of rdrr/SPEC.md section 9.2. Thin main; the engine is
// tools/pack_inspect.h.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "graph/graph_ops.h"
#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "tools/exit_codes.h"
#include "rdrr/archive.h"
#include "tools/pack_inspect.h"

namespace {

int fail(const rdrr::Status& s) {
  std::cerr << "rdrr-inspect: " << s.to_string() << "\n";
  return rdrr::tools::exit_code_for(s.code());
}

}  // namespace

int main(int argc, char** argv) {
  rdrr::ignore_sigxfsz();
  CLI::App app{"rdrr-inspect: summarize an RDRR pack, or decode one of its tensors to f32"};
  std::string pack;
  std::string tensor;
  std::string dequantize;
  bool json = false;
  bool ops = false;
  CLI::Option* pack_opt = app.add_option("PACK", pack, "pack directory or .rdrr.tar.zst");
  app.add_flag("--ops", ops, "print the op vocabulary of this build (rdrr/SPEC.md 9.2) and exit")->excludes(pack_opt);
  app.add_flag("--json", json, "print the summary as JSON");
  app.add_option("--tensor", tensor, "tensor name (with --dequantize)");
  app.add_option("--dequantize", dequantize, "write --tensor decoded to raw little-endian f32 [N, K] row-major");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : rdrr::tools::kExitUsage;
  }
  if (ops) {
    std::cout << rdrr::graph::op_table_markdown();
    return rdrr::tools::kExitOk;
  }
  if (pack.empty()) return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "PACK is required (or --ops)"));
  if (tensor.empty() != dequantize.empty()) {
    return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "--tensor and --dequantize go together"));
  }

  // A pack shipped as one .rdrr.tar.zst (rdrr-pack) is extracted to a private temp folder first.
  rdrr::Result<rdrr::PackLocation> loc = rdrr::locate_pack(pack);
  if (!loc.ok()) return fail(loc.status());
  pack = loc->dir.string();
  rdrr::Result<rdrr::Manifest> m = rdrr::read_manifest_file(pack);
  if (!m.ok()) return fail(m.status());
  if (!tensor.empty()) {
    rdrr::Result<uint64_t> n = rdrr::tools::dequantize_tensor_to_file(*m, pack, tensor, dequantize);
    if (!n.ok()) return fail(n.status());
    std::cerr << "rdrr-inspect: " << tensor << ": wrote " << *n << " f32 values to " << dequantize << "\n";
    return rdrr::tools::kExitOk;
  }
  if (json) {
    std::cout << rdrr::tools::inspect_json(*m).dump(2) << "\n";
  } else {
    std::cout << rdrr::tools::inspect_text(*m);
  }
  return std::cout.flush() ? rdrr::tools::kExitOk : rdrr::tools::exit_code_for(rdrr::StatusCode::kIo);
}
