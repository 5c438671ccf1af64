#pragma once
// Files a stranger may have made, read safely, and output files written safely: what glass itself
// uses for configs, templates, references and the files it writes (GGUF, .npy), for programs over
// the public API (the glass command) that read and write such files too.
//
//   auto text = glass::read_file_bounded(path, glass::kMaxTextFileBytes, "my-tool");
//   auto out = glass::OutputFile::create("out.bin", "my-tool");
//   if (out) { out->write(bytes.data(), bytes.size()); out->commit(); }  // each returns a Status
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"

namespace glass {

// Reading a whole small file (JSON configs, tokenizers, templates): the path must name a regular
// file, checked on the opened descriptor before any read, so a FIFO or a device such as /dev/zero is
// refused instead of blocking or filling memory; the size limit is enforced while reading (a file
// that grows after the check is cut off with an error, not read).
// Errors: Io naming `who`, the path and the errno text (missing, unreadable, not a regular file);
// CapacityExceeded when the file holds more than `max_bytes`.
Result<std::string> read_file_bounded(const std::filesystem::path& path, uint64_t max_bytes,
                                      std::string_view who);

// The limit for JSON and template files: the largest real tokenizer.json files are ~35 MB.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{256} << 20;

// A bound on JSON nesting, checked on the text before any parser sees it: a DOM built from a few MB
// of '[' is walked recursively afterwards (copies, dump, comparisons) and would overflow the stack.
// Real files nest less than 16 deep. InvalidFile "<where>: JSON nested more than <max_depth> deep at
// byte <offset>" when arrays and objects nest deeper than max_depth; brackets inside strings do not
// count. Not a validator: the parser still reports malformed text.
inline constexpr size_t kMaxJsonDepth = 128;
Status check_json_depth(std::string_view text, std::string_view where, size_t max_depth = kMaxJsonDepth);

// Writing an output file so that neither a failure nor a hostile directory can hurt what is there:
// the bytes go to a new temporary file beside the target, created exclusively (O_CREAT | O_EXCL |
// O_NOFOLLOW) under a random name, so a symlink or file planted under a predictable name is never
// written through or reused; commit() flushes it and renames it over the target only once it is
// complete (rename replaces a symlink at the target, never its destination); destroyed without a
// successful commit (every error path) the temporary file is removed. Writes are buffered.
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

// NumPy .npy files of float32, the format of the reference logits (fixtures/reference/*.npy) and of
// tensor dumps for comparison in Python. Only little-endian '<f4' in C order is read or written.
//
// Writes NPY v1.0 (through an OutputFile): magic, header dict, '\n'-terminated and space-padded so
// the data starts at a multiple of 64 bytes, then the floats. Errors: InvalidArgument for a negative
// dimension or an element count that overflows; Io naming the path and errno text.
Status write_npy_f32(const std::filesystem::path& path, const float* data, const std::vector<int64_t>& shape);

struct NpyArray {
  std::vector<int64_t> shape;  // empty for a 0-d array (one element)
  std::vector<float> data;     // C order
};

// Reads NPY v1.x/v2.x holding '<f4' in C order. The header is validated and the data size must
// match the shape exactly before anything is allocated. Errors: InvalidFile / Unsupported naming the
// path and what was expected versus found; Io for the file itself.
Result<NpyArray> read_npy_f32(const std::filesystem::path& path);
// The same from bytes in memory; `name` stands in for the path in messages.
Result<NpyArray> parse_npy_f32(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace glass
