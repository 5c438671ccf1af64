#include "core/read_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/huge_pages.h"

namespace glass {
namespace {

Error io_error(std::string_view who, const std::string& path, std::string_view what, int err) {
  return make_error(ErrorCode::Io, fmt::format("{}: {}: {}: {}", who, path, what, std::strerror(err)));
}

}  // namespace

Result<std::string> read_file_bounded(const std::filesystem::path& path, uint64_t max_bytes,
                                      std::string_view who) {
  const std::string p = path.string();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before fstat can
  // tell it is not a file. It changes nothing for a regular file's reads.
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return io_error(who, p, "cannot open", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(who, p, "fstat", errno);
  if (!S_ISREG(st.st_mode))
    return make_error(ErrorCode::Io, fmt::format("{}: {}: not a regular file", who, p));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("{}: {} is {} bytes, more than the {} bytes glass reads from such a file",
                                  who, p, size, max_bytes));
  std::string out;
  out.reserve(static_cast<size_t>(size));
  advise_huge_pages(out.data(), static_cast<size_t>(size));
  out.resize(static_cast<size_t>(size));
  uint64_t got = 0;
  // Read to the size fstat gave, then probe one byte more: a file that grew is refused rather than
  // read to an unknown length.
  while (true) {
    char probe = 0;
    char* dst = got < out.size() ? out.data() + got : &probe;
    const size_t want = got < out.size() ? out.size() - static_cast<size_t>(got) : 1;
    const ssize_t n = ::read(fd, dst, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(who, p, "read", errno);
    }
    if (n == 0) break;
    if (got >= out.size())
      return make_error(ErrorCode::Io, fmt::format("{}: {}: the file grew while it was read", who, p));
    got += static_cast<uint64_t>(n);
  }
  out.resize(static_cast<size_t>(got));  // a file that shrank: what is there
  return out;
}

}  // namespace glass
