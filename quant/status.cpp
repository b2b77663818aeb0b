#include "quant/status.h"

namespace rdrr {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kParse: return "PARSE";
    case StatusCode::kSchema: return "SCHEMA";
    case StatusCode::kValidation: return "VALIDATION";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kIo: return "IO";
    case StatusCode::kNoSpace: return "NO_SPACE";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kIntegrity: return "INTEGRITY";
    case StatusCode::kUnsupported: return "UNSUPPORTED";
    case StatusCode::kNonFinite: return "NON_FINITE";
    case StatusCode::kDevice: return "DEVICE";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  std::string out(status_code_name(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::context(std::string_view ctx) const& {
  Status copy = *this;
  return std::move(copy).context(ctx);
}

Status Status::context(std::string_view ctx) && {
  if (ok()) return std::move(*this);
  std::string msg(ctx);
  msg += ": ";
  msg += message_;
  message_ = std::move(msg);
  return std::move(*this);
}

}  // namespace rdrr
