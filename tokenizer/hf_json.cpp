// tokenizer.json (huggingface/tokenizers serialisation) -> Pipeline. Unknown component types are
// kUnsupported naming the field; malformed fields kSchema naming the JSON Pointer.
#include <functional>

#include "rdrr/json_strict.h"
#include "tokenizer/loaders.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok {

namespace {

std::string child(const std::string& ptr, std::string_view key) { return rdrr::json_pointer_child(ptr, key); }
std::string child(const std::string& ptr, size_t i) { return rdrr::json_pointer_child(ptr, std::to_string(i)); }

class HfLoader {
 public:
  explicit HfLoader(std::string file) : r_{std::move(file)} {}

  Result<Pipeline> load(const json& root) {
    if (!root.is_object()) return r_.error("", "expected a JSON object");
    Pipeline p;
    RDRR_RETURN_IF_ERROR(load_model(root, p.model));
    RDRR_RETURN_IF_ERROR(load_added(root, p));
    RDRR_RETURN_IF_ERROR(each_component(root, "", "normalizer", "normalizers",
                                        [&](const json& c, const std::string& ptr) { return normalizer(c, ptr, p); }));
    RDRR_RETURN_IF_ERROR(each_component(root, "", "pre_tokenizer", "pretokenizers",
                                        [&](const json& c, const std::string& ptr) { return pre_tokenizer(c, ptr, p); }));
    RDRR_RETURN_IF_ERROR(each_component(root, "", "post_processor", "processors",
                                        [&](const json& c, const std::string& ptr) { return post_processor(c, ptr, p); }));
    p.has_decoder = find_field(root, "decoder") != nullptr;
    RDRR_RETURN_IF_ERROR(each_component(root, "", "decoder", "decoders",
                                        [&](const json& c, const std::string& ptr) { return decoder(c, ptr, p); }));
    return p;
  }

 private:
  using Visit = std::function<Status(const json&, const std::string&)>;

  // Calls visit for the component at key (null/absent: nothing), flattening {"type": "Sequence", list_key: [...]}.
  Status each_component(const json& parent, const std::string& parent_ptr, std::string_view key,
                        std::string_view list_key, const Visit& visit) {
    const json* c = find_field(parent, key);
    if (c == nullptr) return Status::Ok();
    return visit_flat(*c, child(parent_ptr, key), list_key, visit);
  }

  Status visit_flat(const json& c, const std::string& ptr, std::string_view list_key, const Visit& visit) {
    if (!c.is_object()) return r_.error(ptr, "expected an object, got " + rdrr::json_brief(c));
    RDRR_ASSIGN_OR_RETURN(std::string type, r_.string(c, ptr, "type"));
    if (type != "Sequence") return visit(c, ptr);
    RDRR_ASSIGN_OR_RETURN(const json* list, r_.array(c, ptr, list_key));
    for (size_t i = 0; i < list->size(); ++i) {
      RDRR_RETURN_IF_ERROR(visit_flat((*list)[i], child(child(ptr, list_key), i), list_key, visit));
    }
    return Status::Ok();
  }

  // {"String": "x"} or {"Regex": "..."}: the literal or the compiled regex.
  Status pattern(const json& c, const std::string& ptr, std::string& literal, std::optional<Regex>& regex) {
    RDRR_ASSIGN_OR_RETURN(const json* pat, r_.object(c, ptr, "pattern"));
    const std::string pptr = child(ptr, "pattern");
    if (find_field(*pat, "String") != nullptr) {
      RDRR_ASSIGN_OR_RETURN(literal, r_.string(*pat, pptr, "String"));
      return Status::Ok();
    }
    RDRR_ASSIGN_OR_RETURN(std::string re, r_.string(*pat, pptr, "Regex"));
    auto compiled = Regex::compile(re);
    if (!compiled.ok()) return field_error(StatusCode::kParse, r_.file, child(pptr, "Regex"), compiled.status().message());
    regex = std::move(compiled).value();
    return Status::Ok();
  }

