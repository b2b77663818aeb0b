#include "verify/quant_quality.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <system_error>

#include "convert/gguf.h"
#include "convert/gguf_names.h"
#include "convert/safetensors.h"
#include "quant/blocks.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"

namespace rdrr::tools {
namespace {

namespace fs = std::filesystem;
using convert::GgmlType;

// Encodes and decodes x (whole blocks) with our encoder of block type B, in parallel over blocks.
template <typename B>
std::vector<float> round_trip(std::span<const float> x, void (*enc)(std::span<const float>, std::span<B>,
                                                                     std::span<const float>),
                              void (*dec)(std::span<const B>, std::span<float>)) {
  const size_t n_blocks = x.size() / quant::kQK_K;
  std::vector<B> blocks(n_blocks);
  std::vector<float> y(x.size());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n_blocks, 64), [&](const tbb::blocked_range<size_t>& r) {
    const size_t off = r.begin() * quant::kQK_K, n = r.size() * quant::kQK_K;
    enc(x.subspan(off, n), std::span<B>(blocks).subspan(r.begin(), r.size()), {});
    dec(std::span<const B>(blocks).subspan(r.begin(), r.size()), std::span<float>(y).subspan(off, n));
  });
  return y;
}

// How many blocks of enc(x) equal the GGUF's bytes.
template <typename B>
int64_t identical_blocks(std::span<const float> x, std::span<const std::byte> gguf_bytes,
                         void (*enc)(std::span<const float>, std::span<B>, std::span<const float>)) {
  std::vector<B> blocks(x.size() / quant::kQK_K);
  enc(x, blocks, {});
  int64_t same = 0;
  for (size_t b = 0; b < blocks.size() && (b + 1) * sizeof(B) <= gguf_bytes.size(); ++b) {
    same += std::memcmp(&blocks[b], gguf_bytes.data() + b * sizeof(B), sizeof(B)) == 0;
  }
  return same;
}

void q4k_reference(std::span<const float> x, std::span<quant::BlockQ4K> b, std::span<const float>) {
  quant::quantize_q4_k_reference(x, b);
}

template <typename B>
std::vector<float> decode_gguf(std::span<const std::byte> bytes, void (*dec)(std::span<const B>, std::span<float>)) {
  std::vector<B> blocks(bytes.size() / sizeof(B));
  std::memcpy(blocks.data(), bytes.data(), blocks.size() * sizeof(B));  // the mapping has no alignment guarantee
  std::vector<float> y(blocks.size() * quant::kQK_K);
  dec(blocks, y);
  return y;
}

double rel_rmse(std::span<const float> ref, std::span<const float> y, double* rms_out) {
  double se = 0, ss = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = ref[i], d = r - static_cast<double>(y[i]);
    se += d * d;
    ss += r * r;
  }
  *rms_out = std::sqrt(ss / static_cast<double>(ref.size()));
  return ss > 0 ? std::sqrt(se / ss) : 0.0;
}

// convert_hf_to_gguf's LlamaModel.permute: reshape(n_head, 2, rows/n_head/2, cols).swapaxes(1, 2).
std::vector<float> permute_rows(std::span<const float> w, int64_t rows, int64_t cols, int64_t n_head) {
  std::vector<float> out(w.size());
  const int64_t half = rows / n_head / 2;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t a = 0; a < 2; ++a) {
      for (int64_t r = 0; r < half; ++r) {
        const int64_t src = (h * 2 + a) * half + r, dst = (h * half + r) * 2 + a;
        std::memcpy(&out[static_cast<size_t>(dst * cols)], &w[static_cast<size_t>(src * cols)],
                    static_cast<size_t>(cols) * sizeof(float));
      }
    }
  }
  return out;
}

// n_head for a llama attn_q / attn_k tensor that llama.cpp's converter permuted, or 0 when not permuted.
Result<int64_t> permute_heads(const convert::GgufFile& gguf, const std::string& arch, const std::string& name) {
  if (arch != "llama") return int64_t{0};
  const bool q = name.find(".attn_q.") != std::string::npos, k = name.find(".attn_k.") != std::string::npos;
  if (!q && !k) return int64_t{0};
  const std::string key = "llama.attention.head_count" + std::string(k ? "_kv" : "");
  Result<uint64_t> heads = gguf.get_uint(key);
  if (!heads.ok() && k) heads = gguf.get_uint("llama.attention.head_count");  // no GQA: kv = q heads
  if (!heads.ok()) return heads.status().context("tensor " + name + ": rows are permuted by head");
  return static_cast<int64_t>(*heads);
}

