#include "formats/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>

namespace glass::formats {
namespace {

// Something valid to point at for an empty file: mmap rejects length 0.
constexpr uint8_t kEmpty[1] = {0};

Error io_error(const std::string& path, const char* what, int err) {
  return make_error(ErrorCode::Io, "mmap: " + path + ": " + what + ": " + std::strerror(err));
}

// Closes the descriptor on every return path; the mapping stays valid after close.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& path) {
  std::string p = path.string();
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer before fstat could refuse it.
  FdGuard fd{::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (fd.fd < 0) return io_error(p, "open", errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return io_error(p, "fstat", errno);
  // A directory or a device would map to something that is not the file's bytes.
  if (!S_ISREG(st.st_mode)) return make_error(ErrorCode::Io, "mmap: " + p + ": not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(std::move(p), kEmpty, 0));
  if (size > std::numeric_limits<size_t>::max()) return io_error(p, "mmap", EFBIG);
  void* m = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (m == MAP_FAILED) return io_error(p, "mmap", errno);
  return std::shared_ptr<const MappedFile>(
      new MappedFile(std::move(p), static_cast<const uint8_t*>(m), size));
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::string name, std::vector<uint8_t> bytes) {
  auto* f = new MappedFile(std::move(name), kEmpty, 0);
  f->owned_ = true;
  f->owned_bytes_ = std::move(bytes);
  if (!f->owned_bytes_.empty()) f->data_ = f->owned_bytes_.data();
  f->size_ = f->owned_bytes_.size();
  return std::shared_ptr<const MappedFile>(f);
}

uint64_t MappedFile::release(const void* p, uint64_t n) const {
  if (owned_ || size_ == 0 || n == 0) return 0;
  const auto begin = reinterpret_cast<uintptr_t>(data_), end = begin + size_;
  const auto lo = reinterpret_cast<uintptr_t>(p);
  if (lo < begin || lo > end || n > end - lo) return 0;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (lo + page - 1) / page * page, last = (lo + n) / page * page;
  if (first >= last) return 0;
  // MADV_DONTNEED on a read-only private file mapping unmaps the pages; nothing was written to
  // them, so the next read maps the file's bytes again.
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

MappedFile::~MappedFile() {
  if (size_ > 0 && !owned_) ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
}

}  // namespace glass::formats
