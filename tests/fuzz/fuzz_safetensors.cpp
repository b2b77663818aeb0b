// libFuzzer target: one .safetensors file (header framing, strict JSON, entries, coverage of the data
// section), then every accepted tensor decoded to f32.
#include <cstddef>
#include <cstdint>

#include "convert/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = rdrr::fuzz::scratch_dir() / "model.safetensors";
  rdrr::fuzz::write_bytes(path, rdrr::fuzz::as_view(data, size));
  auto st = rdrr::convert::SafeTensorsFile::open(path);
  if (!st.ok()) return 0;
  for (const auto& t : st->tensors()) {
    auto values = rdrr::convert::read_as_f32(t);
    (void)values;
  }
  return 0;
}
