#pragma once
// Writing an output file so that neither a failure nor a hostile directory can hurt what is there:
// the bytes go to a new temporary file beside the target, created exclusively (O_CREAT | O_EXCL |
// O_NOFOLLOW) under a random name, so a symlink or file planted under a predictable name is never
// written through or reused; commit() flushes it and renames it over the target only once it is
// complete (rename replaces a symlink at the target, never its destination); destroyed without a
// successful commit (every error path) the temporary file is removed. Writes are buffered.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"

namespace glass::formats {

class OutputFile {
 public:
  // `who` prefixes messages ("gguf writer"). Errors: Io naming the target and the errno text (the
  // directory is missing or not writable, the target is a directory).
  static Result<OutputFile> create(const std::filesystem::path& target, std::string_view who);

  Status write(const void* data, size_t n);
  // Flushes, syncs and closes the temporary file and renames it over the target.
  Status commit();

  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  uint64_t bytes_written() const { return written_; }

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

 private:
  OutputFile() = default;
  Status flush();
  Error io_error(std::string_view what, int err) const;
  void discard();  // closes and removes the temporary file

  std::filesystem::path target_, temp_;
  std::string who_;
  int fd_ = -1;
  std::vector<uint8_t> buffer_;
  uint64_t written_ = 0;
};

}  // namespace glass::formats
