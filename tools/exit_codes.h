// StatusCode -> process exit code, shared by every rdrr command (documented in README "Exit codes").
#pragma once

#include "quant/status.h"

namespace rdrr::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitUsage = 2;

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
