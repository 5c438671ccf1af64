#pragma once
// glass's one error mechanism: functions that touch input return Result<T>, holding either a
// value or an Error{code, message}. Messages name module, subject, expected versus got, e.g.
// "gguf: tensor 'blk.3.attn_q.weight': data ends at 9437184, file has 4096 bytes".
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace glass {

enum class ErrorCode { InvalidFile, InvalidArgument, Unsupported, CapacityExceeded, Io, Cancelled, Internal };

const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

inline Error make_error(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

// Programmer invariants only (never bad input): prints and aborts.
[[noreturn]] void check_failed(const char* expr, const char* file, int line);

}  // namespace glass

#define GLASS_CHECK(cond)                                          \
  do {                                                             \
    if (!(cond)) ::glass::check_failed(#cond, __FILE__, __LINE__); \
  } while (0)
