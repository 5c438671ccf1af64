#include "support/process_memory.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>

namespace glass::test {
namespace {

// The summed Rss of the mappings whose smaps header line ("lo-hi perms offset dev inode [path]",
// addresses in hex) `counts(lo, hi, line)` accepts; nullopt when smaps cannot be read.
template <class Counts>
std::optional<uint64_t> resident_bytes_where(const Counts& counts) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return std::nullopt;
  uint64_t total = 0;
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
      inside = counts(lo, hi, line);
      continue;
    }
    uint64_t kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %" SCNu64 " kB", &kb) == 1) total += kb * 1024;
  }
  return total;
}

}  // namespace

std::optional<uint64_t> resident_bytes_of_mapping(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool found = false;
  const auto rss = resident_bytes_where([&](uintptr_t lo, uintptr_t hi, const std::string&) {
    const bool here = at >= lo && at < hi;
    found = found || here;
    return here;
  });
  return found ? rss : std::nullopt;
}

std::optional<uint64_t> resident_bytes_of_file(const std::string& path) {
  const std::string suffix = " " + path;
  return resident_bytes_where(
      [&](uintptr_t, uintptr_t, const std::string& line) { return line.ends_with(suffix); });
}

}  // namespace glass::test
