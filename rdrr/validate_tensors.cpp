// Shards, tensors and their placement (SPEC.md "Shards", "Tensors", "Placement").
#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "rdrr/validate_internal.h"
#include "rdrr/validate_util.h"

namespace rdrr::internal {
namespace {

using vutil::quote;

Status invalid(std::string msg) { return error(StatusCode::kValidation, std::move(msg)); }

std::string tensor_ctx(const TensorEntry& t) { return "tensor " + t.name + ": "; }

Status validate_shards(const Manifest& m) {
  if (m.shards.empty()) return invalid("shards: a pack has at least one shard");
  if (m.shards.size() > kMaxShards) {
    return invalid("shards: " + std::to_string(m.shards.size()) + " exceed the limit of " + std::to_string(kMaxShards));
  }
  uint64_t stream_bytes = 0;
  for (size_t i = 0; i < m.shards.size(); ++i) {
    const ShardInfo& s = m.shards[i];
    const std::string ctx = "shard " + std::to_string(i) + ": ";
    if (s.index != i) return invalid(ctx + "index " + std::to_string(s.index) + " != position " + std::to_string(i));
    const std::string expected_name = shard_filename(s.index);
    if (s.filename != expected_name) {
      return invalid(ctx + "filename " + quote(s.filename) + " != " + quote(expected_name));
    }
    if (s.size_bytes == 0) return invalid(ctx + "size must be > 0");
    RDRR_RETURN_IF_ERROR(vutil::check_sha256_hex("shard " + std::to_string(i) + ".hash", s.sha256_hex));
    if (s.stream_offset_bytes != stream_bytes) {
      return invalid(ctx + "offset " + std::to_string(s.stream_offset_bytes) + " != " + std::to_string(stream_bytes) +
                     " (sum of the sizes of the shards before it)");
    }
    if (s.size_bytes > kMaxJsonInteger - stream_bytes) return invalid(ctx + "total pack size exceeds 2^53");
    stream_bytes += s.size_bytes;
  }
  if (m.total_size_bytes != stream_bytes) {
    return invalid("totalSize " + std::to_string(m.total_size_bytes) + " != " + std::to_string(stream_bytes) +
                   " (sum of the shard sizes)");
  }
  return Status::Ok();
}

// "embed", "head" or "layer.<N>" with N < numLayers, written without leading zeros.
Status validate_group(const Manifest& m, const TensorEntry& t) {
  if (t.group == "embed" || t.group == "head") return Status::Ok();
  const std::string_view prefix = "layer.";
  const std::string_view g = t.group;
  bool ok = g.size() > prefix.size() && g.substr(0, prefix.size()) == prefix && g.size() <= prefix.size() + 4;
  uint64_t layer = 0;
  for (size_t i = prefix.size(); ok && i < g.size(); ++i) {
    ok = g[i] >= '0' && g[i] <= '9' && !(i == prefix.size() && g[i] == '0' && g.size() > prefix.size() + 1);
    layer = layer * 10 + static_cast<uint64_t>(g[i] - '0');
  }
  if (!ok) return invalid(tensor_ctx(t) + "group " + quote(t.group) + " is not \"embed\", \"head\" or \"layer.<N>\"");
  if (layer >= m.architecture.num_layers) {
    return invalid(tensor_ctx(t) + "group " + quote(t.group) + ": layer " + std::to_string(layer) + " >= numLayers " +
                   std::to_string(m.architecture.num_layers));
  }
  return Status::Ok();
}

std::string describe_type(const TensorEntry& t) {
  std::string out(quant::dtype_name(t.dtype));
  out += ' ';
  out += shape_to_string(t.shape);
  if (t.layout) {
    out += ' ';
    out += quant::layout_name(*t.layout);
  }
  return out;
}

Status validate_tensor_type(const TensorEntry& t) {
  Result<uint64_t> expected = expected_tensor_size_bytes(t.dtype, t.shape, t.layout);
  if (!expected.ok()) return expected.status().context("tensor " + t.name);
  if (t.size_bytes != *expected) {
    return invalid(tensor_ctx(t) + "size " + std::to_string(t.size_bytes) + " != " + std::to_string(*expected) +
                   " expected for " + describe_type(t));
  }
  return Status::Ok();
}

Status validate_placement(const Manifest& m, const TensorEntry& t) {
  const std::vector<Span>& spans = t.placement.spans;
  if (spans.empty()) return invalid(tensor_ctx(t) + "has no placement (no shard/offset or spans)");
  uint64_t covered_bytes = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    const std::string ctx = tensor_ctx(t) + (spans.size() > 1 ? "span " + std::to_string(i) + ": " : "");
    if (s.shard_index >= m.shards.size()) {
      return invalid(ctx + "shard " + std::to_string(s.shard_index) + " does not exist (the pack has " +
                     std::to_string(m.shards.size()) + " shards)");
    }
    const uint64_t shard_bytes = m.shards[s.shard_index].size_bytes;
    const std::string where = "shard " + std::to_string(s.shard_index) + ": ";
    if (s.size_bytes == 0) return invalid(ctx + "empty span");
    if (s.offset_bytes > shard_bytes || s.size_bytes > shard_bytes - s.offset_bytes) {
      return invalid(ctx + where + "offset end " + std::to_string(s.offset_bytes) + " + " +
                     std::to_string(s.size_bytes) + " > shard size " + std::to_string(shard_bytes));
    }
    if (i == 0 && s.offset_bytes % kTensorAlignmentBytes != 0) {
      return invalid(ctx + where + "offset " + std::to_string(s.offset_bytes) + " is not a multiple of " +
                     std::to_string(kTensorAlignmentBytes));
    }
    if (i > 0 && s.shard_index != spans[i - 1].shard_index + 1) {
      return invalid(ctx + "spans are not in consecutive shards (shard " + std::to_string(s.shard_index) +
                     " follows shard " + std::to_string(spans[i - 1].shard_index) + ")");
    }
    if (i > 0 && s.offset_bytes != 0) {
      return invalid(ctx + where + "a continuation span must start at offset 0, starts at " +
                     std::to_string(s.offset_bytes));
    }
    if (i + 1 < spans.size() && s.offset_bytes + s.size_bytes != shard_bytes) {
      return invalid(ctx + where + "a span followed by another must end at the shard end " +
                     std::to_string(shard_bytes) + ", ends at " + std::to_string(s.offset_bytes + s.size_bytes));
    }
    covered_bytes += s.size_bytes;  // both <= 2^53: no overflow
    if (covered_bytes > kMaxJsonInteger) return invalid(tensor_ctx(t) + "spans exceed 2^53 bytes");
  }
  if (covered_bytes != t.size_bytes) {
    return invalid(tensor_ctx(t) + "spans cover " + std::to_string(covered_bytes) + " bytes != size " +
                   std::to_string(t.size_bytes));
  }
  return Status::Ok();
}

struct Extent {
  uint32_t shard;
  uint64_t begin;
  uint64_t end;
  const TensorEntry* tensor;
};

// No two spans share a byte; every shard holds some tensor bytes.
Status validate_no_overlap(const Manifest& m) {
  std::vector<Extent> extents;
  for (const TensorEntry& t : m.tensors) {
    for (const Span& s : t.placement.spans) {
      extents.push_back({s.shard_index, s.offset_bytes, s.offset_bytes + s.size_bytes, &t});
    }
  }
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) {
    return a.shard != b.shard ? a.shard < b.shard : a.begin < b.begin;
  });
  for (size_t i = 1; i < extents.size(); ++i) {
    const Extent& a = extents[i - 1];
    const Extent& b = extents[i];
    if (a.shard == b.shard && b.begin < a.end) {
      return invalid("tensors " + a.tensor->name + " and " + b.tensor->name + " overlap in shard " +
                     std::to_string(a.shard) + ": [" + std::to_string(a.begin) + ", " + std::to_string(a.end) +
                     ") and [" + std::to_string(b.begin) + ", " + std::to_string(b.end) + ")");
    }
  }
  std::vector<bool> used(m.shards.size(), false);
  for (const Extent& e : extents) used[e.shard] = true;
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) return invalid("shard " + std::to_string(i) + ": holds no tensor bytes");
  }
  return Status::Ok();
}

