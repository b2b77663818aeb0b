// libFuzzer target: an HF checkpoint's configuration (read_hf_model_config): config.json, then optionally
// tokenizer_config.json, generation_config.json and tokenizer.json, separated by kPartSeparator. Without a
// tokenizer.json part an empty tokenizer.model stands in (the config reader only needs one to exist).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "convert/model_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir = [] {
    auto d = rdrr::fuzz::scratch_dir() / "hf";
    std::filesystem::create_directories(d);
    return d;
  }();
  constexpr std::string_view kFiles[] = {"config.json", "tokenizer_config.json", "generation_config.json",
                                         "tokenizer.json"};
  const auto parts = rdrr::fuzz::split_parts(rdrr::fuzz::as_view(data, size), 4);
  std::error_code ec;
  for (size_t i = 0; i < 4; ++i) {
    if (i < parts.size()) {
      rdrr::fuzz::write_bytes(dir / kFiles[i], parts[i]);
    } else {
      std::filesystem::remove(dir / kFiles[i], ec);
    }
  }
  if (parts.size() < 4) rdrr::fuzz::write_bytes(dir / "tokenizer.model", "");
  auto config = rdrr::convert::read_hf_model_config(dir);
  if (config.ok()) (void)rdrr::convert::check_model_config(*config);
  return 0;
}
