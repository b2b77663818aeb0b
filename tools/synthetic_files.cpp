// Text files of a synthetic checkpoint: config.json and generation_config.json (transformers 4 style, as
// Meta's Llama 3.x releases), a synthetic byte-level BPE tokenizer, and the shard index.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <regex>
#include <span>
#include <system_error>

#include "rdrr/file_io.h"
#include "tools/synthetic_files_internal.h"
#include "tools/synthetic_model.h"

namespace rdrr::tools {

namespace {

constexpr const char* kTransformersVersion = "4.45.0";

// Llama 3's pre-tokenizer split pattern.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";

int64_t special_count(const SyntheticShape& s) { return std::min<int64_t>(256, s.vocab_size - 256); }

// Llama 3's special tokens in id order: begin/end of text, reserved 0-3, header ids, reserved 4, eot, reserved 5+.
std::string special_token_name(int64_t i) {
  switch (i) {
    case 0: return "<|begin_of_text|>";
    case 1: return "<|end_of_text|>";
    case 6: return "<|start_header_id|>";
    case 7: return "<|end_header_id|>";
    case 9: return "<|eot_id|>";
    default: break;
  }
  const int64_t reserved = i < 6 ? i - 2 : i == 8 ? 4 : i - 5;
  return "<|reserved_special_token_" + std::to_string(reserved) + "|>";
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {  // byte-level code points stay below 0x800
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode, in its order: printable bytes map to themselves, the rest to 256, 257, ...
std::array<std::string, 256> byte_level_alphabet() {
  std::array<bool, 256> printable{};
  std::vector<uint32_t> order;
  for (uint32_t b = 0; b < 256; ++b) {
    printable[b] = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    if (printable[b]) order.push_back(b);
  }
  std::array<std::string, 256> chars;
  size_t i = 0;
  for (uint32_t b : order) append_utf8(chars[i++], b);
  uint32_t extra = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    if (!printable[b]) append_utf8(chars[i++], extra++);
  }
  return chars;
}

std::string json_quote(const std::string& s) { return nlohmann::json(s).dump(); }

Status write_text(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  auto r = write_new_file(dir / name, name, std::as_bytes(std::span<const char>(text)), /*sync_to_disk=*/false);
  return r.ok() ? Status::Ok() : r.status();
}

bool is_our_file(const std::string& name) {
  static const std::regex kShard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  static const char* kNames[] = {"config.json",       "generation_config.json", "tokenizer.json",
                                 "tokenizer_config.json", "model.safetensors", "model.safetensors.index.json"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames) ||
         std::regex_match(name, kShard);
}

}  // namespace

int64_t synthetic_bos_id(const SyntheticShape& s) { return s.vocab_size - special_count(s); }
int64_t synthetic_eos_id(const SyntheticShape& s) { return synthetic_bos_id(s) + 1; }

// The config.json keys every family shares (nlohmann::json keeps keys sorted, so the file's order is the same).
nlohmann::json common_config(const SyntheticShape& s, quant::DType dtype) {
  nlohmann::json c;
  c["attention_dropout"] = 0.0;
  c["bos_token_id"] = synthetic_bos_id(s);
  c["eos_token_id"] = synthetic_eos_id(s);
  c["head_dim"] = s.head_dim;
  c["hidden_act"] = "silu";
  c["hidden_size"] = s.hidden_size;
  c["initializer_range"] = 0.02;
  c["intermediate_size"] = s.intermediate_size;
  c["max_position_embeddings"] = s.max_position_embeddings;
  c["num_attention_heads"] = s.num_heads;
  c["num_hidden_layers"] = s.num_layers;
  c["num_key_value_heads"] = s.num_kv_heads;
  c["rms_norm_eps"] = s.rms_norm_eps;
  c["rope_theta"] = s.rope_theta;
  c["tie_word_embeddings"] = s.tie_word_embeddings;
  c["torch_dtype"] = dtype == quant::DType::kF32 ? "float32" : dtype == quant::DType::kF16 ? "float16" : "bfloat16";
  c["transformers_version"] = kTransformersVersion;
  c["use_cache"] = true;
  c["vocab_size"] = s.vocab_size;
  return c;
}

// Qwen3-MoE / Mixtral (transformers' Qwen3MoeConfig / MixtralConfig); no rope scaling.
void add_moe_config(const SyntheticShape& s, nlohmann::json& c) {
  const bool qwen = s.family == SyntheticFamily::kQwen3Moe;
  c["architectures"] = {qwen ? "Qwen3MoeForCausalLM" : "MixtralForCausalLM"};
  c["model_type"] = qwen ? "qwen3_moe" : "mixtral";
  c["num_experts_per_tok"] = s.experts_per_token;
  c["output_router_logits"] = false;
  c["router_aux_loss_coef"] = 0.001;
  c["sliding_window"] = nullptr;
  if (qwen) {
    c["attention_bias"] = false;
    c["decoder_sparse_step"] = 1;
    c["mlp_only_layers"] = nlohmann::json::array();
    c["moe_intermediate_size"] = s.moe_intermediate_size;
    c["norm_topk_prob"] = true;
    c["num_experts"] = s.num_experts;
    c["use_sliding_window"] = false;
  } else {
    c["num_local_experts"] = s.num_experts;
    c["router_jitter_noise"] = 0.0;
  }
}

std::string synthetic_config_json(const SyntheticShape& s, quant::DType dtype) {
  nlohmann::json c = common_config(s, dtype);
  if (s.family != SyntheticFamily::kLlama) {
    add_moe_config(s, c);
    return c.dump(2) + "\n";
  }
  c["architectures"] = {"LlamaForCausalLM"};
  c["attention_bias"] = false;
  c["mlp_bias"] = false;
  c["model_type"] = "llama";
  c["pretraining_tp"] = 1;
  c["rope_scaling"] = {{"factor", s.rope_factor},
                       {"high_freq_factor", s.rope_high_freq_factor},
                       {"low_freq_factor", s.rope_low_freq_factor},
                       {"original_max_position_embeddings", s.rope_original_max_positions},
                       {"rope_type", "llama3"}};
  return c.dump(2) + "\n";
}

std::string synthetic_generation_config_json(const SyntheticShape& s) {
  nlohmann::json g;
  g["_from_model_config"] = true;
  g["bos_token_id"] = synthetic_bos_id(s);
  g["do_sample"] = true;
  g["eos_token_id"] = synthetic_eos_id(s);
  g["temperature"] = 0.6;
  g["top_p"] = 0.9;
  g["transformers_version"] = kTransformersVersion;
  return g.dump(2) + "\n";
}

std::string synthetic_tokenizer_config_json(const SyntheticShape& s) {
  nlohmann::json t;
  t["add_bos_token"] = true;
  t["add_eos_token"] = false;
  t["bos_token"] = special_token_name(0);
  t["clean_up_tokenization_spaces"] = true;
  t["eos_token"] = special_token_name(1);
  t["model_input_names"] = {"input_ids", "attention_mask"};
  t["model_max_length"] = s.max_position_embeddings;
  t["tokenizer_class"] = "PreTrainedTokenizerFast";
  return t.dump(2) + "\n";
}

// Byte-level BPE: ids 0..255 the byte alphabet, then merges of two bytes (65536 at most), then of a two-byte
// token and a byte; the last special_count() ids are Llama 3's special tokens.
std::string synthetic_tokenizer_json(const SyntheticShape& s) {
  const auto bytes = byte_level_alphabet();
  const int64_t base = synthetic_bos_id(s);
  std::vector<std::string> vocab(bytes.begin(), bytes.end());
  std::vector<std::string> merges;
  for (int64_t k = 0; static_cast<int64_t>(vocab.size()) < base; ++k) {
    const std::string left =  // a copy: vocab grows below
        k < 65536 ? bytes[static_cast<size_t>(k / 256)] : vocab[static_cast<size_t>(256 + (k - 65536) / 256)];
    const std::string& right = bytes[static_cast<size_t>(k % 256)];
    merges.push_back(left + " " + right);
    vocab.push_back(left + right);
  }
  const std::string bos = special_token_name(0);
  std::string out = R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[)";
  for (int64_t i = 0; i < special_count(s); ++i) {
    if (i > 0) out += ',';
    out += R"({"id":)";
    out += std::to_string(base + i);
    out += R"(,"content":)";
    out += json_quote(special_token_name(i));
    out += R"(,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true})";
  }
  out += R"(],"normalizer":null,"pre_tokenizer":{"type":"Sequence","pretokenizers":[)";
  out += R"({"type":"Split","pattern":{"Regex":)" + json_quote(kLlama3Pattern) +
         R"(},"behavior":"Isolated","invert":false},)";
  out += R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]},)";
  out += R"("post_processor":{"type":"Sequence","processors":[)";
  out += R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true},)";
  out += R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":)" + json_quote(bos) +
         R"(,"type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[{"SpecialToken":{"id":)" + json_quote(bos) +
         R"(,"type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":)" + json_quote(bos) +
         R"(,"type_id":1}},{"Sequence":{"id":"B","type_id":1}}],"special_tokens":{)" + json_quote(bos) + R"(:{"id":)" +
         json_quote(bos) + R"(,"ids":[)" + std::to_string(base) + R"(],"tokens":[)" + json_quote(bos) + "]}}}]},";
  out += R"("decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},)";
  out += R"("model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,)"
         R"("end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":true,"vocab":{)";
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (i > 0) out += ',';
    out += json_quote(vocab[i]);
    out += ':';
    out += std::to_string(i);
  }
  out += R"(},"merges":[)";
  for (size_t i = 0; i < merges.size(); ++i) {
    if (i > 0) out += ',';
    out += json_quote(merges[i]);
  }
  out += "]}}\n";
  return out;
}