  Status load_model(const json& root, BpeModel& m) {
    RDRR_ASSIGN_OR_RETURN(const json* model, r_.object(root, "", "model"));
    const std::string ptr = "/model";
    RDRR_ASSIGN_OR_RETURN(std::string type, r_.string_or(*model, ptr, "type", "BPE"));
    if (type != "BPE") {
      return r_.unsupported(child(ptr, "type"), "model type '" + type + "' is not supported (supported: BPE)");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      const json* v = find_field(*model, key);
      if (v != nullptr && !(v->is_string() && v->get_ref<const std::string&>().empty())) {
        return r_.unsupported(child(ptr, key), "BPE with a subword prefix/suffix is not supported");
      }
    }
    if (const json* d = find_field(*model, "dropout"); d != nullptr && !(d->is_number() && d->get<double>() == 0.0)) {
      return r_.unsupported(child(ptr, "dropout"), "BPE dropout is not supported (not deterministic)");
    }
    RDRR_ASSIGN_OR_RETURN(const json* vocab, r_.object(*model, ptr, "vocab"));
    for (const auto& [piece, idv] : vocab->items()) {
      if (!idv.is_number_unsigned() || idv.get<uint64_t>() > 0x7FFFFFFF) {
        return r_.error(child(child(ptr, "vocab"), piece), "expected a token id (integer >= 0), got " + rdrr::json_brief(idv));
      }
      const auto id = static_cast<TokenId>(idv.get<uint64_t>());
      if (static_cast<size_t>(id) >= m.pieces.size()) m.pieces.resize(static_cast<size_t>(id) + 1);
      m.pieces[static_cast<size_t>(id)] = piece;
      m.vocab.emplace(piece, id);
    }
    RDRR_RETURN_IF_ERROR(load_merges(*model, ptr, m));
    RDRR_ASSIGN_OR_RETURN(m.byte_fallback, r_.boolean_or(*model, ptr, "byte_fallback", false));
    RDRR_ASSIGN_OR_RETURN(m.fuse_unk, r_.boolean_or(*model, ptr, "fuse_unk", false));
    RDRR_ASSIGN_OR_RETURN(m.ignore_merges, r_.boolean_or(*model, ptr, "ignore_merges", false));
    if (find_field(*model, "unk_token") != nullptr) {
      RDRR_ASSIGN_OR_RETURN(std::string unk, r_.string(*model, ptr, "unk_token"));
      const auto it = m.vocab.find(unk);
      if (it == m.vocab.end()) return r_.error(child(ptr, "unk_token"), "'" + unk + "' is not in /model/vocab");
      m.unk_id = it->second;
    }
    index_byte_pieces(m);
    if (m.byte_fallback && m.byte_ids.empty()) {
      return r_.error(child(ptr, "byte_fallback"), "true but the vocabulary lacks some of <0x00>..<0xFF>");
    }
    return Status::Ok();
  }

