// Synthetic checkpoints: shapes, tensors, values, sharding and the streaming SafeTensors writer.
// (config / generation config / tokenizer text: synthetic_files.cpp.)
#include "tools/synthetic_model.h"

#include <fcntl.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <system_error>
#include <utility>

#include "quant/f16.h"
#include "rdrr/file_io.h"
#include "rdrr/model_tensors.h"
#include "tools/synthetic_files_internal.h"

namespace rdrr::tools {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 0.02 / standard deviation of the sum of four uniform 16-bit integers (each variance (2^32 - 1) / 12).
const float kValueScale = static_cast<float>(0.02 / std::sqrt(4.0 * (65536.0 * 65536.0 - 1.0) / 12.0));

Status invalid(std::string msg) { return error(StatusCode::kInvalidArgument, std::move(msg)); }

}  // namespace

int64_t SyntheticTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::optional<SyntheticShape> synthetic_shape_preset(std::string_view name) {
  SyntheticShape s;
  s.name = std::string(name);
  if (name == "llama-3.2-1b") {
    s.hidden_size = 2048, s.num_layers = 16, s.num_heads = 32, s.num_kv_heads = 8, s.head_dim = 64;
    s.intermediate_size = 8192, s.vocab_size = 128256, s.tie_word_embeddings = true;
    return s;
  }
  if (name == "llama-3.1-8b") {
    s.hidden_size = 4096, s.num_layers = 32, s.num_heads = 32, s.num_kv_heads = 8, s.head_dim = 128;
    s.intermediate_size = 14336, s.vocab_size = 128256, s.tie_word_embeddings = false;
    s.rope_factor = 8.0;  // Llama 3.1's rope_scaling (3.2 uses 32)
    return s;
  }
  if (name == "tiny") {  // a few MB; every row length a multiple of 256 (Q4_K without padding)
    s.hidden_size = 256, s.num_layers = 2, s.num_heads = 4, s.num_kv_heads = 2, s.head_dim = 64;
    s.intermediate_size = 512, s.vocab_size = 1024, s.tie_word_embeddings = false;
    return s;
  }
  if (name == "qwen3-30b-a3b" || name == "tiny-qwen3-moe") {
    s.family = SyntheticFamily::kQwen3Moe;
    s.rope_theta = 1000000.0, s.rms_norm_eps = 1e-6, s.max_position_embeddings = 40960;
    if (name == "tiny-qwen3-moe") {
      s.hidden_size = 256, s.num_layers = 2, s.num_heads = 4, s.num_kv_heads = 2, s.head_dim = 64;
      s.intermediate_size = 512, s.vocab_size = 1024, s.num_experts = 8, s.experts_per_token = 2;
      s.moe_intermediate_size = 256;
      return s;
    }
    s.hidden_size = 2048, s.num_layers = 48, s.num_heads = 32, s.num_kv_heads = 4, s.head_dim = 128;
    s.intermediate_size = 6144, s.vocab_size = 151936, s.num_experts = 128, s.experts_per_token = 8;
    s.moe_intermediate_size = 768;
    return s;
  }
  if (name == "mixtral-8x7b" || name == "tiny-mixtral") {
    s.family = SyntheticFamily::kMixtral;
    s.rope_theta = 1000000.0, s.max_position_embeddings = 32768;
    if (name == "tiny-mixtral") {
      s.hidden_size = 256, s.num_layers = 2, s.num_heads = 4, s.num_kv_heads = 2, s.head_dim = 64;
      s.intermediate_size = 512, s.vocab_size = 1024, s.num_experts = 4, s.experts_per_token = 2;
      return s;
    }
    s.hidden_size = 4096, s.num_layers = 32, s.num_heads = 32, s.num_kv_heads = 8, s.head_dim = 128;
    s.intermediate_size = 14336, s.vocab_size = 32000, s.num_experts = 8, s.experts_per_token = 2;
    return s;
  }
  return std::nullopt;
}

