#pragma once
// The API boundary's net: glass reports failures as Result errors, but the standard library throws
// (bad_alloc when a hostile size gets past a check, length_error, system_error from threads and
// the filesystem, nlohmann's type errors). An exception escaping a public function would reach
// std::terminate in a caller that does not expect one (the C API, a server thread), so the public
// entry points (load_llm, new_session, eval, generate) end in a function-try-block whose handler
// returns error_from_exception(...), and guarded() does the same for a callable.
#include <fmt/format.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "glass/result.h"

namespace glass {

// The error an exception becomes, its message "<what>[: <subject>]: ...": bad_alloc ->
// CapacityExceeded "out of memory", length_error -> CapacityExceeded, system_error -> Io, anything
// else -> Internal with its what(). Never throws: when even the message cannot be built, the error
// is CapacityExceeded with "out of memory".
inline Error error_from_exception(std::string_view what, std::string_view subject,
                                  std::exception_ptr e) noexcept {
  try {
    const std::string head = subject.empty() ? std::string(what) : fmt::format("{}: {}", what, subject);
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      return make_error(ErrorCode::CapacityExceeded, head + ": out of memory");
    } catch (const std::length_error& x) {
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("{}: a size is too large: {}", head, x.what()));
    } catch (const std::system_error& x) {
      return make_error(ErrorCode::Io, fmt::format("{}: {}", head, x.what()));
    } catch (const std::exception& x) {
      return make_error(ErrorCode::Internal, fmt::format("{}: unexpected exception: {}", head, x.what()));
    } catch (...) {
      return make_error(ErrorCode::Internal, head + ": unexpected exception");
    }
  } catch (...) {
    return Error{ErrorCode::CapacityExceeded, "out of memory"};  // a literal of SSO size: no allocation
  }
}

inline Error error_from_exception(std::string_view what, std::exception_ptr e) noexcept {
  return error_from_exception(what, {}, std::move(e));
}

// f() returns a Result<T> or Status; an exception it throws becomes that result's error.
template <class F>
auto guarded(std::string_view what, F&& f) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return error_from_exception(what, std::current_exception());
  }
}

}  // namespace glass
