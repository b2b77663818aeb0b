// Fail-closed checks of a Manifest and of a pack directory (rdrr/SPEC.md "Validation").
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr {

// Structure and consistency of the manifest alone (no file access). The first violation wins; the
// message names the field, tensor or shard with expected vs actual. Codes:
//   kSchema     unsupported version, modelType, hashAlgorithm, tokenizer type or policy; a field that the
//               chosen RoPE scaling requires or forbids; an empty required string; bad hash/digest syntax
//   kNonFinite  a NaN or infinite number
//   kValidation every inconsistency: size vs dtype/shape/layout, bounds, overlap, alignment, spans, shard
//               index/filename/offset, totalSize, derived counts, duplicate names, unsafe file names,
//               limits, architecture and graph references.
Status validate_manifest(const Manifest& m);

// The model-parameter part of validate_manifest: architecture, inference parameters (attention, norms, RoPE,
// output; not the execution graph) and the tokenizer's token ids (not its files). Converters run it on the
// configuration they read before they write anything.
Status validate_model_parameters(const Architecture& arch, const Inference& inference, const TokenizerInfo& tokenizer);

struct ValidateOptions {
  // Files in the pack directory that the manifest does not list (and any folder but golden/) are an
  // error (kValidation) unless this is false.
  bool reject_unlisted_files = true;
  // Hash every listed file (shards, tokenizer files, goldens) with SHA-256 and compare with the manifest
  // (kIntegrity on a mismatch). Reads every byte of the pack.
  bool check_sha256 = false;
  // Called for every listed file (shards, tokenizer files, goldens) once its size matched, e.g. to check
  // its sha256 (return kIntegrity on a mismatch). Unset: sizes only.
  std::function<Status(const std::filesystem::path& file, uint64_t size_bytes, std::string_view sha256_hex)>
      verify_file;
};

// validate_manifest(m), then the directory: it exists, holds manifest.json, and every shard, tokenizer
// and golden file exists as a regular file (not a symlink) with the recorded size (and hash, with
// check_sha256). kNotFound for a missing directory or file, kValidation for a wrong size, a non-regular
// file or an unlisted file, kIntegrity for a hash mismatch, kIo when something cannot be read;
// verify_file's status as it returns it (with the file named in front).
Status validate_pack(const Manifest& m, const std::filesystem::path& pack_dir, const ValidateOptions& options = {});

// The files a pack's manifest lists beside manifest.json: shards, tokenizer files, goldens.
struct ListedFile {
  std::string name;  // relative to the pack directory
  uint64_t size_bytes;
  std::string_view sha256_hex;
  std::string what;  // "shard 3", "tokenizer file", "golden file"
};
std::vector<ListedFile> listed_files(const Manifest& m);

}  // namespace rdrr
