#pragma once
// --log-disable: the switch for informational output on stderr (info lines, progress bars).

namespace glass::cli {

void set_log_disabled(bool off);
bool log_enabled();

}  // namespace glass::cli