// The F32 rows of `hf` arranged like the GGUF tensor `g` (permuted, truncated).
Result<std::vector<float>> reference_rows(const convert::GgufFile& gguf, const std::string& arch,
                                          const convert::GgufTensor& g, const convert::TensorView& hf,
                                          TensorQuality& tq) {
  const int64_t cols = static_cast<int64_t>(g.ne[0]), rows = static_cast<int64_t>(g.ne[1]);
  const std::string where = "tensor " + g.name + " (" + hf.name + ")";
  const bool may_truncate = g.name == "token_embd.weight";  // llama.cpp may cut a padded vocabulary
  if (hf.shape.size() != 2 || hf.shape[1] != cols || hf.shape[0] < rows || (!may_truncate && hf.shape[0] != rows)) {
    std::string hf_shape;
    for (int64_t d : hf.shape) hf_shape += (hf_shape.empty() ? "" : ", ") + std::to_string(d);
    return error(StatusCode::kValidation, where + ": HF shape [" + hf_shape + "] does not match GGUF ne [" +
                                              std::to_string(cols) + ", " + std::to_string(rows) + "]");
  }
  RDRR_ASSIGN_OR_RETURN(std::vector<float> w, convert::read_as_f32(hf));
  tq.rows_dropped = hf.shape[0] - rows;
  w.resize(static_cast<size_t>(rows * cols));
  RDRR_ASSIGN_OR_RETURN(const int64_t heads, permute_heads(gguf, arch, g.name));
  if (heads > 0) {
    if (rows % (2 * heads) != 0) {
      return error(StatusCode::kValidation, where + ": " + std::to_string(rows) + " rows do not split into " +
                                                std::to_string(heads) + " heads of row pairs");
    }
    w = permute_rows(w, rows, cols, heads);
    tq.rows_permuted = true;
  }
  tq.shape = {rows, cols};
  return w;
}

Status measure_tensor(const convert::GgufFile& gguf, const convert::SafeTensorsModel& st, const std::string& arch,
                      const convert::GgufTensor& g, QualityReport& report) {
  TensorQuality tq;
  tq.gguf_name = g.name;
  tq.dtype = g.type == GgmlType::kQ4_K ? quant::DType::kQ4_K : quant::DType::kQ6_K;
  const std::optional<std::string> hf_name = convert::gguf_to_hf_name(g.name, arch);
  if (!hf_name) return error(StatusCode::kNotFound, "tensor " + g.name + ": no HF name for architecture " + arch);
  tq.hf_name = *hf_name;
  RDRR_ASSIGN_OR_RETURN(const convert::TensorView* hf, st.get(*hf_name));
  RDRR_ASSIGN_OR_RETURN(std::vector<float> ref, reference_rows(gguf, arch, g, *hf, tq));
  std::vector<float> theirs, ours;
  tq.blocks = static_cast<int64_t>(ref.size()) / quant::kQK_K;
  if (tq.dtype == quant::DType::kQ4_K) {
    theirs = decode_gguf<quant::BlockQ4K>(g.bytes, &quant::dequantize_q4_k);
    ours = round_trip<quant::BlockQ4K>(ref, &quant::quantize_q4_k, &quant::dequantize_q4_k);
    tq.reference_identical_blocks = identical_blocks<quant::BlockQ4K>(ref, g.bytes, &q4k_reference);
  } else {
    theirs = decode_gguf<quant::BlockQ6K>(g.bytes, &quant::dequantize_q6_k);
    ours = round_trip<quant::BlockQ6K>(ref, &quant::quantize_q6_k, &quant::dequantize_q6_k);
    tq.reference_identical_blocks = identical_blocks<quant::BlockQ6K>(ref, g.bytes, &quant::quantize_q6_k_reference);
  }
  if (theirs.size() != ref.size()) {
    return error(StatusCode::kValidation, "tensor " + g.name + ": " + std::to_string(theirs.size()) +
                                              " decoded values, expected " + std::to_string(ref.size()));
  }
  tq.llama_rel_rmse = rel_rmse(ref, theirs, &tq.rms);
  tq.ours_rel_rmse = rel_rmse(ref, ours, &tq.rms);
  report.tensors.push_back(std::move(tq));
  return Status::Ok();
}

struct Summary {
  int count = 0;
  double worst_ratio = 0, mean_ratio = 0;
};

Summary summarize(const QualityReport& r, quant::DType t) {
  Summary s;
  for (const TensorQuality& q : r.tensors) {
    if (q.dtype != t) continue;
    ++s.count;
    s.worst_ratio = std::max(s.worst_ratio, q.ratio());
    s.mean_ratio += q.ratio();
  }
  if (s.count > 0) s.mean_ratio /= s.count;
  return s;
}

}  // namespace

