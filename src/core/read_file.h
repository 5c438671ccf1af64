#pragma once
// Reading a whole small file (JSON configs, tokenizers, templates) that a stranger may have made:
// the path must name a regular file, checked on the opened descriptor before any read, so a FIFO
// or a device such as /dev/zero is refused instead of blocking or filling memory; the size limit is
// enforced while reading (a file that grows after the check is cut off with an error, not read).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "glass/result.h"

namespace glass {

// Errors: Io naming `who`, the path and the errno text (missing, unreadable, not a regular file);
// CapacityExceeded when the file holds more than `max_bytes`.
Result<std::string> read_file_bounded(const std::filesystem::path& path, uint64_t max_bytes,
                                      std::string_view who);

// The limit for JSON and template files: the largest real tokenizer.json files are ~35 MB.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{256} << 20;

}  // namespace glass