  Status load_merges(const json& model, const std::string& ptr, BpeModel& m) {
    RDRR_ASSIGN_OR_RETURN(const json* merges, r_.array(model, ptr, "merges"));
    for (size_t i = 0; i < merges->size(); ++i) {
      const json& e = (*merges)[i];
      const std::string eptr = child(child(ptr, "merges"), i);
      std::string a;
      std::string b;
      if (e.is_string()) {
        const std::string& s = e.get_ref<const std::string&>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
          return r_.error(eptr, "expected \"left right\", got " + rdrr::json_brief(e));
        }
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        a = e[0].get<std::string>();
        b = e[1].get<std::string>();
      } else {
        return r_.error(eptr, "expected a string or a pair of strings, got " + rdrr::json_brief(e));
      }
      const auto ia = m.vocab.find(a);
      const auto ib = m.vocab.find(b);
      const auto iab = m.vocab.find(a + b);
      if (ia == m.vocab.end() || ib == m.vocab.end() || iab == m.vocab.end()) {
        return r_.error(eptr, "merge '" + a + "' + '" + b + "': a part or the result is not in /model/vocab");
      }
      const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) | static_cast<uint32_t>(ib->second);
      m.merges.emplace(key, std::make_pair(static_cast<uint32_t>(i), iab->second));  // first (lowest rank) wins
    }
    return Status::Ok();
  }

  Status load_added(const json& root, Pipeline& p) {
    const json* list = find_field(root, "added_tokens");
    if (list == nullptr) return Status::Ok();
    if (!list->is_array()) return r_.error("/added_tokens", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) {
      const json& e = (*list)[i];
      const std::string ptr = child("/added_tokens", i);
      if (!e.is_object()) return r_.error(ptr, "expected an object");
      AddedToken a;
      RDRR_ASSIGN_OR_RETURN(int64_t id, r_.integer(e, ptr, "id"));
      if (id < 0 || id > 0x7FFFFFFF) return r_.error(child(ptr, "id"), "out of range: " + std::to_string(id));
      a.id = static_cast<TokenId>(id);
      RDRR_ASSIGN_OR_RETURN(a.content, r_.string(e, ptr, "content"));
      if (a.content.empty()) return r_.error(child(ptr, "content"), "empty");
      RDRR_ASSIGN_OR_RETURN(a.special, r_.boolean_or(e, ptr, "special", false));
      RDRR_ASSIGN_OR_RETURN(a.lstrip, r_.boolean_or(e, ptr, "lstrip", false));
      RDRR_ASSIGN_OR_RETURN(a.rstrip, r_.boolean_or(e, ptr, "rstrip", false));
      p.added.push_back(std::move(a));
    }
    return Status::Ok();
  }

  Status normalizer(const json& c, const std::string& ptr, Pipeline& p) {
    const std::string type = c["type"].get<std::string>();
    if (type == "Prepend") {
      RDRR_ASSIGN_OR_RETURN(std::string s, r_.string(c, ptr, "prepend"));
      p.normalizers.push_back(NormPrepend{std::move(s)});
    } else if (type == "Replace") {
      NormReplace n;
      RDRR_RETURN_IF_ERROR(pattern(c, ptr, n.literal, n.regex));
      RDRR_ASSIGN_OR_RETURN(n.content, r_.string(c, ptr, "content"));
      p.normalizers.push_back(std::move(n));
    } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
      p.normalizers.push_back(NormUnicode{type});
    } else if (type == "Strip") {
      NormStrip s;
      RDRR_ASSIGN_OR_RETURN(s.left, r_.boolean_or(c, ptr, "strip_left", false));
      RDRR_ASSIGN_OR_RETURN(s.right, r_.boolean_or(c, ptr, "strip_right", false));
      p.normalizers.push_back(s);
    } else {
      return r_.unsupported(child(ptr, "type"), "normalizer type '" + type +
                                                    "' is not supported (supported: Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD, Strip)");
    }
    return Status::Ok();
  }

  Result<SplitBehavior> behavior(const json& c, const std::string& ptr) {
    RDRR_ASSIGN_OR_RETURN(std::string b, r_.string(c, ptr, "behavior"));
    if (b == "Removed") return SplitBehavior::kRemoved;
    if (b == "Isolated") return SplitBehavior::kIsolated;
    if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
    if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
    if (b == "Contiguous") return SplitBehavior::kContiguous;
    return r_.error(child(ptr, "behavior"), "unknown split behavior '" + b + "'");
  }

  Status regex_split(const std::string& re, SplitBehavior b, bool invert, Pipeline& p) {
    RDRR_ASSIGN_OR_RETURN(Regex compiled, Regex::compile(re));
    p.pre_tokenizers.push_back(PreSplit{std::move(compiled), "", b, invert});
    return Status::Ok();
  }

  Status pre_tokenizer(const json& c, const std::string& ptr, Pipeline& p) {
    const std::string type = c["type"].get<std::string>();
    if (type == "Split") {
      PreSplit s;
      RDRR_RETURN_IF_ERROR(pattern(c, ptr, s.literal, s.regex));
      RDRR_ASSIGN_OR_RETURN(s.behavior, behavior(c, ptr));
      RDRR_ASSIGN_OR_RETURN(s.invert, r_.boolean_or(c, ptr, "invert", false));
      p.pre_tokenizers.push_back(std::move(s));
    } else if (type == "ByteLevel") {
      PreByteLevel b;
      RDRR_ASSIGN_OR_RETURN(b.add_prefix_space, r_.boolean_or(c, ptr, "add_prefix_space", true));
      RDRR_ASSIGN_OR_RETURN(bool use_regex, r_.boolean_or(c, ptr, "use_regex", true));
      if (use_regex) {
        RDRR_ASSIGN_OR_RETURN(b.regex, Regex::compile(kGpt2Pattern));
      }
      p.pre_tokenizers.push_back(std::move(b));
    } else if (type == "Metaspace") {
      PreMetaspace m;
      RDRR_ASSIGN_OR_RETURN(m.replacement, r_.string_or(c, ptr, "replacement", std::string(kMetaspace)));
      RDRR_ASSIGN_OR_RETURN(m.split, r_.boolean_or(c, ptr, "split", true));
      RDRR_ASSIGN_OR_RETURN(m.prepend, prepend_scheme(c, ptr));
      p.pre_tokenizers.push_back(std::move(m));
    } else if (type == "Digits") {
      RDRR_ASSIGN_OR_RETURN(bool individual, r_.boolean_or(c, ptr, "individual_digits", false));
      return regex_split(individual ? R"(\p{N})" : R"(\p{N}+)", SplitBehavior::kIsolated, false, p);
    } else if (type == "Whitespace") {
      return regex_split(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, true, p);
    } else if (type == "WhitespaceSplit") {
      return regex_split(R"(\s+)", SplitBehavior::kRemoved, false, p);
    } else {
      return r_.unsupported(child(ptr, "type"), "pre-tokenizer type '" + type +
                                                    "' is not supported (supported: Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit)");
    }
    return Status::Ok();
  }

  Result<PreMetaspace::Prepend> prepend_scheme(const json& c, const std::string& ptr) {
    if (find_field(c, "prepend_scheme") == nullptr) {  // tokenizers < 0.14: add_prefix_space
      RDRR_ASSIGN_OR_RETURN(bool add, r_.boolean_or(c, ptr, "add_prefix_space", true));
      return add ? PreMetaspace::Prepend::kAlways : PreMetaspace::Prepend::kNever;
    }
    RDRR_ASSIGN_OR_RETURN(std::string s, r_.string(c, ptr, "prepend_scheme"));
    if (s == "always") return PreMetaspace::Prepend::kAlways;
    if (s == "first") return PreMetaspace::Prepend::kFirst;
    if (s == "never") return PreMetaspace::Prepend::kNever;
    return r_.error(child(ptr, "prepend_scheme"), "unknown prepend scheme '" + s + "'");
  }

  Status post_processor(const json& c, const std::string& ptr, Pipeline& p) {
    const std::string type = c["type"].get<std::string>();
    if (type == "ByteLevel") return Status::Ok();  // offsets only
    if (type != "TemplateProcessing") {
      return r_.unsupported(child(ptr, "type"), "post-processor type '" + type +
                                                    "' is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
    }
    RDRR_ASSIGN_OR_RETURN(const json* single, r_.array(c, ptr, "single"));
    RDRR_ASSIGN_OR_RETURN(const json* specials, r_.object(c, ptr, "special_tokens"));
    std::vector<TemplatePiece> out;
    for (size_t i = 0; i < single->size(); ++i) {
      const json& e = (*single)[i];
      const std::string eptr = child(child(ptr, "single"), i);
      if (find_field(e, "Sequence") != nullptr) {
        out.push_back({true, {}});
        continue;
      }
      RDRR_ASSIGN_OR_RETURN(const json* st, r_.object(e, eptr, "SpecialToken"));
      RDRR_ASSIGN_OR_RETURN(std::string name, r_.string(*st, child(eptr, "SpecialToken"), "id"));
      const json* def = find_field(*specials, name);
      const std::string dptr = child(child(ptr, "special_tokens"), name);
      if (def == nullptr) return r_.error(dptr, "missing (used by " + eptr + ")");
      RDRR_ASSIGN_OR_RETURN(const json* ids, r_.array(*def, dptr, "ids"));
      TemplatePiece piece;
      for (size_t k = 0; k < ids->size(); ++k) {
        const json& idv = (*ids)[k];
        if (!idv.is_number_unsigned() || idv.get<uint64_t>() > 0x7FFFFFFF) {
          return r_.error(child(child(dptr, "ids"), k), "expected a token id, got " + rdrr::json_brief(idv));
        }
        piece.ids.push_back(static_cast<TokenId>(idv.get<uint64_t>()));
      }
      out.push_back(std::move(piece));
    }
    p.post_template = std::move(out);
    return Status::Ok();
  }

  Status decoder(const json& c, const std::string& ptr, Pipeline& p) {
    const std::string type = c["type"].get<std::string>();
    if (type == "Replace") {
      std::string literal;
      std::optional<Regex> regex;
      RDRR_RETURN_IF_ERROR(pattern(c, ptr, literal, regex));
      if (regex) return r_.unsupported(child(ptr, "pattern"), "a Regex pattern in the Replace decoder is not supported");
      RDRR_ASSIGN_OR_RETURN(std::string content, r_.string(c, ptr, "content"));
      p.decoders.push_back(DecReplace{std::move(literal), std::move(content)});
    } else if (type == "ByteFallback") {
      p.decoders.push_back(DecByteFallback{});
    } else if (type == "Fuse") {
      p.decoders.push_back(DecFuse{});
    } else if (type == "Strip") {
      DecStrip s;
      RDRR_ASSIGN_OR_RETURN(s.content, r_.string(c, ptr, "content"));
      RDRR_ASSIGN_OR_RETURN(int64_t start, r_.integer_or(c, ptr, "start", 0));
      RDRR_ASSIGN_OR_RETURN(int64_t stop, r_.integer_or(c, ptr, "stop", 0));
      if (start < 0 || stop < 0) return r_.error(ptr, "Strip start/stop must be >= 0");
      s.start = static_cast<size_t>(start);
      s.stop = static_cast<size_t>(stop);
      p.decoders.push_back(std::move(s));
    } else if (type == "ByteLevel") {
      p.decoders.push_back(DecByteLevel{});
    } else if (type == "Metaspace") {
      DecMetaspace m;
      RDRR_ASSIGN_OR_RETURN(m.replacement, r_.string_or(c, ptr, "replacement", std::string(kMetaspace)));
      RDRR_ASSIGN_OR_RETURN(PreMetaspace::Prepend scheme, prepend_scheme(c, ptr));
      m.strip_first = scheme != PreMetaspace::Prepend::kNever;
      p.decoders.push_back(std::move(m));
    } else {
      return r_.unsupported(child(ptr, "type"), "decoder type '" + type +
                                                    "' is not supported (supported: Sequence, Replace, ByteFallback, Fuse, Strip, ByteLevel, Metaspace)");
    }
    return Status::Ok();
  }

  FieldReader r_;
};

}  // namespace

Result<Pipeline> parse_hf_tokenizer_json(const json& root, const std::string& file_name) {
  return HfLoader(file_name).load(root);
}

Result<std::unique_ptr<PipelineTokenizer>> load_hf_tokenizer_json(const std::filesystem::path& file) {
  RDRR_ASSIGN_OR_RETURN(json root, read_json_file(file));
  const std::string name = file.filename().string();
  RDRR_ASSIGN_OR_RETURN(Pipeline p, parse_hf_tokenizer_json(root, name));
  return std::make_unique<PipelineTokenizer>(std::move(p), name, "bpe");
}

}  // namespace rdrr::tok