namespace detail {

Status prepare_output_dir(const std::filesystem::path& dir, bool force) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return error(StatusCode::kIo, dir.string() + ": create folder: " + ec.message());
    return Status::Ok();
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return error(StatusCode::kAlreadyExists, dir.string() + ": exists and is not a folder");
  }
  std::vector<std::filesystem::path> ours;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_our_file(it->path().filename().string())) ours.push_back(it->path());
  }
  if (ec) return error(StatusCode::kIo, dir.string() + ": list folder: " + ec.message());
  std::sort(ours.begin(), ours.end());
  if (!ours.empty() && !force) {
    return error(StatusCode::kAlreadyExists, dir.string() + ": already holds " + ours.front().filename().string() +
                                                 " (use --force to overwrite)");
  }
  for (const auto& p : ours) {
    if (!std::filesystem::remove(p, ec) || ec) {
      return error(StatusCode::kIo, p.string() + ": remove: " + (ec ? ec.message() : "not removed"));
    }
  }
  return Status::Ok();
}

Status write_text_files(const SyntheticModelOptions& o) {
  RDRR_RETURN_IF_ERROR(write_text(o.out_dir, "config.json", synthetic_config_json(o.shape, o.dtype)));
  RDRR_RETURN_IF_ERROR(write_text(o.out_dir, "generation_config.json", synthetic_generation_config_json(o.shape)));
  RDRR_RETURN_IF_ERROR(write_text(o.out_dir, "tokenizer.json", synthetic_tokenizer_json(o.shape)));
  return write_text(o.out_dir, "tokenizer_config.json", synthetic_tokenizer_config_json(o.shape));
}

Status write_shard_index(const std::filesystem::path& dir, const std::vector<SyntheticTensor>& tensors,
                         const std::vector<std::vector<size_t>>& shards, const std::vector<std::string>& files,
                         uint64_t total_bytes) {
  nlohmann::json index;
  index["metadata"]["total_size"] = total_bytes;
  index["weight_map"] = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    for (size_t t : shards[i]) index["weight_map"][tensors[t].name] = files[i];
  }
  return write_text(dir, "model.safetensors.index.json", index.dump(2) + "\n");
}

}  // namespace detail

}  // namespace rdrr::tools
