// manifest.json <-> Manifest. rdrr/SPEC.md "Manifest JSON" is the normative schema.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr {

// Parses manifest JSON (syntax and schema only; call validate_manifest() before trusting the result).
// Errors, messages prefixed with `source_name` and the JSON Pointer of the offending value:
//   kParse      malformed JSON, invalid UTF-8, BOM, duplicate key at any depth, text over kMaxManifestBytes
//   kNonFinite  a number that overflows a double
//   kSchema     version other than 1, missing required field, unknown field (at any level), wrong JSON
//               type, negative or fractional number where an integer is required, integer above 2^53,
//               unknown enum value (dtype, layout, role, family, ...)
// Tensor order: the returned tensors are in JSON order, which serialize_manifest() makes name order.
Result<Manifest> parse_manifest(std::string_view json_text, std::string_view source_name);

// Canonical JSON: object keys sorted bytewise at every level (tensors thus by name), 2-space indent,
// "\n" at the end, optional fields absent when unset, numbers in shortest round-trip form. The same
// Manifest always gives the same bytes, and parse_manifest(serialize_manifest(m)) == m for a
// canonicalize()d m. Expects a manifest that passes validate_manifest(); invalid UTF-8 in strings is
// replaced by U+FFFD rather than thrown.
std::string serialize_manifest(const Manifest& m);

// Reads <pack_dir>/manifest.json, parses it and runs validate_manifest(). kNotFound when the file is
// missing, kIo when it cannot be read, then the codes above and validate_manifest()'s.
Result<Manifest> read_manifest_file(const std::filesystem::path& pack_dir);

}  // namespace rdrr
