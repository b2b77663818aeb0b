#include "convert/report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "rdrr/manifest.h"

namespace rdrr::convert {
namespace {

using ojson = nlohmann::ordered_json;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string gb(uint64_t bytes) { return fmt("%.2f GB", static_cast<double>(bytes) / 1e9); }

std::string human_bytes(uint64_t b) {
  const auto d = static_cast<double>(b);
  if (b >= 1000000000ull) return fmt("%.2f GB", d / 1e9);
  if (b >= 1000000ull) return fmt("%.2f MB", d / 1e6);
  if (b >= 1000ull) return fmt("%.1f kB", d / 1e3);
  return std::to_string(b) + " B";
}

std::string layout_str(const TensorReport& t) {
  return t.layout ? std::string(quant::layout_name(*t.layout)) : std::string("-");
}

}  // namespace

std::string plan_table(const ConvertReport& r) {
  size_t w = 6;
  for (const TensorReport& t : r.tensors) w = std::max(w, t.name.size());
  std::string out;
  char line[1024];
  std::snprintf(line, sizeof(line), "%-*s  %-9s  %-5s  %-11s  %12s  %-4s  %s\n", static_cast<int>(w), "tensor",
                "source", "dtype", "layout", "bytes", "raw", "reason");
  out += line;
  uint64_t total = 0;
  for (const TensorReport& t : r.tensors) {
    std::snprintf(line, sizeof(line), "%-*s  %-9s  %-5s  %-11s  %12llu  %-4s  %s\n", static_cast<int>(w),
                  t.name.c_str(), t.source_dtype.c_str(), std::string(quant::dtype_name(t.dtype)).c_str(),
                  layout_str(t).c_str(), static_cast<unsigned long long>(t.size_bytes), t.passthrough ? "yes" : "no",
                  t.reason.c_str());
    out += line;
    total += t.size_bytes;
  }
  out += std::to_string(r.tensors.size()) + " tensors, " + human_bytes(r.bytes_in) + " in, " + human_bytes(total) +
         " of tensor data out (" + r.quantization + ")\n";
  return out;
}

std::string report_json(const ConvertReport& r) {
  ojson j;
  j["tool"] = std::string(kConverterName);
  j["version"] = std::string(converter_version());
  j["source"] = {{"path", r.src}, {"format", std::string(source_format_name(r.format))}, {"family", r.family}};
  j["out"] = r.out;
  j["modelId"] = r.model_id;
  j["quantization"] = r.quantization;
  j["calibration"] = r.calibration;
  j["dryRun"] = r.dry_run;
  j["threads"] = r.threads;
  ojson tensors = ojson::array();
  uint64_t out_tensor_bytes = 0;
  for (const TensorReport& t : r.tensors) {
    ojson e;
    e["name"] = t.name;
    e["shape"] = t.shape;
    e["sourceDtype"] = t.source_dtype;
    e["dtype"] = std::string(quant::dtype_name(t.dtype));
    if (t.layout) e["layout"] = std::string(quant::layout_name(*t.layout));
    e["bytes"] = t.size_bytes;
    e["passthrough"] = t.passthrough;
    e["reason"] = t.reason;
    if (!t.placement.spans.empty()) {
      e["shard"] = t.placement.spans.front().shard_index;
      e["offset"] = t.placement.spans.front().offset_bytes;
    }
    if (!r.dry_run) {
      e["rmse"] = t.rmse;
      e["sourceRms"] = t.source_rms;
      e["sampledValues"] = t.sampled_values;
      e["nonfiniteValues"] = t.nonfinite_values;
      e["seconds"] = t.seconds;
    }
    out_tensor_bytes += t.size_bytes;
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  ojson shards = ojson::array();
  for (const ShardInfo& s : r.shards) shards.push_back({{"file", s.filename}, {"bytes", s.size_bytes}, {"sha256", s.sha256_hex}});
  j["shards"] = std::move(shards);
  j["warnings"] = r.warnings;
  const double secs = r.wall_seconds;
  j["totals"] = {{"tensors", r.tensors.size()},
                 {"bytesIn", r.bytes_in},
                 {"bytesOut", r.dry_run ? out_tensor_bytes : r.bytes_out},
                 {"wallSeconds", secs},
                 {"gbPerSecond", secs > 0 ? static_cast<double>(r.bytes_in) / 1e9 / secs : 0.0}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string error_json(const Status& s, int exit_code) {
  ojson j;
  j["error"] = {{"code", std::string(status_code_name(s.code()))}, {"exitCode", exit_code}, {"message", s.message()}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string summary_text(const ConvertReport& r) {
  const double secs = r.wall_seconds;
  const double rate = secs > 0 ? static_cast<double>(r.bytes_in) / 1e9 / secs : 0.0;
  size_t raw = 0;
  for (const TensorReport& t : r.tensors) raw += t.passthrough ? 1 : 0;
  std::string s = "converted " + std::to_string(r.tensors.size()) + " tensors (" + r.quantization + "): " +
                  gb(r.bytes_in) + " -> " + gb(r.bytes_out) + " in " + fmt("%.2f s", secs) + " (" +
                  fmt("%.2f GB/s", rate) + ", " + std::to_string(r.threads) + " threads)";
  if (raw > 0) s += ", " + std::to_string(raw) + " copied bit-exactly";
  if (r.calibration != "none") s += ", Q4_K calibrated on " + r.calibration;
  s += "; " + std::to_string(r.shards.size()) + " shard" + (r.shards.size() == 1 ? "" : "s") + " in " + r.out + "\n";
  for (const std::string& w : r.warnings) s += "warning: " + w + "\n";
  return s;
}

ProgressBar::ProgressBar(std::FILE* stream, bool enabled) : stream_(stream) {
  active_ = enabled && stream != nullptr && isatty(fileno(stream)) != 0;
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::finish() {
  if (drawn_) {
    std::fputs("\n", stream_);
    std::fflush(stream_);
  }
  drawn_ = false;
  active_ = false;
}

void ProgressBar::update(const ConvertProgress& p) {
  if (!active_) return;
  constexpr int kWidth = 28;
  const double frac =
      p.bytes_in_total ? static_cast<double>(p.bytes_in_done) / static_cast<double>(p.bytes_in_total) : 1.0;
  const int fill = std::clamp(static_cast<int>(frac * kWidth), 0, kWidth);
  const double mbps = p.elapsed_seconds > 0 ? static_cast<double>(p.bytes_in_done) / 1e6 / p.elapsed_seconds : 0.0;
  const double eta = frac > 0 ? p.elapsed_seconds * (1.0 - frac) / frac : 0.0;
  std::fprintf(stream_, "\r[%s%s] %zu/%zu tensors  %s/%s  %.0f MB/s  ETA %.0fs   ",
               std::string(static_cast<size_t>(fill), '#').c_str(),
               std::string(static_cast<size_t>(kWidth - fill), ' ').c_str(), p.tensors_done, p.tensors_total,
               human_bytes(p.bytes_in_done).c_str(), human_bytes(p.bytes_in_total).c_str(), mbps, eta);
  std::fflush(stream_);
  drawn_ = true;
}

}  // namespace rdrr::convert
