#include "kernels/digest_table.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "kernels/registry.h"
#include "rdrr/json_strict.h"
#include "rdrr/sha256.h"

namespace rdrr::kernels {
namespace fs = std::filesystem;
using nlohmann::json;
namespace {

constexpr int kTableVersion = 1;

bool is_digest(const std::string& s) { return s.size() == 71 && s.rfind("sha256:", 0) == 0 && is_sha256_hex(s.substr(7)); }

Status schema(std::string_view source, const std::string& where, const std::string& what) {
  return error(StatusCode::kSchema, std::string(source) + ": " + where + ": " + what);
}

Result<std::string> get_string(const json& o, const char* key, std::string_view source, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return schema(source, where, std::string("field '") + key + "' missing or not a string");
  return it->get<std::string>();
}

Result<DigestEntry> parse_entry(const json& e, std::string_view source, const std::string& where) {
  static const char* kKeys[] = {"name", "file", "entry", "defines", "spec", "sources", "digest"};
  if (!e.is_object()) return schema(source, where, "entry is not an object");
  for (const auto& [k, v] : e.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys)) return schema(source, where, "unknown field '" + k + "'");
  }
  DigestEntry d;
  RDRR_ASSIGN_OR_RETURN(d.variant.name, get_string(e, "name", source, where));
  RDRR_ASSIGN_OR_RETURN(d.variant.file, get_string(e, "file", source, where));
  RDRR_ASSIGN_OR_RETURN(d.variant.entry, get_string(e, "entry", source, where));
  RDRR_ASSIGN_OR_RETURN(d.digest.digest, get_string(e, "digest", source, where));
  if (!is_digest(d.digest.digest)) return schema(source, where, "digest '" + d.digest.digest + "' is not sha256:<64 hex>");
  for (const char* obj : {"defines", "spec", "sources"}) {
    auto it = e.find(obj);
    if (it == e.end() || !it->is_object()) return schema(source, where, std::string("field '") + obj + "' missing or not an object");
  }
  for (const auto& [k, v] : e["defines"].items()) {
    if (!v.is_string()) return schema(source, where, "define " + k + " is not a string");
    d.variant.defines[k] = v.get<std::string>();
  }
  for (const auto& [k, v] : e["spec"].items()) {
    const bool id_ok = !k.empty() && k.size() <= 9 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!id_ok || !v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX) {
      return schema(source, where, "spec '" + k + "' must map a decimal id to a uint32");
    }
    d.variant.spec[static_cast<uint32_t>(std::stoul(k))] = v.get<uint32_t>();
  }
  for (const auto& [k, v] : e["sources"].items()) {
    if (!v.is_string() || !is_digest(v.get<std::string>())) return schema(source, where, "source " + k + " has no sha256:<hex> digest");
    d.digest.sources[k] = v.get<std::string>();
  }
  return d;
}

std::string short_digest(const std::string& d) { return d.substr(0, std::min<size_t>(d.size(), 19)) + ".."; }