std::vector<std::string> synthetic_shape_names() {
  return {"llama-3.2-1b", "llama-3.1-8b", "tiny", "qwen3-30b-a3b", "mixtral-8x7b", "tiny-qwen3-moe", "tiny-mixtral"};
}

Status check_synthetic_shape(const SyntheticShape& s) {
  const std::pair<const char*, int64_t> dims[] = {
      {"hidden_size", s.hidden_size},     {"num_layers", s.num_layers},
      {"num_heads", s.num_heads},         {"num_kv_heads", s.num_kv_heads},
      {"head_dim", s.head_dim},           {"intermediate_size", s.intermediate_size},
      {"max_position_embeddings", s.max_position_embeddings},
      {"rope_original_max_positions", s.rope_original_max_positions}};
  for (const auto& [field, v] : dims) {
    if (v < 1 || v > (int64_t{1} << 24)) {
      return invalid(std::string("shape ") + s.name + ": " + field + " = " + std::to_string(v) +
                     ", expected 1 .. 16777216");
    }
  }
  if (s.vocab_size < 258 || s.vocab_size > (int64_t{1} << 24)) {
    return invalid("shape " + s.name + ": vocab_size = " + std::to_string(s.vocab_size) +
                   ", expected 258 .. 16777216 (256 byte tokens + BOS/EOS at least)");
  }
  if (s.num_heads % s.num_kv_heads != 0) {
    return invalid("shape " + s.name + ": num_heads " + std::to_string(s.num_heads) +
                   " is not a multiple of num_kv_heads " + std::to_string(s.num_kv_heads));
  }
  if (s.family != SyntheticFamily::kLlama) {
    const int64_t width = s.family == SyntheticFamily::kQwen3Moe ? s.moe_intermediate_size : s.intermediate_size;
    if (s.num_experts < 1 || s.num_experts > 4096 || s.experts_per_token < 1 || s.experts_per_token > s.num_experts ||
        width < 1 || width > (int64_t{1} << 24)) {
      return invalid("shape " + s.name + ": num_experts = " + std::to_string(s.num_experts) +
                     ", experts_per_token = " + std::to_string(s.experts_per_token) + ", expert width = " +
                     std::to_string(width) + "; expected 1 <= experts_per_token <= num_experts <= 4096, width >= 1");
    }
  }
  const std::pair<const char*, double> reals[] = {{"rms_norm_eps", s.rms_norm_eps},
                                                   {"rope_theta", s.rope_theta},
                                                   {"rope_factor", s.rope_factor},
                                                   {"rope_low_freq_factor", s.rope_low_freq_factor},
                                                   {"rope_high_freq_factor", s.rope_high_freq_factor}};
  for (const auto& [field, v] : reals) {
    if (!std::isfinite(v) || v <= 0.0) {
      return invalid(std::string("shape ") + s.name + ": " + field + " = " + std::to_string(v) +
                     ", expected a finite value > 0");
    }
  }
  return Status::Ok();
}

