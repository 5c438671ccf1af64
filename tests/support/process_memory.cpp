#include "support/process_memory.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>

namespace glass::test {

std::optional<uint64_t> resident_bytes_of_mapping(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    // A mapping's header line: "lo-hi perms offset dev inode [path]", addresses in hex.
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
      inside = at >= lo && at < hi;
      continue;
    }
    uint64_t kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %" SCNu64 " kB", &kb) == 1) return kb * 1024;
  }
  return std::nullopt;
}

std::optional<uint64_t> resident_bytes_of_file(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return std::nullopt;
  uint64_t total = 0;
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
      inside = line.size() > path.size() && line.ends_with(" " + path);
      continue;
    }
    uint64_t kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %" SCNu64 " kB", &kb) == 1) total += kb * 1024;
  }
  return total;
}

}  // namespace glass::test