template <typename K>
Status compare_counts(const char* field, const std::map<K, uint64_t>& recorded, const std::map<K, uint64_t>& derived,
                      std::string_view (*name)(K)) {
  if (recorded == derived) return Status::Ok();
  auto render = [name](const std::map<K, uint64_t>& counts) {
    std::string out = "{";
    for (const auto& [k, n] : counts) {
      if (out.size() > 1) out += ", ";
      out += name(k);
      out += ": ";
      out += std::to_string(n);
    }
    out += '}';
    return out;
  };
  return invalid(std::string("quantizationInfo.") + field + ": recorded " + render(recorded) +
                 " != " + render(derived) + " counted from the tensors");
}

}  // namespace

Status validate_weights(const Manifest& m) {
  RDRR_RETURN_IF_ERROR(validate_shards(m));
  if (m.tensors.empty()) return invalid("tensors: a pack has at least one tensor");
  if (m.tensors.size() > kMaxTensors) {
    return invalid("tensors: " + std::to_string(m.tensors.size()) + " exceed the limit of " +
                   std::to_string(kMaxTensors));
  }
  std::unordered_set<std::string_view> names;
  QuantizationInfo derived;
  for (const TensorEntry& t : m.tensors) {
    RDRR_RETURN_IF_ERROR(vutil::check_token("tensor name", t.name, kMaxNameBytes, "{}"));
    if (!names.insert(t.name).second) return invalid("tensor " + t.name + ": duplicate tensor name");
    RDRR_RETURN_IF_ERROR(validate_tensor_type(t));
    RDRR_RETURN_IF_ERROR(validate_group(m, t));
    if (t.sha256_hex) RDRR_RETURN_IF_ERROR(vutil::check_sha256_hex("tensor " + t.name + ".hash", *t.sha256_hex));
    RDRR_RETURN_IF_ERROR(validate_placement(m, t));
    ++derived.tensor_counts[t.dtype];
    if (t.layout) ++derived.layout_counts[*t.layout];
  }
  RDRR_RETURN_IF_ERROR(validate_no_overlap(m));
  RDRR_RETURN_IF_ERROR(
      compare_counts("tensorCounts", m.quantization_info.tensor_counts, derived.tensor_counts, quant::dtype_name));
  return compare_counts("layoutCounts", m.quantization_info.layout_counts, derived.layout_counts, quant::layout_name);
}

}  // namespace rdrr::internal
