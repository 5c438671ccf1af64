#pragma once
// What this process holds in memory, read from /proc/self/smaps (Linux): for tests that a mapping's
// pages were dropped or kept.
#include <cstdint>
#include <optional>
#include <string>

namespace glass::test {

// The resident bytes (smaps "Rss") of the mapping that contains p; nullopt when no mapping does or
// /proc/self/smaps cannot be read.
std::optional<uint64_t> resident_bytes_of_mapping(const void* p);
// The resident bytes of every mapping of the file at `path` (as smaps names it); 0 when none.
std::optional<uint64_t> resident_bytes_of_file(const std::string& path);

}  // namespace glass::test
