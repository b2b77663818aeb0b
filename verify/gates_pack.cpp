// Gates 1-3 (structure, integrity, kernels) and the helpers shared by every gate.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <mutex>

#include "graph/graph_check.h"
#include "kernels/digest_table.h"
#include "rdrr/manifest_json.h"
#include "rdrr/sha256.h"
#include "rdrr/shard_reader.h"
#include "rdrr/validate.h"
#include "verify/gates_internal.h"

namespace rdrr::verify::internal {

namespace fs = std::filesystem;

GateResult make_gate(int number, std::string name) {
  GateResult g;
  g.number = number;
  g.name = std::move(name);
  g.status = GateStatus::kPass;
  return g;
}

GateResult skipped(int number, std::string name, std::string why) {
  GateResult g = make_gate(number, std::move(name));
  g.status = GateStatus::kSkip;
  g.detail = std::move(why);
  return g;
}

void fail(GateResult& g, int exit_code, std::string detail) {
  g.status = GateStatus::kFail;
  g.exit_code = exit_code;
  g.detail = std::move(detail);
}

GateResult gate_structure(const fs::path& pack, std::optional<Manifest>& manifest) {
  GateResult g = make_gate(1, "structure");
  g.bound = "schema, files and sizes, execution graph";
  Result<Manifest> m = read_manifest_file(pack);
  if (!m.ok()) {
    fail(g, kExitVerifyInvalidPack, m.status().to_string());
    return g;
  }
  manifest = *m;
  const Status files = validate_pack(*m, pack, {});  // validate_manifest, then presence and sizes
  if (!files.ok()) {
    fail(g, kExitVerifyInvalidPack, files.to_string());
    return g;
  }
  const Status graph = graph::check_execution_graph(*m, {.check_digests = false});
  if (!graph.ok()) {
    fail(g, kExitVerifyInvalidPack, "execution graph: " + graph.to_string());
    return g;
  }
  size_t files_n = m->shards.size() + m->tokenizer.files.size() + m->goldens.size();
  g.figure = std::to_string(m->tensors.size()) + " tensors, " + std::to_string(files_n) + " files, " +
             std::to_string(m->inference.execution->kernels.size()) + " kernels";
  g.metrics = {{"tensors", m->tensors.size()}, {"files", files_n}, {"goldens", m->goldens.size()}};
  return g;
}

namespace {

struct ListedFile {
  std::string name;
  std::string sha256_hex;
  std::optional<uint32_t> shard;  // set for shards
};

// The tensors of a bad shard whose own hash differs (all of its tensors when the manifest has no per-tensor
// hashes), "name (sha256 mismatch)".
std::vector<std::string> bad_tensors_of(const Manifest& m, const ShardReader& reader, uint32_t shard, bool& hashed) {
  std::vector<TensorRef> refs;
  for (const TensorEntry& t : m.tensors) refs.push_back({t.name, &t.placement});
  const std::vector<std::string> names = tensors_overlapping(refs, shard, 0, UINT64_MAX);
  std::vector<std::string> bad;
  hashed = true;
  const TensorIndex index(m);
  for (const std::string& n : names) {
    const TensorEntry* t = index.find(n);
    if (!t->sha256_hex) {
      hashed = false;
      bad.push_back(n);
      continue;
    }
    Result<std::string> h = reader.tensor_sha256(n, t->placement);
    if (!h.ok() || *h != *t->sha256_hex) bad.push_back(n);
  }
  return bad;
}

}  // namespace

GateResult gate_integrity(const Manifest& m, const fs::path& pack) {
  GateResult g = make_gate(2, "integrity");
  g.bound = "sha256 of every file equals the manifest";
  std::vector<ListedFile> files;
  for (const ShardInfo& s : m.shards) files.push_back({s.filename, s.sha256_hex, s.index});
  for (const FileRecord& f : m.tokenizer.files) files.push_back({f.name, f.sha256_hex, std::nullopt});
  for (const GoldenFile& f : m.goldens) files.push_back({f.name, f.sha256_hex, std::nullopt});
  std::vector<std::string> actual(files.size());
  std::vector<Status> errors(files.size());
  tbb::parallel_for(size_t{0}, files.size(), [&](size_t i) {
    Result<std::string> h = sha256_file(pack / files[i].name);
    if (h.ok()) actual[i] = *h;
    else errors[i] = h.status();
  });
  std::vector<std::string> problems;
  nlohmann::json bad_files = nlohmann::json::array();
  Result<ShardReader> reader = ShardReader::open(pack, m.shards);
  for (size_t i = 0; i < files.size(); ++i) {
    const ListedFile& f = files[i];
    if (!errors[i].ok()) {
      problems.push_back(f.name + ": " + errors[i].to_string());
      bad_files.push_back(f.name);
      continue;
    }
    if (actual[i] == f.sha256_hex) continue;
    bad_files.push_back(f.name);
    std::string p = f.name + ": sha256 " + actual[i] + " != manifest " + f.sha256_hex;
    if (f.shard && reader.ok()) {
      bool hashed = false;
      const std::vector<std::string> bad = bad_tensors_of(m, *reader, *f.shard, hashed);
      std::string list;
      for (size_t k = 0; k < bad.size() && k < 8; ++k) list += (k ? ", " : "") + bad[k];
      if (bad.size() > 8) list += ", ... (" + std::to_string(bad.size()) + " in all)";
      p += hashed ? "; bad tensor(s): " + list : "; no per-tensor hashes, tensors in this shard: " + list;
      g.metrics["bad_tensors"][f.name] = bad;
    }
    problems.push_back(p);
  }
  g.metrics["files"] = files.size();
  g.metrics["bad_files"] = bad_files;
  if (!problems.empty()) {
    std::string detail;
    for (const std::string& p : problems) detail += (detail.empty() ? "" : "\n") + p;
    fail(g, kExitVerifyIntegrity, detail);
    g.figure = std::to_string(problems.size()) + " of " + std::to_string(files.size()) + " files differ";
    return g;
  }
  uint64_t bytes = 0;
  for (const ShardInfo& s : m.shards) bytes += s.size_bytes;
  g.figure = std::to_string(files.size()) + " files verified (" + std::to_string(bytes) + " shard bytes)";
  return g;
}

GateResult gate_kernels(const Manifest& m, const fs::path& pack) {
  GateResult g = make_gate(3, "kernels");
  g.bound = "pinned digest == this build's compiled digest";
  const ExecutionGraph& graph = *m.inference.execution;
  std::vector<std::string> stale;
  for (const auto& [key, spec] : graph.kernels) {
    Result<std::string> compiled = kernels::pinned_kernel_digest(key);
    if (!compiled.ok()) {
      stale.push_back(key + ": " + compiled.status().to_string());
    } else if (*compiled != spec.digest) {
      stale.push_back(key + ": pinned " + spec.digest + " != compiled " + *compiled);
    }
  }
  g.metrics = {{"kernels", graph.kernels.size()}, {"stale", stale}};
  if (!stale.empty()) {
    std::string detail;
    for (const std::string& s : stale) detail += s + "\n";
    detail += "fix: re-pin the pack after a kernel update: rdrr-digests repin " + pack.string();
    g.figure = std::to_string(stale.size()) + " of " + std::to_string(graph.kernels.size()) + " kernels stale";
    fail(g, kExitVerifyKernelPin, detail);
    return g;
  }
  g.figure = std::to_string(graph.kernels.size()) + " kernels pinned and current";
  return g;
}

}  // namespace rdrr::verify::internal
