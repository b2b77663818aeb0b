// libFuzzer target: one GGUF file (header, metadata, tensor infos, alignment, bounds), then what the converter
// reads from an accepted one: the model config, the tokenizer metadata as JSON, tensor views.
#include <cstddef>
#include <cstdint>

#include "convert/gguf.h"
#include "convert/model_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = rdrr::fuzz::scratch_dir() / "model.gguf";
  rdrr::fuzz::write_bytes(path, rdrr::fuzz::as_view(data, size));
  auto gguf = rdrr::convert::GgufFile::open(path);
  if (!gguf.ok()) return 0;
  for (const auto& t : gguf->tensors()) {
    auto view = t.view();
    if (view.ok() && view->bytes.size() <= (1u << 16)) (void)rdrr::convert::read_as_f32(*view);
  }
  auto config = rdrr::convert::model_config_from_gguf(*gguf);
  (void)config;
  auto tok = rdrr::convert::gguf_tokenizer_json(*gguf);
  (void)tok;
  return 0;
}
