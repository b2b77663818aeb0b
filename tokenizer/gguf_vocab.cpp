// tokenizer.gguf.json (a GGUF file's tokenizer.* metadata, convert/model_config.h gguf_tokenizer_json) ->
// Pipeline, following llama.cpp's tokenizers:
//   tokenizer.ggml.model "llama": SentencePiece-style BPE that merges the adjacent pair whose
//     concatenation is the highest-scoring piece; " " -> "▁", "▁" prepended to every text fragment when
//     add_space_prefix (default true), <0xNN> byte pieces for characters outside the vocabulary.
//   tokenizer.ggml.model "gpt2": byte-level BPE with tokenizer.ggml.merges ranks after the regex split of
//     tokenizer.ggml.pre ("gpt2"/"gpt-2", "llama-bpe"/"llama3", "qwen2"); ignore_merges for llama-bpe.
//   token_type 3 (control) and 4 (user defined) pieces are matched in the text before the model (control
//   ones are special). BOS/EOS ids from tokenizer.ggml.bos/eos_token_id; add_bos_token/add_eos_token.
#include "rdrr/json_strict.h"
#include "tokenizer/loaders.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok {

namespace {

constexpr std::string_view kFormat = "rdrr-gguf-tokenizer";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct GgufMeta {
  const json* md;
  FieldReader r;
  std::string ptr = "/metadata";
};

Status read_tokens(const GgufMeta& g, BpeModel& m, std::vector<int64_t>& types) {
  RDRR_ASSIGN_OR_RETURN(const json* tokens, g.r.array(*g.md, g.ptr, "tokenizer.ggml.tokens"));
  const std::string tptr = json_pointer_child(g.ptr, "tokenizer.ggml.tokens");
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (!(*tokens)[i].is_string()) return g.r.error(json_pointer_child(tptr, std::to_string(i)), "expected a string");
    m.pieces.push_back((*tokens)[i].get<std::string>());
    m.vocab.emplace(m.pieces.back(), static_cast<TokenId>(i));  // first occurrence wins on duplicates
  }
  types.assign(m.pieces.size(), kNormal);
  if (const json* tt = find_field(*g.md, "tokenizer.ggml.token_type")) {
    const std::string ttptr = json_pointer_child(g.ptr, "tokenizer.ggml.token_type");
    if (!tt->is_array() || tt->size() != m.pieces.size()) {
      return g.r.error(ttptr, "expected an array of " + std::to_string(m.pieces.size()) + " integers");
    }
    for (size_t i = 0; i < tt->size(); ++i) {
      if (!(*tt)[i].is_number_integer()) return g.r.error(json_pointer_child(ttptr, std::to_string(i)), "expected an integer");
      types[i] = (*tt)[i].get<int64_t>();
    }
  }
  return Status::Ok();
}

Status read_scores(const GgufMeta& g, BpeModel& m) {
  const json* sc = find_field(*g.md, "tokenizer.ggml.scores");
  const std::string sptr = json_pointer_child(g.ptr, "tokenizer.ggml.scores");
  if (sc == nullptr) return g.r.error(sptr, "missing (needed by tokenizer.ggml.model 'llama')");
  if (!sc->is_array() || sc->size() != m.pieces.size()) {
    return g.r.error(sptr, "expected an array of " + std::to_string(m.pieces.size()) + " numbers");
  }
  for (size_t i = 0; i < sc->size(); ++i) {
    if (!(*sc)[i].is_number()) return g.r.error(json_pointer_child(sptr, std::to_string(i)), "expected a number");
    m.scores.push_back((*sc)[i].get<float>());
  }
  return Status::Ok();
}

Status read_merges(const GgufMeta& g, BpeModel& m) {
  RDRR_ASSIGN_OR_RETURN(const json* merges, g.r.array(*g.md, g.ptr, "tokenizer.ggml.merges"));
  const std::string mptr = json_pointer_child(g.ptr, "tokenizer.ggml.merges");
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& e = (*merges)[i];
    const std::string eptr = json_pointer_child(mptr, std::to_string(i));
    const size_t sp = e.is_string() ? e.get_ref<const std::string&>().find(' ', 1) : std::string::npos;
    if (sp == std::string::npos) return g.r.error(eptr, "expected \"left right\", got " + json_brief(e));
    const std::string& s = e.get_ref<const std::string&>();
    const std::string a = s.substr(0, sp);
    const std::string b = s.substr(sp + 1);
    const auto ia = m.vocab.find(a);
    const auto ib = m.vocab.find(b);
    const auto iab = m.vocab.find(a + b);
    if (ia == m.vocab.end() || ib == m.vocab.end() || iab == m.vocab.end()) {
      return g.r.error(eptr, "merge '" + s + "': a part or the result is not in tokenizer.ggml.tokens");
    }
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) | static_cast<uint32_t>(ib->second);
    m.merges.emplace(key, std::make_pair(static_cast<uint32_t>(i), iab->second));
  }
  return Status::Ok();
}

Result<std::optional<TokenId>> read_id(const GgufMeta& g, std::string_view key, size_t n_tokens) {
  if (find_field(*g.md, key) == nullptr) return std::optional<TokenId>();
  RDRR_ASSIGN_OR_RETURN(int64_t v, g.r.integer(*g.md, g.ptr, key));
  if (v < 0 || static_cast<uint64_t>(v) >= n_tokens) {
    return g.r.error(json_pointer_child(g.ptr, key), "token id " + std::to_string(v) + " outside the vocabulary of " +
                                                         std::to_string(n_tokens));
  }
  return std::optional<TokenId>(static_cast<TokenId>(v));
}

