// make_seeds FIXTURES_DIR COMMITTED_SEEDS_DIR OUT_DIR: writes the seed corpora of the fuzz targets (OUT_DIR/<target>/...), derived
// from the bundled fixtures at run time so that no large seed is committed. tests/fuzz/seeds/ holds the few
// committed ones (tools/fuzz.sh copies both). Exits non-zero naming what it could not derive.
#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/gguf.h"
#include "convert/model_config.h"
#include "convert/safetensors.h"
#include "quant/dtype.h"
#include "tests/fuzz/fuzz_util.h"

namespace fs = std::filesystem;
using rdrr::fuzz::kPartSeparator;

namespace {

const char* const kModels[] = {"tiny-llama", "tiny-qwen2", "tiny-gemma3"};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(p.string() + ": cannot read");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void put(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  rdrr::fuzz::write_bytes(dir / name, bytes);
}

std::string u64le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// The fixture's tensors with every dimension cut to at most 2 (names, dtypes, ranks and metadata kept).
std::string small_safetensors(const fs::path& file) {
  auto st = rdrr::convert::SafeTensorsFile::open(file);
  if (!st.ok()) throw std::runtime_error(st.status().to_string());
  nlohmann::ordered_json header;
  if (!st->metadata().empty()) header["__metadata__"] = st->metadata();
  uint64_t offset = 0;
  for (const auto& t : st->tensors()) {
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      shape.push_back(d < 2 ? d : 2);
      numel *= static_cast<uint64_t>(shape.back());
    }
    const uint64_t bytes = numel * static_cast<uint64_t>(rdrr::quant::block_bytes(t.dtype));
    std::string dtype(rdrr::quant::dtype_name(t.dtype));
    header[t.name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  return u64le(text.size()) + text + std::string(offset, '\x01');
}

// The fixture GGUF up to its data section with the tensor count set to 0: all metadata, no tensors.
std::string gguf_metadata_only(const fs::path& file) {
  auto g = rdrr::convert::GgufFile::open(file);
  if (!g.ok()) throw std::runtime_error(g.status().to_string());
  std::string bytes = read_file(file).substr(0, g->data_offset_bytes());
  bytes.replace(8, 8, u64le(0));
  return bytes;
}

// A tiny valid GGUF v3: two metadata entries, an F32 [4] and a Q8_0 [32] tensor.
std::string gguf_tiny() {
  std::string s = "GGUF";
  auto u32 = [&](uint32_t v) { s += u64le(v).substr(0, 4); };
  auto str = [&](const std::string& v) { s += u64le(v.size()) + v; };
  u32(3);
  s += u64le(2) + u64le(2);
  str("general.architecture"), u32(8), str("llama");
  str("general.alignment"), u32(4), u32(32);
  str("a"), u32(1), s += u64le(4), u32(0), s += u64le(0);
  str("b"), u32(1), s += u64le(32), u32(8), s += u64le(32);
  s += std::string((32 - s.size() % 32) % 32, '\0');
  return s + std::string(16, '\0') + std::string(16, '\0') + std::string(34, '\x11');
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(kPartSeparator) : "") + parts[i];
  return out;
}

// An archive of (name, bytes) members in libarchive's `format` with `filter` (ARCHIVE_FILTER_*).
std::string archive_of(const std::vector<std::pair<std::string, std::string>>& members, int format, int filter) {
  std::vector<char> buf(4 << 20);
  size_t used = 0;
  archive* a = archive_write_new();
  archive_write_set_format(a, format);
  if (filter != ARCHIVE_FILTER_NONE) archive_write_add_filter(a, filter);
  archive_write_open_memory(a, buf.data(), buf.size(), &used);
  for (const auto& [name, bytes] : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
    archive_write_header(a, e);
    archive_write_data(a, bytes.data(), bytes.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return std::string(buf.data(), used);
}

void chat_template_seeds(const fs::path& out) {
  const std::vector<std::string> conversation = {"system", "Be brief.", "user", "Hello, caf\xc3\xa9?", "assistant",
                                                 "Hi!", "user", "Bye"};
  const std::vector<std::string> templates = {
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
      "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
      "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
      "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
      "{% endif %}",
      "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- set p = messages[0]['content'] + '\\n\\n' -%}"
      "{%- set loop_messages = messages[1:] -%}{%- else -%}{%- set p = \"\" -%}{%- set loop_messages = messages -%}"
      "{%- endif -%}{%- for message in loop_messages -%}{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0)"
      " -%}{{ raise_exception('roles must alternate') }}{%- endif -%}{{ '<start_of_turn>' + (message['role'] | "
      "replace('assistant', 'model')) + '\\n' + (p if loop.first else '') + message['content'] | trim }}"
      "<end_of_turn>\n{%- endfor -%}{%- if add_generation_prompt -%}<start_of_turn>model\n{%- endif -%}",
      "{% for m in messages %}{{ m.content | tojson }}{{ m.role | upper }}{{ m['content'][1:-1] | length }}"
      "{% if m.content is string and m.content|length > 3 %}{{ loop.index }}/{{ loop.length }}{% endif %}"
      "{% endfor %}{{ eos_token if not add_generation_prompt else '' }}{% macro f(x) %}[{{ x }}]{% endmacro %}"
      "{{ f(1 + 2 * 3) }}{{ ns.x if ns is defined else 0 }}{% set ns = namespace(x=1) %}{% set ns.x = 2 %}",
  };
  int i = 0;
  for (const auto& t : templates) {
    std::vector<std::string> parts = {t};
    parts.insert(parts.end(), conversation.begin(), conversation.end());
    put(out, "template" + std::to_string(i++), join(parts));
    parts.resize(parts.size() - 1);
    put(out, "template" + std::to_string(i++), join(parts));
  }
}

void archive_seeds(const fs::path& fixtures, const fs::path& out, const std::string& manifest) {
  const fs::path hf = fixtures / "tiny-llama" / "hf";
  const std::vector<std::pair<std::string, std::string>> source = {
      {"tiny/config.json", read_file(hf / "config.json")},
      {"tiny/tokenizer_config.json", read_file(hf / "tokenizer_config.json")},
      {"tiny/generation_config.json", read_file(hf / "generation_config.json")}};
  put(out, "ustar.tar", archive_of(source, ARCHIVE_FORMAT_TAR_USTAR, ARCHIVE_FILTER_NONE));
  put(out, "pax.tar.zst", archive_of(source, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_ZSTD));
  put(out, "gnu.tar.gz", archive_of(source, ARCHIVE_FORMAT_TAR_GNUTAR, ARCHIVE_FILTER_GZIP));
  put(out, "source.zip", archive_of(source, ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE));
  if (!manifest.empty()) {
    const std::vector<std::pair<std::string, std::string>> pack = {
        {"manifest.json", manifest}, {"tokenizer_config.json", read_file(hf / "tokenizer_config.json")}};
    put(out, "pack.rdrr.tar.zst", archive_of(pack, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_ZSTD));
  }
}

void all_seeds(const fs::path& fixtures, const fs::path& out, const fs::path& committed) {
  for (const char* model : kModels) {
    const fs::path hf = fixtures / model / "hf";
    const fs::path gguf = fixtures / model / "gguf" / (std::string(model) + "-q4_k_m.gguf");
    const std::string name = model;
    put(out / "safetensors", name, small_safetensors(hf / "model.safetensors"));
    put(out / "gguf", name, gguf_metadata_only(gguf));
    put(out / "tokenizer_json", name, read_file(hf / "tokenizer.json"));
    put(out / "tokenizer_model", name, read_file(hf / "tokenizer.model"));
    auto g = rdrr::convert::GgufFile::open(gguf);
    auto tok = g.ok() ? rdrr::convert::gguf_tokenizer_json(*g) : rdrr::Result<std::string>(g.status());
    if (!tok.ok()) throw std::runtime_error(tok.status().to_string());
    put(out / "tokenizer_gguf_json", name, *tok);
    const std::vector<std::string> config = {read_file(hf / "config.json"), read_file(hf / "tokenizer_config.json"),
                                             read_file(hf / "generation_config.json")};
    put(out / "hf_config", name, join(config));
    put(out / "hf_config", name + "-config-only", config[0]);
  }
  put(out / "gguf", "tiny", gguf_tiny());
  put(out / "safetensors_index", "both-shards",
      R"({"metadata":{"total_size":24},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
      R"("b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})");
  chat_template_seeds(out / "chat_template");
  const fs::path manifest = committed / "manifest" / "tiny-llama-q4_k_m.json";
  archive_seeds(fixtures, out / "archive", fs::exists(manifest) ? read_file(manifest) : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_seeds FIXTURES_DIR COMMITTED_SEEDS_DIR OUT_DIR\n");
    return 2;
  }
  try {
    all_seeds(argv[1], argv[3], argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
