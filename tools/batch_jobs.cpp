#include "tools/batch_jobs.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "rdrr/json_strict.h"
#include "rdrr/sha256.h"

#ifndef RDRR_VERSION
#define RDRR_VERSION "unknown"
#endif

namespace rdrr::batch {
namespace fs = std::filesystem;
namespace {

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 128 || n == "." || n == "..") return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

fs::path resolve(const fs::path& base_dir, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute() ? path.lexically_normal() : (base_dir / path).lexically_normal();
}

fs::path without_trailing_slash(fs::path p) {
  while (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "packs/p/" -> "packs/p"
  return p;
}

// The folder an output names: absolute, symlinks and ".." resolved as far as it exists
// (std::filesystem::weakly_canonical), lexically normal, no trailing slash.
fs::path resolved_output(const fs::path& output) {
  std::error_code ec;
  fs::path abs = fs::absolute(output, ec);
  if (ec) abs = output;
  fs::path canonical = fs::weakly_canonical(abs, ec);
  if (ec) canonical = abs;
  return without_trailing_slash(canonical.lexically_normal());
}

std::string job_ref(const std::vector<Job>& jobs, size_t i) {
  return "job " + std::to_string(i) + " '" + jobs[i].name + "' (" + jobs[i].output.string() + ")";
}

// No two outputs may be the same folder (also through a trailing slash, ".." or a symlink) or lie one inside
// the other: the outer pack would hold the inner one's files and fail rdrr-verify. kValidation naming both.
Status check_outputs_apart(const std::vector<Job>& jobs, const std::string& file) {
  std::map<std::string, size_t> seen;  // resolved output (generic form) -> job index
  for (size_t i = 0; i < jobs.size(); ++i) {
    const fs::path key = resolved_output(jobs[i].output);
    const std::string k = key.generic_string();
    if (const auto same = seen.find(k); same != seen.end()) {
      return error(StatusCode::kValidation, file + ": duplicate output: " + job_ref(jobs, i) + " and " +
                                                job_ref(jobs, same->second) + " are the same folder " + k +
                                                "; every job needs its own output folder");
    }
    auto nested = [&](size_t inner, size_t outer, const std::string& inner_key, const std::string& outer_key) {
      return error(StatusCode::kValidation, file + ": nested outputs: " + job_ref(jobs, inner) + " lies inside " +
                                                job_ref(jobs, outer) + " (" + inner_key + " inside " + outer_key +
                                                "); a pack folder holds only its own files, so outputs must not nest");
    };
    for (fs::path p = key; p.has_relative_path();) {  // an earlier output that holds this one
      p = p.parent_path();
      if (const auto outer = seen.find(p.generic_string()); outer != seen.end()) {
        return nested(i, outer->second, k, outer->first);
      }
    }
    const std::string prefix = k.ends_with('/') ? k : k + "/";  // an earlier output inside this one
    if (const auto inner = seen.lower_bound(prefix); inner != seen.end() && inner->first.starts_with(prefix)) {
      return nested(inner->second, i, inner->first, k);
    }
    seen.emplace(k, i);
  }
  return Status::Ok();
}

Result<std::vector<std::string>> string_array(const nlohmann::json& j, const std::string& ctx) {
  if (!j.is_array()) return error(StatusCode::kSchema, ctx + ": expected an array of strings, got " + json_brief(j));
  std::vector<std::string> out;
  for (const nlohmann::json& e : j) {
    if (!e.is_string()) return error(StatusCode::kSchema, ctx + ": expected a string, got " + json_brief(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<Job> job_from_json(const nlohmann::json& j, const fs::path& base_dir, const std::string& ctx) {
  if (!j.is_object()) return error(StatusCode::kSchema, ctx + ": expected an object, got " + json_brief(j));
  static const std::set<std::string> kKnown = {"source", "output", "flags", "verify_flags", "name", "mem"};
  for (const auto& [key, value] : j.items()) {
    if (!kKnown.count(key)) return error(StatusCode::kSchema, ctx + ": unknown field '" + key + "'");
  }
  Job job;
  for (const char* req : {"source", "output"}) {
    if (!j.contains(req)) return error(StatusCode::kSchema, ctx + ": missing field '" + req + "'");
    if (!j[req].is_string() || j[req].get<std::string>().empty()) {
      return error(StatusCode::kSchema, ctx + "." + req + ": expected a non-empty string, got " + json_brief(j[req]));
    }
  }
  job.source = resolve(base_dir, j["source"].get<std::string>());
  job.output = without_trailing_slash(resolve(base_dir, j["output"].get<std::string>()));
  if (j.contains("flags")) {
    RDRR_ASSIGN_OR_RETURN(job.convert_flags, string_array(j["flags"], ctx + ".flags"));
  }
  if (j.contains("verify_flags")) {
    RDRR_ASSIGN_OR_RETURN(job.verify_flags, string_array(j["verify_flags"], ctx + ".verify_flags"));
  }
  if (j.contains("name")) {
    if (!j["name"].is_string()) return error(StatusCode::kSchema, ctx + ".name: expected a string");
    job.name = j["name"].get<std::string>();
  }
  if (j.contains("mem")) {
    const nlohmann::json& m = j["mem"];
    if (m.is_number_unsigned()) {
      job.mem_bytes = m.get<uint64_t>();
    } else if (m.is_string()) {
      Result<uint64_t> b = parse_byte_size(m.get<std::string>());
      if (!b.ok()) return error(StatusCode::kValidation, ctx + ".mem: " + b.status().message());
      job.mem_bytes = *b;
    } else {
      return error(StatusCode::kSchema, ctx + ".mem: expected a size string or a byte count, got " + json_brief(m));
    }
  }
  return job;
}

Result<std::vector<Job>> parse_list(std::string_view text, const fs::path& base_dir, const std::string& file) {
  std::vector<Job> jobs;
  std::istringstream in{std::string(text)};
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    if (w.size() < 2) {
      return error(StatusCode::kSchema, file + ":" + std::to_string(line_no) + ": expected `SOURCE OUTPUT [flags...]`");
    }
    Job job;
    job.source = resolve(base_dir, w[0]);
    job.output = without_trailing_slash(resolve(base_dir, w[1]));
    job.convert_flags.assign(w.begin() + 2, w.end());
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace

Result<uint64_t> parse_byte_size(std::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data()) {
    return error(StatusCode::kInvalidArgument, "size '" + std::string(text) + "': expected e.g. 512M, 8G or a byte count");
  }
  std::string unit(ptr, end);
  for (const char* suffix : {"iB", "B"}) {
    if (unit.size() > 1 && unit.ends_with(suffix)) unit.resize(unit.size() - std::string_view(suffix).size());
  }
  int shift = 0;
  if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else if (!unit.empty() && unit != "B") {
    return error(StatusCode::kInvalidArgument, "size '" + std::string(text) + "': unknown unit '" + unit + "'");
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    return error(StatusCode::kInvalidArgument, "size '" + std::string(text) + "' overflows 64 bits");
  }
  return value << shift;
}

Result<std::vector<Job>> parse_jobs(std::string_view text, const fs::path& jobs_file) {
  const fs::path base_dir = jobs_file.parent_path().empty() ? fs::path(".") : jobs_file.parent_path();
  const std::string file = jobs_file.string();
  std::vector<Job> jobs;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    RDRR_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_strict(text, file));
    if (!j.contains("jobs") || !j["jobs"].is_array()) {
      return error(StatusCode::kSchema, file + ": expected {\"jobs\": [...]}");
    }
    for (const auto& [key, value] : j.items()) {
      if (key != "jobs") return error(StatusCode::kSchema, file + ": unknown field '" + key + "'");
    }
    for (size_t i = 0; i < j["jobs"].size(); ++i) {
      RDRR_ASSIGN_OR_RETURN(Job job, job_from_json(j["jobs"][i], base_dir, file + ": jobs[" + std::to_string(i) + "]"));
      jobs.push_back(std::move(job));
    }
  } else {
    RDRR_ASSIGN_OR_RETURN(jobs, parse_list(text, base_dir, file));
  }
  if (jobs.empty()) return error(StatusCode::kValidation, file + ": no jobs");
  for (Job& job : jobs) {
    if (job.name.empty()) job.name = job.output.filename().string();
  }
  RDRR_RETURN_IF_ERROR(check_outputs_apart(jobs, file));
  std::set<std::string> names;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    const std::string ctx = file + ": job " + std::to_string(i) + " (" + job.output.string() + ")";
    if (!valid_name(job.name)) {
      return error(StatusCode::kValidation, ctx + ": name '" + job.name + "' must be 1-128 bytes of [A-Za-z0-9._-]");
    }
    if (!names.insert(job.name).second) return error(StatusCode::kValidation, ctx + ": duplicate name '" + job.name + "'");
  }
  return jobs;
}

Result<std::vector<Job>> read_jobs(const fs::path& jobs_file) {
  std::error_code ec;
  if (!fs::is_regular_file(jobs_file, ec)) {
    return error(StatusCode::kNotFound, jobs_file.string() + ": jobs file not found");
  }
  std::ifstream in(jobs_file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return error(StatusCode::kIo, jobs_file.string() + ": cannot read");
  return parse_jobs(ss.str(), jobs_file);
}

Result<Shard> parse_shard(std::string_view text) {
  const size_t slash = text.find('/');
  Shard s;
  auto num = [](std::string_view v, uint32_t& out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size() && !v.empty();
  };
  if (slash == std::string_view::npos || !num(text.substr(0, slash), s.index) || !num(text.substr(slash + 1), s.count) ||
      s.count == 0 || s.index >= s.count) {
    return error(StatusCode::kInvalidArgument,
                 "--shard '" + std::string(text) + "': expected I/N with 0 <= I < N (e.g. 0/3, as a Slurm array 0..N-1)");
  }
  return s;
}

std::vector<size_t> shard_job_indices(size_t n_jobs, const Shard& shard) {
  std::vector<size_t> out;
  for (size_t i = shard.index; i < n_jobs; i += shard.count) out.push_back(i);
  return out;
}

uint64_t source_bytes(const fs::path& source) {
  std::error_code ec;
  if (fs::is_regular_file(source, ec)) return fs::file_size(source, ec);
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(source, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

uint64_t estimate_job_mem_bytes(const Job& job) {
  if (job.mem_bytes != 0) return job.mem_bytes;
  return (512ull << 20) + source_bytes(job.source) * 5 / 2;
}

Result<std::string> job_fingerprint(const Job& job) {
  std::error_code ec;
  std::vector<std::string> lines;
  auto add_file = [&](const fs::path& p, const std::string& rel) -> Status {
    const uint64_t size = fs::file_size(p, ec);
    if (ec) return error(StatusCode::kIo, p.string() + ": " + ec.message());
    const auto mtime = fs::last_write_time(p, ec);
    if (ec) return error(StatusCode::kIo, p.string() + ": " + ec.message());
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
    lines.push_back("file " + rel + " " + std::to_string(size) + " " + std::to_string(ns));
    return Status::Ok();
  };
  if (fs::is_regular_file(job.source, ec)) {
    RDRR_RETURN_IF_ERROR(add_file(job.source, job.source.filename().string()));
  } else if (fs::is_directory(job.source, ec)) {
    for (auto it = fs::recursive_directory_iterator(job.source, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_regular_file(ec)) {
        RDRR_RETURN_IF_ERROR(add_file(it->path(), it->path().lexically_relative(job.source).generic_string()));
      }
    }
    if (ec) return error(StatusCode::kIo, job.source.string() + ": " + ec.message());
  } else {
    return error(StatusCode::kNotFound, "job " + job.name + ": source " + job.source.string() + " not found");
  }
  std::sort(lines.begin(), lines.end());
  std::string text = std::string("rdrr ") + RDRR_VERSION + "\n";
  for (const std::string& f : job.convert_flags) text += "flag " + f + "\n";
  for (const std::string& l : lines) text += l + "\n";
  return "sha256:" + sha256_hex(std::as_bytes(std::span(text.data(), text.size())));
}

}  // namespace rdrr::batch