Status gpt2_pre(const GgufMeta& g, Pipeline& p) {
  RDRR_ASSIGN_OR_RETURN(std::string pre, g.r.string_or(*g.md, g.ptr, "tokenizer.ggml.pre", "default"));
  std::string_view pattern;
  // "default" (llama.cpp's multi-stage punctuation/digit split for unknown BPE files) is not implemented.
  if (pre == "gpt2" || pre == "gpt-2") {
    pattern = kGpt2Pattern;
  } else if (pre == "llama-bpe" || pre == "llama3") {
    pattern = kLlama3Pattern;
    p.model.ignore_merges = true;
  } else if (pre == "qwen2") {
    pattern = kQwen2Pattern;
  } else {
    return g.r.unsupported(json_pointer_child(g.ptr, "tokenizer.ggml.pre"),
                           "pre-tokenizer '" + pre + "' is not supported (supported: gpt2, gpt-2, llama-bpe, llama3, qwen2)");
  }
  RDRR_ASSIGN_OR_RETURN(Regex re, Regex::compile(pattern));
  p.pre_tokenizers.push_back(PreSplit{std::move(re), "", SplitBehavior::kIsolated, false});
  p.pre_tokenizers.push_back(PreByteLevel{false, std::nullopt});
  p.decoders.push_back(DecByteLevel{});
  return Status::Ok();
}

Status llama_pipeline(const GgufMeta& g, Pipeline& p) {
  RDRR_RETURN_IF_ERROR(read_scores(g, p.model));
  p.model.mode = BpeModel::Mode::kScores;
  RDRR_ASSIGN_OR_RETURN(bool space_prefix, g.r.boolean_or(*g.md, g.ptr, "tokenizer.ggml.add_space_prefix", true));
  if (space_prefix) p.normalizers.emplace_back(NormPrepend{std::string(kMetaspace)});
  p.normalizers.emplace_back(NormReplace{std::nullopt, " ", std::string(kMetaspace)});
  p.decoders.push_back(DecReplace{std::string(kMetaspace), " "});
  p.decoders.push_back(DecByteFallback{});
  p.decoders.push_back(DecFuse{});
  if (space_prefix) p.decoders.push_back(DecStrip{" ", 1, 0});
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<PipelineTokenizer>> load_gguf_tokenizer_json(const std::filesystem::path& file,
                                                                    const TokenizerInfo* info) {
  RDRR_ASSIGN_OR_RETURN(json root, read_json_file(file));
  const std::string name = file.filename().string();
  GgufMeta g{nullptr, FieldReader{name}};
  RDRR_ASSIGN_OR_RETURN(std::string format, g.r.string(root, "", "format"));
  if (format != kFormat) return g.r.error("/format", "expected '" + std::string(kFormat) + "', got '" + format + "'");
  RDRR_ASSIGN_OR_RETURN(int64_t version, g.r.integer(root, "", "version"));
  if (version != 1) return g.r.unsupported("/version", "version " + std::to_string(version) + " (supported: 1)");
  RDRR_ASSIGN_OR_RETURN(g.md, g.r.object(root, "", "metadata"));

  Pipeline p;
  std::vector<int64_t> types;
  RDRR_RETURN_IF_ERROR(read_tokens(g, p.model, types));
  RDRR_ASSIGN_OR_RETURN(std::string model, g.r.string(*g.md, g.ptr, "tokenizer.ggml.model"));
  bool add_bos_default = false;
  if (model == "llama") {
    RDRR_RETURN_IF_ERROR(llama_pipeline(g, p));
    add_bos_default = true;
  } else if (model == "gpt2") {
    RDRR_RETURN_IF_ERROR(read_merges(g, p.model));
    RDRR_RETURN_IF_ERROR(gpt2_pre(g, p));
  } else {
    return g.r.unsupported(json_pointer_child(g.ptr, "tokenizer.ggml.model"),
                           "tokenizer model '" + model + "' is not supported (supported: llama, gpt2)");
  }
  p.has_decoder = true;
  index_byte_pieces(p.model);
  const size_t n = p.model.pieces.size();
  RDRR_ASSIGN_OR_RETURN(p.model.unk_id, read_id(g, "tokenizer.ggml.unknown_token_id", n));
  for (size_t i = 0; i < n; ++i) {
    if (types[i] == kControl || types[i] == kUserDefined) {
      if (!p.model.pieces[i].empty()) p.added.push_back({p.model.pieces[i], static_cast<TokenId>(i), types[i] == kControl});
    }
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<TokenId> bos, read_id(g, "tokenizer.ggml.bos_token_id", n));
  RDRR_ASSIGN_OR_RETURN(std::optional<TokenId> eos, read_id(g, "tokenizer.ggml.eos_token_id", n));
  RDRR_ASSIGN_OR_RETURN(bool add_bos, g.r.boolean_or(*g.md, g.ptr, "tokenizer.ggml.add_bos_token", add_bos_default));
  RDRR_ASSIGN_OR_RETURN(bool add_eos, g.r.boolean_or(*g.md, g.ptr, "tokenizer.ggml.add_eos_token", false));
  if (info != nullptr) {
    add_bos = info->add_bos_token;
    add_eos = info->add_eos_token;
  }
  std::vector<TemplatePiece> tmpl;
  if (add_bos && bos) tmpl.push_back({false, {*bos}});
  tmpl.push_back({true, {}});
  if (add_eos && eos) tmpl.push_back({false, {*eos}});
  p.post_template = std::move(tmpl);
  auto tok = std::make_unique<PipelineTokenizer>(std::move(p), name, "gguf-" + model);
  tok->set_ids(bos, eos ? std::vector<TokenId>{*eos} : std::vector<TokenId>{});
  return tok;
}

}  // namespace rdrr::tok
