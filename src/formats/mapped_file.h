#pragma once
// A read-only memory mapping of a whole file. Model weights are used straight from the mapping
// (no copy, pages load lazily), so every reader in formats/ works on one of these. It is shared
// (shared_ptr) because tensor handles outlive the reader that found them.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "glass/result.h"

namespace glass::formats {

class MappedFile {
 public:
  // Maps `path` read-only (MAP_PRIVATE, PROT_READ). An empty file maps to size 0 with a non-null
  // data() that must not be read. Errors are ErrorCode::Io naming the path and the errno text.
  static Result<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& path);
  // Bytes built in memory (e.g. HF config.json normalised into GGUF metadata), presented like a
  // mapped file so the same readers parse them; `name` stands in for the path in messages.
  static std::shared_ptr<const MappedFile> from_bytes(std::string name, std::vector<uint8_t> bytes);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops this process's resident pages of [p, p + n) (the whole pages inside it) where that range
  // lies in this mapping of a file: for a weight the backend has copied (a repack), so a model's
  // memory holds one copy, not two. The bytes stay readable: a later read pages them back in from
  // the file (or the page cache). Returns the bytes dropped; 0 for a range outside the mapping,
  // for from_bytes (memory with no file behind it, which must not be dropped) or where the kernel
  // refuses.
  uint64_t release(const void* p, uint64_t n) const;

 private:
  MappedFile(std::string path, const uint8_t* data, uint64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  uint64_t size_;
  bool owned_ = false;  // from_bytes: data_ is owned_bytes_, nothing to unmap
  std::vector<uint8_t> owned_bytes_;
};

}  // namespace glass::formats
