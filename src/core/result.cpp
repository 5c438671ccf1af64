#include "glass/result.h"

namespace glass {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidFile:
      return "invalid_file";
    case ErrorCode::InvalidArgument:
      return "invalid_argument";
    case ErrorCode::Unsupported:
      return "unsupported";
    case ErrorCode::CapacityExceeded:
      return "capacity_exceeded";
    case ErrorCode::Io:
      return "io";
    case ErrorCode::Cancelled:
      return "cancelled";
    case ErrorCode::Internal:
      return "internal";
  }
  return "unknown";
}

[[noreturn]] void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "glass: internal invariant failed: %s (%s:%d)\n", expr, file, line);
  std::abort();
}

}  // namespace glass
