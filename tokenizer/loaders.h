// Internal to tokenizer/: one loader per tokenizer file kind (load_tokenizer picks).
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

#include "quant/status.h"
#include "rdrr/manifest.h"
#include "tokenizer/json_util.h"
#include "tokenizer/pipeline.h"

namespace rdrr::tok {

// The GPT-2 byte-level split (ByteLevel pre-tokenizer with use_regex, GGUF pre "gpt2").
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// tokenizer.json (hf_json.cpp). BOS/EOS ids are not set (load_tokenizer does that).
Result<std::unique_ptr<PipelineTokenizer>> load_hf_tokenizer_json(const std::filesystem::path& file);
Result<Pipeline> parse_hf_tokenizer_json(const json& root, const std::string& file_name);

// tokenizer.gguf.json (gguf_vocab.cpp), with BOS/EOS ids and insertion from its metadata, overridden by
// `info` where given.
Result<std::unique_ptr<PipelineTokenizer>> load_gguf_tokenizer_json(const std::filesystem::path& file,
                                                                    const TokenizerInfo* info);

// tokenizer.model through libsentencepiece (spm.cpp).
Result<std::unique_ptr<Tokenizer>> load_sentencepiece(const std::filesystem::path& file, const TokenizerInfo* info);

}  // namespace rdrr::tok