std::vector<SyntheticTensor> synthetic_tensors(const SyntheticShape& s) {
  using M = ModelTensor;
  const ModelDims dims{.hidden = s.hidden_size,
                       .intermediate = s.intermediate_size,
                       .vocab = s.vocab_size,
                       .heads = s.num_heads,
                       .kv_heads = s.num_kv_heads,
                       .head_dim = s.head_dim};
  std::vector<SyntheticTensor> t;
  auto add = [&](ModelTensor m, uint32_t layer) {
    t.push_back({model_tensor_name(m, layer), expected_shape(m, dims), model_tensor_info(m).role == TensorRole::kNorm});
  };
  add(M::kEmbedTokens, 0);
  const bool qwen = s.family == SyntheticFamily::kQwen3Moe;
  const int64_t ff = qwen ? s.moe_intermediate_size : s.intermediate_size;  // an expert's width
  for (int64_t i = 0; i < s.num_layers; ++i) {
    const auto layer = static_cast<uint32_t>(i);
    if (s.family == SyntheticFamily::kLlama) {
      for (M m : {M::kQProj, M::kKProj, M::kVProj, M::kOProj, M::kGateProj, M::kUpProj, M::kDownProj, M::kInputNorm,
                  M::kPostAttentionNorm}) {
        add(m, layer);
      }
      continue;
    }
    for (M m : {M::kQProj, M::kKProj, M::kVProj, M::kOProj}) add(m, layer);
    if (qwen) {
      add(M::kQNorm, layer);
      add(M::kKNorm, layer);
    }
    // HF names: Qwen3-MoE mlp.gate / mlp.experts.N.{gate,up,down}_proj; Mixtral block_sparse_moe.gate /
    // block_sparse_moe.experts.N.{w1 (gate), w3 (up), w2 (down)}.
    const std::string p = "model.layers." + std::to_string(i) + (qwen ? ".mlp." : ".block_sparse_moe.");
    t.push_back({p + "gate.weight", {s.num_experts, s.hidden_size}, false});
    for (int64_t e = 0; e < s.num_experts; ++e) {
      const std::string x = p + "experts." + std::to_string(e) + ".";
      t.push_back({x + (qwen ? "gate_proj" : "w1") + ".weight", {ff, s.hidden_size}, false});
      t.push_back({x + (qwen ? "up_proj" : "w3") + ".weight", {ff, s.hidden_size}, false});
      t.push_back({x + (qwen ? "down_proj" : "w2") + ".weight", {s.hidden_size, ff}, false});
    }
    add(M::kInputNorm, layer);
    add(M::kPostAttentionNorm, layer);
  }
  add(M::kFinalNorm, 0);
  if (!s.tie_word_embeddings) add(M::kLmHead, 0);
  return t;
}

std::vector<std::vector<size_t>> split_into_shards(std::span<const uint64_t> tensor_bytes, uint64_t max_shard_bytes) {
  std::vector<std::vector<size_t>> shards;
  std::vector<size_t> current;
  uint64_t current_bytes = 0;
  for (size_t i = 0; i < tensor_bytes.size(); ++i) {
    if (tensor_bytes[i] > max_shard_bytes) {  // a shard of its own, the current one stays open
      shards.push_back({i});
      continue;
    }
    if (current_bytes + tensor_bytes[i] > max_shard_bytes) {
      shards.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(i);
    current_bytes += tensor_bytes[i];
  }
  if (!current.empty()) shards.push_back(std::move(current));
  return shards;
}

uint64_t synthetic_tensor_seed(uint64_t seed, std::string_view tensor_name) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : tensor_name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return mix64(hash ^ mix64(seed + kGolden));
}

namespace {

inline uint32_t fmix32(uint32_t h) {  // murmur3's finaliser: a bijection with full avalanche
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  return h ^ (h >> 16);
}

// Elements i0 .. i0 + n of one 65536-element block with keys k1, k2: two hashed 32-bit words per value, their
// four 16-bit halves summed. 32-bit integer lanes, so it vectorises; built for AVX2 and baseline x86-64
// (chosen at load time), the integer math and the one float multiply give the same bits on both.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void fill_block(uint32_t k1, uint32_t k2, uint32_t i0, float* out, uint32_t n) {
  const float scale = kValueScale;
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t i = i0 + j;
    const uint32_t a = fmix32(k1 + i * 0x9E3779B9u);
    const uint32_t b = fmix32(k2 + i * 0x7F4A7C15u);
    const auto sum = static_cast<int32_t>((a & 0xffffu) + (a >> 16) + (b & 0xffffu) + (b >> 16));
    out[j] = static_cast<float>(sum - 131070) * scale;
  }
}

}  // namespace

// Counter-based: element e of a tensor is a hash of (block key of e / 65536, e % 65536), so any element range
// can be generated on its own.
void fill_synthetic_values(uint64_t tensor_seed, int64_t first_elem, std::span<float> out) {
  constexpr int64_t kBlock = 65536;
  size_t done = 0;
  while (done < out.size()) {
    const int64_t e = first_elem + static_cast<int64_t>(done);
    const int64_t in_block = e % kBlock;
    const auto n = static_cast<size_t>(std::min<int64_t>(kBlock - in_block, static_cast<int64_t>(out.size() - done)));
    const uint64_t key = mix64(tensor_seed + static_cast<uint64_t>(e / kBlock + 1) * kGolden);
    fill_block(static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(in_block),
               out.data() + done, static_cast<uint32_t>(n));
    done += n;
  }
}

