// Kernel-ref digests: the "sha256:<hex>" that pins a kernel variant in a manifest's execution graph
// (inference.execution.kernels.<key>.digest) and in kernels/kernel-digests.json.
//
// Digest input, in order (all text UTF-8 bytes as stored, CRLF normalised to LF):
//   1. the variant's GLSL source with every line `#include "path"` replaced by the expanded text of that
//      file (recursively, textually, regardless of #if/#ifdef around it; resolved relative to the including
//      file's directory, then kernels/include/; a missing file, an include cycle or an `#include` line of
//      another form is an error). The directive line's own text is replaced; its terminating LF is kept.
//   2. "\n@@entry:" + entry
//   3. "\n@@define:" + NAME + "=" + value for each glslc define, sorted by NAME (byte order); a define
//      without a value ("-DW_Q4_K") has the empty value ("@@define:W_Q4_K=").
//   4. "\n@@spec:" + id + "=" + value (decimal) for each specialization-constant value that makes the
//      variant, sorted by id; for registry variants these are the registry defaults (registry.cpp).
// An edit to a shared include therefore changes the digest of every kernel that includes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "kernels/registry.h"
#include "quant/status.h"

namespace rdrr::kernels {

struct KernelVariantSource {
  std::string name;                            // registry name, e.g. "gemv_q4_k" (messages only)
  std::string file;                            // relative to kernels_dir, e.g. "gemv.comp"
  std::string entry;                           // entry point, e.g. "main"
  std::map<std::string, std::string> defines;  // NAME -> value ("" when given without a value)
  std::map<uint32_t, uint32_t> spec;           // specialization constant id -> value
};

struct KernelDigest {
  std::string digest;  // "sha256:<64 lowercase hex>"
  // Every file read (the variant's source and each include), relative to kernels_dir with '/' separators,
  // -> "sha256:<hex>" of its LF-normalised text. Lets `rdrr-digests check` say which file changed.
  std::map<std::string, std::string> sources;
};

// CRLF -> LF (a lone CR is kept).
std::string normalize_line_endings(std::string_view text);

// The digest of one variant. Errors: kNotFound (source or include missing, naming the including file and
// line), kInvalidArgument (include cycle, malformed #include line, empty entry), kIo (unreadable file).
Result<KernelDigest> kernel_digest(const KernelVariantSource& variant, const std::filesystem::path& kernels_dir);

// The variant a registry entry describes: its file, entry, defines (parsed from the space-separated
// "A B=1" string; kInvalidArgument on an empty name or a duplicate) and default spec constant values.
Result<KernelVariantSource> variant_from_registry(const KernelInfo& info);

}  // namespace rdrr::kernels
