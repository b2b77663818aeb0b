// libFuzzer target: manifest.json (strict JSON, schema) and validate_manifest. An accepted manifest must
// survive the canonical round trip: serialize, parse, validate and serialize again to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rdrr/manifest_json.h"
#include "rdrr/validate.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_manifest: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = rdrr::parse_manifest(rdrr::fuzz::as_view(data, size), "manifest.json");
  if (!m.ok()) return 0;
  if (!rdrr::validate_manifest(*m).ok()) return 0;
  (void)rdrr::listed_files(*m);
  const std::string text = rdrr::serialize_manifest(*m);
  auto again = rdrr::parse_manifest(text, "serialized");
  if (!again.ok()) fail("a valid manifest's serialization does not parse", again.status().to_string());
  const rdrr::Status valid = rdrr::validate_manifest(*again);
  if (!valid.ok()) fail("a valid manifest's serialization does not validate", valid.to_string());
  if (rdrr::serialize_manifest(*again) != text) fail("serialization is not stable", text);
  return 0;
}