namespace {

int64_t dtype_bytes(quant::DType d) { return d == quant::DType::kF32 ? 4 : 2; }

// Element e0 .. e0 + dst_elems of tensor t, in dtype, into dst (chunks in parallel).
void generate_piece(const SyntheticTensor& t, uint64_t tensor_seed, quant::DType dtype, int64_t e0,
                    std::span<std::byte> dst) {
  const int64_t esize = dtype_bytes(dtype);
  const auto n = static_cast<int64_t>(dst.size()) / esize;
  constexpr int64_t kChunkElems = 65536;  // one parallel task
  const int64_t n_chunks = (n + kChunkElems - 1) / kChunkElems;
  tbb::parallel_for(int64_t{0}, n_chunks, [&](int64_t c) {
    constexpr int64_t kBatch = 1024;
    float vals[kBatch];
    uint16_t halves[kBatch];
    const int64_t chunk_end = std::min(n, (c + 1) * kChunkElems);
    for (int64_t b = c * kChunkElems; b < chunk_end; b += kBatch) {
      const auto m = static_cast<size_t>(std::min(kBatch, chunk_end - b));
      const std::span<float> v(vals, m);
      if (t.is_norm) {
        std::fill(v.begin(), v.end(), 1.0f);
      } else {
        fill_synthetic_values(tensor_seed, e0 + b, v);
      }
      std::byte* out = dst.data() + b * esize;
      if (dtype == quant::DType::kF32) {
        std::memcpy(out, vals, m * 4);
        continue;
      }
      if (dtype == quant::DType::kBF16) {
        quant::f32_to_bf16(v, std::span<uint16_t>(halves, m));
      } else {
        quant::f32_to_f16(v, std::span<uint16_t>(halves, m));
      }
      std::memcpy(out, halves, m * 2);
    }
  });
}

// One write in flight while the next buffer is filled.
class DoubleBufferedFile {
 public:
  static constexpr size_t kBufferBytes = size_t{32} << 20;

  DoubleBufferedFile() {
    for (auto& b : buffers_) b.resize(kBufferBytes);
  }
  ~DoubleBufferedFile() { (void)wait(); }

  Status open(const std::filesystem::path& path) {
    RDRR_RETURN_IF_ERROR(wait());
    name_ = path.filename().string();
    fd_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_.valid()) return errno_status(errno, path.string(), "open for writing");
    return Status::Ok();
  }
  std::span<std::byte> buffer() { return buffers_[current_]; }
  // Queues the first n bytes of buffer() for writing and switches buffers.
  Status submit(size_t n) {
    RDRR_RETURN_IF_ERROR(wait());
    const std::span<const std::byte> data(buffers_[current_].data(), n);
    pending_ = std::async(std::launch::async, [this, data] { return write_all(fd_.get(), data, name_); });
    current_ ^= 1;
    return Status::Ok();
  }
  Status close() {
    RDRR_RETURN_IF_ERROR(wait());
    if (const int err = fd_.close(); err != 0) return errno_status(err, name_, "close");
    return Status::Ok();
  }

 private:
  Status wait() {
    if (!pending_.valid()) return Status::Ok();
    return pending_.get();
  }
  std::vector<std::byte> buffers_[2];
  int current_ = 0;
  std::future<Status> pending_;
  UniqueFd fd_;
  std::string name_;
};

std::string safetensors_dtype(quant::DType d) {
  return d == quant::DType::kF32 ? "F32" : d == quant::DType::kF16 ? "F16" : "BF16";
}

