#include "formats/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace glass {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;
constexpr int kNameAttempts = 64;

// A name no other writer predicts: the target's name, the process id and random bits.
std::filesystem::path temp_name(const std::filesystem::path& target) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  // At most 128 bytes of the target's name, so the temporary name stays under NAME_MAX (255).
  const std::string base = target.filename().string().substr(0, 128);
  std::string name = fmt::format(".{}.{}.{:016x}.tmp", base, ::getpid(), static_cast<uint64_t>(rng()));
  return target.parent_path() / name;
}

}  // namespace

Error OutputFile::io_error(std::string_view what, int err) const {
  return make_error(ErrorCode::Io,
                    fmt::format("{}: {}: {}: {}", who_, target_.string(), what, std::strerror(err)));
}

Result<OutputFile> OutputFile::create(const std::filesystem::path& target, std::string_view who) {
  OutputFile f;
  f.target_ = target;
  f.who_ = std::string(who);
  if (target.filename().empty())
    return make_error(ErrorCode::Io, fmt::format("{}: '{}' names no file", who, target.string()));
  struct stat st {};
  // Checked before writing anything, so a directory given as the output fails fast (rename would
  // refuse it only after the whole file was written).
  if (::lstat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return make_error(ErrorCode::Io, fmt::format("{}: {}: is a directory", who, target.string()));
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    f.temp_ = temp_name(target);
    // Mode 0666 less the umask, as fopen creates files.
    f.fd_ = ::open(f.temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (f.fd_ >= 0) break;
    if (errno != EEXIST) return f.io_error(fmt::format("cannot create {}", f.temp_.string()), errno);
  }
  if (f.fd_ < 0) return f.io_error("cannot find an unused temporary name", EEXIST);
  f.buffer_.reserve(kBufferBytes);
  return f;
}

Status OutputFile::flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("write failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return {};
}

Status OutputFile::write(const void* data, size_t n) {
  if (fd_ < 0)
    return make_error(ErrorCode::Internal, fmt::format("{}: {}: write after close", who_, target_.string()));
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const size_t take = std::min(n, kBufferBytes - buffer_.size());
    buffer_.insert(buffer_.end(), p, p + take);
    p += take;
    n -= take;
    written_ += take;
    if (buffer_.size() == kBufferBytes)
      if (Status s = flush(); !s.ok()) return s;
  }
  return {};
}

Status OutputFile::commit() {
  if (fd_ < 0)
    return make_error(ErrorCode::Internal, fmt::format("{}: {}: committed twice", who_, target_.string()));
  if (Status s = flush(); !s.ok()) return s;
  // The data is on disk before the name points at it: a crash leaves the old file or the new one.
  if (::fsync(fd_) != 0) return io_error("fsync failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    return io_error("close failed", err);
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    return io_error(fmt::format("cannot rename {} over it", temp_.string()), err);
  }
  temp_.clear();
  return {};
}

void OutputFile::discard() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_.c_str());
  }
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : target_(std::move(other.target_)),
      temp_(std::move(other.temp_)),
      who_(std::move(other.who_)),
      fd_(other.fd_),
      buffer_(std::move(other.buffer_)),
      written_(other.written_) {
  other.fd_ = -1;
}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    temp_ = std::move(other.temp_);
    who_ = std::move(other.who_);
    fd_ = other.fd_;
    buffer_ = std::move(other.buffer_);
    written_ = other.written_;
    other.fd_ = -1;
  }
  return *this;
}

OutputFile::~OutputFile() { discard(); }

}  // namespace glass
