#pragma once
// Status and Result<T>: the setup/control-plane error channel (architecture.md, convention 3).
// The hot path never throws and never returns Status per packet: it counts drop reasons instead.
#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace hpr {

enum class Code {
  kOk = 0,
  kInvalidArgument,   // bad configuration, bad file content
  kNotFound,          // file, device, route, key missing
  kUnavailable,       // device or port failed at run time
  kIoError,           // read/write failed
  kUnimplemented,
  kInternal,
};

const char* code_name(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>"
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename... Args>
Status error(Code code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

// Result<T>: a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }  // NOLINT

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

inline const char* code_name(Code c) {
  switch (c) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kNotFound: return "not found";
    case Code::kUnavailable: return "unavailable";
    case Code::kIoError: return "i/o error";
    case Code::kUnimplemented: return "unimplemented";
    case Code::kInternal: return "internal error";
  }
  return "unknown";
}

inline std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return fmt::format("{}: {}", code_name(code_), message_);
}

}  // namespace hpr

// Propagate a non-ok Status from an expression returning Status.
#define HPR_RETURN_IF_ERROR(expr)            \
  do {                                       \
    ::hpr::Status hpr_st_ = (expr);          \
    if (!hpr_st_.is_ok()) return hpr_st_;    \
  } while (0)