// u64 length + compact JSON header (tensors sorted by name, data offsets in that order), space padded.
std::string safetensors_header(const std::vector<const SyntheticTensor*>& sorted, quant::DType dtype) {
  std::string json = R"({"__metadata__":{"format":"pt"})";
  uint64_t offset = 0;
  for (const SyntheticTensor* t : sorted) {
    const uint64_t bytes = static_cast<uint64_t>(t->numel() * dtype_bytes(dtype));
    json += ",\"" + t->name + "\":{\"dtype\":\"" + safetensors_dtype(dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t->shape.size(); ++i) {
      if (i > 0) json += ',';
      json += std::to_string(t->shape[i]);
    }
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json;
}

Status write_shard(const std::filesystem::path& path, std::vector<const SyntheticTensor*> tensors,
                   const SyntheticModelOptions& o, DoubleBufferedFile& file) {
  std::sort(tensors.begin(), tensors.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  RDRR_RETURN_IF_ERROR(file.open(path));
  const std::string header = safetensors_header(tensors, o.dtype);
  for (size_t pos = 0; pos < header.size(); pos += DoubleBufferedFile::kBufferBytes) {
    const size_t n = std::min(header.size() - pos, DoubleBufferedFile::kBufferBytes);
    std::memcpy(file.buffer().data(), header.data() + pos, n);
    RDRR_RETURN_IF_ERROR(file.submit(n));
  }
  const int64_t esize = dtype_bytes(o.dtype);
  const int64_t piece_elems = static_cast<int64_t>(DoubleBufferedFile::kBufferBytes) / esize;
  for (const SyntheticTensor* t : tensors) {
    const uint64_t seed = synthetic_tensor_seed(o.seed, t->name);
    const int64_t n = t->numel();
    for (int64_t e0 = 0; e0 < n; e0 += piece_elems) {
      const auto bytes = static_cast<size_t>(std::min(piece_elems, n - e0) * esize);
      generate_piece(*t, seed, o.dtype, e0, file.buffer().first(bytes));
      RDRR_RETURN_IF_ERROR(file.submit(bytes));
    }
  }
  return file.close();
}

}  // namespace

Result<SyntheticModelSummary> write_synthetic_model(const SyntheticModelOptions& o) {
  RDRR_RETURN_IF_ERROR(check_synthetic_shape(o.shape));
  if (o.dtype != quant::DType::kF32 && o.dtype != quant::DType::kF16 && o.dtype != quant::DType::kBF16) {
    return invalid("dtype " + std::string(quant::dtype_name(o.dtype)) + ": expected F32, F16 or BF16");
  }
  if (o.max_shard_bytes == 0) return invalid("max_shard_bytes: must be > 0");
  RDRR_RETURN_IF_ERROR(detail::prepare_output_dir(o.out_dir, o.force));
  RDRR_RETURN_IF_ERROR(detail::write_text_files(o));

  const std::vector<SyntheticTensor> tensors = synthetic_tensors(o.shape);
  std::vector<uint64_t> sizes;
  SyntheticModelSummary summary;
  for (const auto& t : tensors) {
    sizes.push_back(static_cast<uint64_t>(t.numel() * dtype_bytes(o.dtype)));
    summary.tensor_bytes += sizes.back();
    summary.params += t.numel();
  }
  const auto shards = split_into_shards(sizes, o.max_shard_bytes);
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    summary.safetensors_files.push_back(shards.size() == 1 ? "model.safetensors" : name);
  }
  DoubleBufferedFile file;
  for (size_t i = 0; i < shards.size(); ++i) {
    std::vector<const SyntheticTensor*> members;
    for (size_t idx : shards[i]) members.push_back(&tensors[idx]);
    const std::filesystem::path path = o.out_dir / summary.safetensors_files[i];
    RDRR_RETURN_IF_ERROR(write_shard(path, std::move(members), o, file));
    std::error_code ec;
    summary.file_bytes += std::filesystem::file_size(path, ec);
    if (ec) return error(StatusCode::kIo, path.string() + ": file size: " + ec.message());
  }
  if (shards.size() > 1) {
    RDRR_RETURN_IF_ERROR(
        detail::write_shard_index(o.out_dir, tensors, shards, summary.safetensors_files, summary.tensor_bytes));
  }
  return summary;
}

}  // namespace rdrr::tools