Result<QualityInputs> find_quality_inputs(const fs::path& model_dir) {
  QualityInputs in;
  in.hf = model_dir / "hf";
  std::error_code ec;
  if (!fs::exists(in.hf, ec)) return error(StatusCode::kNotFound, "model dir " + model_dir.string() + ": no hf/");
  std::vector<fs::path> ggufs;
  for (fs::directory_iterator it(model_dir / "gguf", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".gguf") ggufs.push_back(it->path());
  }
  if (ec) return error(StatusCode::kNotFound, "model dir " + model_dir.string() + ": gguf/: " + ec.message());
  if (ggufs.size() != 1) {
    return error(StatusCode::kInvalidArgument, "model dir " + model_dir.string() + ": expected one .gguf in gguf/, found " +
                                                   std::to_string(ggufs.size()) + " (pass --gguf)");
  }
  in.gguf = ggufs[0];
  return in;
}

Result<QualityReport> measure_quant_quality(const QualityInputs& inputs) {
  RDRR_ASSIGN_OR_RETURN(convert::SafeTensorsModel st, convert::SafeTensorsModel::open(inputs.hf));
  RDRR_ASSIGN_OR_RETURN(convert::GgufFile gguf, convert::GgufFile::open(inputs.gguf));
  QualityReport report;
  report.hf_path = inputs.hf.string();
  report.gguf_path = inputs.gguf.string();
  RDRR_ASSIGN_OR_RETURN(const std::string_view arch, gguf.get_string("general.architecture"));
  report.arch = std::string(arch);
  for (const convert::GgufTensor& g : gguf.tensors()) {
    if (g.ne.size() != 2 || (g.type != GgmlType::kQ4_K && g.type != GgmlType::kQ6_K)) continue;
    RDRR_RETURN_IF_ERROR(measure_tensor(gguf, st, report.arch, g, report).context(inputs.gguf.string()));
  }
  return report;
}

std::string format_quality_table(const QualityReport& r) {
  std::string out = "hf:   " + r.hf_path + "\ngguf: " + r.gguf_path + " (" + r.arch + ")\n";
  char line[256];
  out += "relative RMSE = rmse(decoded - f32) / rms(f32); ratio = ours / llama.cpp; ref = blocks of our replica\n"
         "of llama.cpp's reference quantizer identical to the GGUF's\n";
  std::snprintf(line, sizeof line, "%-28s %-10s %-5s %11s %11s %7s %11s\n", "tensor", "shape", "type", "ours",
                "llama.cpp", "ratio", "ref");
  out += line;
  for (const TensorQuality& q : r.tensors) {
    const std::string shape = std::to_string(q.shape[0]) + "x" + std::to_string(q.shape[1]);
    const std::string ref = std::to_string(q.reference_identical_blocks) + "/" + std::to_string(q.blocks);
    std::snprintf(line, sizeof line, "%-28s %-10s %-5s %11.6f %11.6f %7.4f %11s%s%s\n", q.gguf_name.c_str(),
                  shape.c_str(), std::string(quant::dtype_name(q.dtype)).c_str(), q.ours_rel_rmse, q.llama_rel_rmse,
                  q.ratio(), ref.c_str(), q.rows_permuted ? "  rows permuted" : "",
                  q.rows_dropped > 0 ? "  rows truncated" : "");
    out += line;
  }
  for (quant::DType t : {quant::DType::kQ4_K, quant::DType::kQ6_K}) {
    const Summary s = summarize(r, t);
    if (s.count == 0) continue;
    std::snprintf(line, sizeof line, "%s: %d tensors, ratio mean %.4f worst %.4f (relative RMSE, ours / llama.cpp)\n",
                  std::string(quant::dtype_name(t)).c_str(), s.count, s.mean_ratio, s.worst_ratio);
    out += line;
  }
  return out;
}

std::string format_quality_json(const QualityReport& r) {
  nlohmann::json j = {{"hf", r.hf_path}, {"gguf", r.gguf_path}, {"arch", r.arch}};
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorQuality& q : r.tensors) {
    tensors.push_back({{"name", q.gguf_name},
                       {"hf_name", q.hf_name},
                       {"shape", q.shape},
                       {"type", quant::dtype_name(q.dtype)},
                       {"rms", q.rms},
                       {"llama_rel_rmse", q.llama_rel_rmse},
                       {"ours_rel_rmse", q.ours_rel_rmse},
                       {"ratio", q.ratio()},
                       {"rows_permuted", q.rows_permuted},
                       {"rows_dropped", q.rows_dropped},
                       {"blocks", q.blocks},
                       {"reference_identical_blocks", q.reference_identical_blocks}});
  }
  j["tensors"] = std::move(tensors);
  nlohmann::json summary = nlohmann::json::object();
  for (quant::DType t : {quant::DType::kQ4_K, quant::DType::kQ6_K}) {
    const Summary s = summarize(r, t);
    if (s.count > 0) {
      summary[std::string(quant::dtype_name(t))] = {
          {"tensors", s.count}, {"mean_ratio", s.mean_ratio}, {"worst_ratio", s.worst_ratio}};
    }
  }
  j["summary"] = std::move(summary);
  return j.dump(1);
}

}  // namespace rdrr::tools
