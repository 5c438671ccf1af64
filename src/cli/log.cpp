#include "cli/log.h"

#include <atomic>

namespace glass::cli {
namespace {

std::atomic<bool> g_log_disabled{false};

}  // namespace

void set_log_disabled(bool off) { g_log_disabled.store(off); }
bool log_enabled() { return !g_log_disabled.load(); }

}  // namespace glass::cli
