// Errors as values for every rdrr module. It lives in quant/ because quant/ is the bottom of the
// dependency graph (quant <- rdrr <- kernels <- runtime, rdrr <- convert); it carries no I/O.
//
//   Status s = do_thing();
//   if (!s.ok()) return s.context("shard 3");      // "shard 3: tensor x: offset end 9 > 8"
//   Result<Foo> r = load();  RDRR_ASSIGN_OR_RETURN(Foo foo, load());
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rdrr {

// Stable codes; tools map them to documented exit codes (see README "Exit codes").
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,  // bad flag or API argument
  kParse,            // malformed bytes / JSON / header
  kSchema,           // missing, unknown or wrongly typed field; unsupported version
  kValidation,       // fields parse but disagree (size vs shape, overlap, bounds, alignment)
  kNotFound,         // file / tensor / key absent
  kIo,               // read/write/open/rename failed
  kNoSpace,          // disk full or file size limit
  kAlreadyExists,    // output exists and --force not given
  kIntegrity,        // hash mismatch
  kUnsupported,      // dtype / architecture / feature not supported
  kNonFinite,        // NaN or Inf where finite values are required
  kDevice,           // Vulkan / device error
  kInternal,         // a bug
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE_NAME: message"
  std::string to_string() const;

  // Prepends a context frame: "ctx: <old message>". No-op on OK.
  Status context(std::string_view ctx) const&;
  Status context(std::string_view ctx) &&;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status error(StatusCode code, std::string message) { return {code, std::move(message)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  Result context(std::string_view ctx) && {
    if (ok()) return std::move(*this);
    return Result(std::get<Status>(v_).context(ctx));
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rdrr

#define RDRR_CONCAT_INNER(a, b) a##b
#define RDRR_CONCAT(a, b) RDRR_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when it is not OK.
#define RDRR_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::rdrr::Status rdrr_status_ = (expr);          \
    if (!rdrr_status_.ok()) return rdrr_status_;   \
  } while (0)

// RDRR_ASSIGN_OR_RETURN(auto x, make_x()); returns the error status when make_x() fails.
#define RDRR_ASSIGN_OR_RETURN(lhs, expr) \
  RDRR_ASSIGN_OR_RETURN_IMPL(RDRR_CONCAT(rdrr_result_, __LINE__), lhs, expr)
#define RDRR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