// Why a table entry differs from the fresh one: changed / added / removed files, then other fields.
std::string explain(const DigestEntry& old_e, const DigestEntry& new_e) {
  std::vector<std::string> why;
  for (const auto& [file, d] : new_e.digest.sources) {
    auto it = old_e.digest.sources.find(file);
    if (it == old_e.digest.sources.end()) why.push_back("kernels/" + file + " now included");
    else if (it->second != d) why.push_back("kernels/" + file + " changed");
  }
  for (const auto& [file, d] : old_e.digest.sources) {
    if (!new_e.digest.sources.count(file)) why.push_back("kernels/" + file + " no longer included");
  }
  if (old_e.variant.file != new_e.variant.file) why.push_back("file " + old_e.variant.file + " -> " + new_e.variant.file);
  if (old_e.variant.entry != new_e.variant.entry) why.push_back("entry " + old_e.variant.entry + " -> " + new_e.variant.entry);
  if (old_e.variant.defines != new_e.variant.defines) why.push_back("defines changed");
  if (old_e.variant.spec != new_e.variant.spec) why.push_back("specialization constants changed");
  if (why.empty()) why.push_back("table entry edited by hand?");
  std::string out;
  for (const std::string& w : why) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace

bool DigestEntry::operator==(const DigestEntry& o) const {
  return variant.name == o.variant.name && variant.file == o.variant.file && variant.entry == o.variant.entry &&
         variant.defines == o.variant.defines && variant.spec == o.variant.spec && digest.digest == o.digest.digest &&
         digest.sources == o.digest.sources;
}

Result<std::vector<DigestEntry>> compute_digest_table(const fs::path& kernels_dir) {
  std::vector<DigestEntry> out;
  for (const KernelInfo& k : all_kernels()) {
    RDRR_ASSIGN_OR_RETURN(KernelVariantSource v, variant_from_registry(k));
    RDRR_ASSIGN_OR_RETURN(KernelDigest d, kernel_digest(v, kernels_dir));
    out.push_back(DigestEntry{std::move(v), std::move(d)});
  }
  std::sort(out.begin(), out.end(), [](const DigestEntry& a, const DigestEntry& b) { return a.variant.name < b.variant.name; });
  return out;
}

std::string digest_table_to_json(const std::vector<DigestEntry>& entries) {
  json list = json::array();
  for (const DigestEntry& e : entries) {
    json spec = json::object();
    for (const auto& [id, value] : e.variant.spec) spec[std::to_string(id)] = value;
    list.push_back(json{{"name", e.variant.name},       {"file", e.variant.file},
                        {"entry", e.variant.entry},     {"defines", json(e.variant.defines)},
                        {"spec", spec},                 {"sources", json(e.digest.sources)},
                        {"digest", e.digest.digest}});
  }
  return json{{"version", kTableVersion}, {"kernels", list}}.dump(2) + "\n";
}

Result<std::vector<DigestEntry>> parse_digest_table(std::string_view text, std::string_view source_name) {
  RDRR_ASSIGN_OR_RETURN(json j, parse_json_strict(text, source_name));
  if (!j.is_object()) return schema(source_name, "/", "not a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (k != "version" && k != "kernels") return schema(source_name, "/", "unknown field '" + k + "'");
  }
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != kTableVersion) {
    return schema(source_name, "/version", "expected " + std::to_string(kTableVersion));
  }
  if (!j.contains("kernels") || !j["kernels"].is_array()) return schema(source_name, "/kernels", "missing or not an array");
  std::vector<DigestEntry> out;
  for (size_t i = 0; i < j["kernels"].size(); ++i) {
    RDRR_ASSIGN_OR_RETURN(DigestEntry e, parse_entry(j["kernels"][i], source_name, "/kernels/" + std::to_string(i)));
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> diff_digest_table(std::string_view table_text, const std::vector<DigestEntry>& fresh) {
  Result<std::vector<DigestEntry>> table = parse_digest_table(table_text, kDigestTableFile);
  if (!table.ok()) return {table.status().to_string()};
  std::map<std::string, const DigestEntry*> have;
  std::vector<std::string> problems;
  for (const DigestEntry& e : *table) {
    if (!have.emplace(e.variant.name, &e).second) problems.push_back(e.variant.name + ": listed twice in " + std::string(kDigestTableFile));
  }
  for (const DigestEntry& f : fresh) {
    auto it = have.find(f.variant.name);
    if (it == have.end()) {
      problems.push_back(f.variant.name + ": missing from " + std::string(kDigestTableFile) + " (new kernel variant)");
      continue;
    }
    const DigestEntry& old_e = *it->second;
    if (!(old_e == f)) {
      problems.push_back(f.variant.name + ": digest " + short_digest(old_e.digest.digest) + " in " + std::string(kDigestTableFile) +
                         (old_e.digest.digest == f.digest.digest ? " == " : " != ") + short_digest(f.digest.digest) +
                         " from sources (" + explain(old_e, f) + ")");
    }
    have.erase(it);
  }
  for (const auto& [name, e] : have) {
    problems.push_back(name + ": in " + std::string(kDigestTableFile) + " but not a registry kernel (removed variant)");
  }
  if (problems.empty() && table_text != digest_table_to_json(fresh)) {
    problems.push_back(std::string(kDigestTableFile) + ": entries are current but the file is not in canonical form (order/format)");
  }
  return problems;
}

Result<std::vector<std::string>> check_digest_table_file(const fs::path& kernels_dir, const fs::path& table_path) {
  std::error_code ec;
  if (!fs::is_regular_file(table_path, ec)) return error(StatusCode::kNotFound, table_path.string() + ": no such file (run rdrr-digests sync)");
  std::ifstream in(table_path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return error(StatusCode::kIo, table_path.string() + ": read failed");
  RDRR_ASSIGN_OR_RETURN(std::vector<DigestEntry> fresh, compute_digest_table(kernels_dir));
  return diff_digest_table(ss.str(), fresh);
}

Result<bool> sync_digest_table_file(const fs::path& kernels_dir, const fs::path& table_path) {
  RDRR_ASSIGN_OR_RETURN(std::vector<DigestEntry> fresh, compute_digest_table(kernels_dir));
  const std::string text = digest_table_to_json(fresh);
  std::error_code ec;
  if (fs::is_regular_file(table_path, ec)) {
    std::ifstream in(table_path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (ss.str() == text) return false;
  }
  const fs::path tmp = table_path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out.good()) return error(StatusCode::kIo, tmp.string() + ": write failed");
  }
  fs::rename(tmp, table_path, ec);
  if (ec) return error(StatusCode::kIo, table_path.string() + ": rename failed: " + ec.message());
  return true;
}

Result<std::string> pinned_kernel_digest(std::string_view kernel_name) {
  static const Result<std::vector<DigestEntry>> kTable = parse_digest_table(embedded_digest_table_json(), "embedded kernel-digests.json");
  if (!kTable.ok()) return kTable.status();
  for (const DigestEntry& e : *kTable) {
    if (e.variant.name == kernel_name) return e.digest.digest;
  }
  return error(StatusCode::kNotFound, "kernel " + std::string(kernel_name) + ": not in the embedded kernel-digests.json");
}

}  // namespace rdrr::kernels
