// libFuzzer target: model.safetensors.index.json of a sharded checkpoint. The two shards are fixed (made once
// per process); the input is the index naming them (weight_map, metadata, file names, coverage rules).
#include <cstddef>
#include <cstdint>
#include <string>

#include "convert/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::string shard(const std::string& header_json, size_t data_bytes) {
  std::string out(8, '\0');
  uint64_t n = header_json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header_json + std::string(data_bytes, '\0');
}

const std::filesystem::path& model_dir() {
  static const std::filesystem::path dir = [] {
    const auto d = rdrr::fuzz::scratch_dir() / "sharded";
    std::filesystem::create_directories(d);
    rdrr::fuzz::write_bytes(d / "model-00001-of-00002.safetensors",
                            shard(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("b":{"dtype":"F16","shape":[2,2],"data_offsets":[8,16]}})",
                                  16));
    rdrr::fuzz::write_bytes(d / "model-00002-of-00002.safetensors",
                            shard(R"({"__metadata__":{"format":"pt"},)"
                                  R"("c":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})",
                                  8));
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = model_dir();
  rdrr::fuzz::write_bytes(dir / "model.safetensors.index.json", rdrr::fuzz::as_view(data, size));
  auto model = rdrr::convert::SafeTensorsModel::open(dir);
  if (model.ok()) {
    for (const auto& t : model->tensors()) (void)model->shard_of(t.name);
  }
  return 0;
}
