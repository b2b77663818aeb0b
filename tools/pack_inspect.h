// rdrr-inspect's engine: a pack's summary as text or JSON (model, architecture, quantization, shards,
// tensors, execution graph per phase, kernels with their digest status against this build), and a tensor
// decoded to raw little-endian f32 in its logical [N, K] row-major order whatever its dtype and layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::tools {

// A pinned kernel of the graph against the digest compiled into this build
// (kernels::pinned_kernel_digest(key)): "ok", "stale" (digests differ: `rdrr-digests repin`) or
// "unknown kernel" (this build has no kernel of that name).
struct KernelPinStatus {
  std::string key;
  std::string pinned_digest;  // from the manifest
  std::string built_digest;   // empty for an unknown kernel
  std::string status;
};
inline constexpr std::string_view kPinOk = "ok";
inline constexpr std::string_view kPinStale = "stale";
inline constexpr std::string_view kPinUnknown = "unknown kernel";

// One entry per kernel of the graph, in key order; empty without a graph.
std::vector<KernelPinStatus> kernel_pin_statuses(const Manifest& m);

// The summary. Every tensor appears in both, by name.
nlohmann::json inspect_json(const Manifest& m);
std::string inspect_text(const Manifest& m);

// Up to `max_names` tensor names closest to `name` (edit distance, then name order).
std::vector<std::string> close_tensor_names(const Manifest& m, std::string_view name, size_t max_names = 5);

// Decodes tensor `name` of the pack at `pack_dir` (described by `m`) and writes it to `out_path` as raw
// little-endian f32, logical row-major order: written to a temporary file beside `out_path`, renamed into
// place only when complete (nothing half-written). Returns the number of values written. Errors:
// kNotFound "tensor X: not in the pack; close names: a, b, c", ShardReader's and decode_tensor_f32's errors,
// kIo / kNoSpace for the output.
Result<uint64_t> dequantize_tensor_to_file(const Manifest& m, const std::filesystem::path& pack_dir,
                                           std::string_view name, const std::filesystem::path& out_path);

}  // namespace rdrr::tools
