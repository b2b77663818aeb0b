// StatusCode -> process exit code, shared by every rdrr command (documented in README "Exit codes").
#pragma once

#include "quant/status.h"

namespace rdrr::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitUsage = 2;

// rdrr-verify (verify/gates.h, README "Exit codes"): the first failing gate decides; 0 when all pass.
inline constexpr int kExitVerifyInvalidPack = 20;  // gate 1 structure (or an unreadable golden index)
inline constexpr int kExitVerifyIntegrity = 21;    // gate 2 sha256 of a file
inline constexpr int kExitVerifyKernelPin = 22;    // gate 3 stale kernel digest (fix: rdrr-digests repin)
inline constexpr int kExitVerifyFidelity = 23;     // gate 5 Vulkan vs pack golden
inline constexpr int kExitVerifyQuality = 24;      // gates 6-7 vs source / external golden
inline constexpr int kExitVerifyNoDevice = 25;     // no Vulkan device (use --skip-gpu)
inline constexpr int kExitVerifyLoad = 26;         // gate 4 upload / executor creation
inline constexpr int kExitVerifyStructureOnly = 27;  // outputs not checked: no goldens (--structure-only: 0)

inline int exit_code_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kParse:
    case StatusCode::kSchema:
    case StatusCode::kValidation: return 3;
    case StatusCode::kNotFound: return 4;
    case StatusCode::kIo: return 5;
    case StatusCode::kNoSpace: return 6;
    case StatusCode::kAlreadyExists: return 7;
    case StatusCode::kIntegrity: return 8;
    case StatusCode::kUnsupported: return 9;
    case StatusCode::kNonFinite: return 10;
    case StatusCode::kDevice: return 11;
    case StatusCode::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace rdrr::tools
