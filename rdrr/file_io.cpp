#include "rdrr/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <random>
#include <utility>

namespace rdrr {

void ignore_sigxfsz() { std::signal(SIGXFSZ, SIG_IGN); }

StatusCode status_code_for_errno(int err) {
  switch (err) {
    case ENOSPC:
    case EFBIG:
    case EDQUOT:
      return StatusCode::kNoSpace;
    case ENOENT:
      return StatusCode::kNotFound;
    default:
      return StatusCode::kIo;
  }
}

Status errno_status(int err, std::string_view what_path, std::string_view action) {
  std::string msg;
  msg.reserve(what_path.size() + action.size() + 48);
  msg.append(what_path).append(": ").append(action).append(": ").append(std::strerror(err));
  return error(status_code_for_errno(err), std::move(msg));
}

// ---- UniqueFd ----

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd::UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

int UniqueFd::close() {
  if (fd_ < 0) return 0;
  const int fd = std::exchange(fd_, -1);
  // Linux always releases the descriptor, even when close() reports EINTR: never retry.
  return ::close(fd) == 0 ? 0 : errno;
}

// ---- helpers ----

Status write_all(int fd, std::span<const std::byte> data, std::string_view name) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      return errno_status(err, name, "write failed");
    }
    if (n == 0) return errno_status(ENOSPC, name, "write failed");  // no progress: treat as full
    data = data.subspan(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status fsync_dir(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return errno_status(err, dir.string(), "cannot open directory for fsync");
  }
  if (::fsync(fd.get()) != 0) {
    const int err = errno;
    // Some filesystems cannot fsync directories; that is not a failure of ours.
    if (err != EINVAL && err != ENOTSUP) return errno_status(err, dir.string(), "fsync failed");
  }
  const int close_err = fd.close();
  if (close_err != 0) return errno_status(close_err, dir.string(), "close failed");
  return Status::Ok();
}

std::string random_hex_suffix() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
  std::array<uint8_t, 8> bytes{};
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
  return to_hex(bytes);
}

// ---- FileSink ----

Result<FileSink> FileSink::create(const std::filesystem::path& path, std::string display_name,
                                  Options options) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    const int err = errno;
    if (err == EEXIST) return error(StatusCode::kAlreadyExists, display_name + ": cannot create: file exists");
    return errno_status(err, display_name, "cannot create");
  }
  FileSink sink;
  sink.fd_ = std::move(fd);
  sink.name_ = std::move(display_name);
  sink.options_ = options;
  sink.buffer_.resize(std::max<size_t>(options.buffer_bytes, 1));
  return sink;
}

Status FileSink::fail(Status status) {
  failed_ = status;
  return status;
}

Status FileSink::flush() {
  if (buffered_bytes_ == 0) return Status::Ok();
  Status s = write_all(fd_.get(), std::span(buffer_.data(), buffered_bytes_), name_);
  buffered_bytes_ = 0;
  if (!s.ok()) return fail(std::move(s));
  return Status::Ok();
}

Status FileSink::append(std::span<const std::byte> data) {
  if (!failed_.ok()) return failed_;
  if (!fd_.valid()) return error(StatusCode::kInternal, name_ + ": append after finish");
  if (data.empty()) return Status::Ok();
  hash_.update(data);
  size_bytes_ += data.size();
  // Large appends bypass the buffer (after flushing what is pending, to keep order).
  if (buffered_bytes_ + data.size() > buffer_.size()) {
    RDRR_RETURN_IF_ERROR(flush());
    if (data.size() >= buffer_.size()) {
      Status s = write_all(fd_.get(), data, name_);
      if (!s.ok()) return fail(std::move(s));
      return Status::Ok();
    }
  }
  std::memcpy(buffer_.data() + buffered_bytes_, data.data(), data.size());
  buffered_bytes_ += data.size();
  return Status::Ok();
}

Status FileSink::append_zeros(uint64_t count_bytes) {
  static constexpr std::array<std::byte, 4096> kZeros{};
  while (count_bytes > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(count_bytes, kZeros.size()));
    RDRR_RETURN_IF_ERROR(append(std::span(kZeros.data(), n)));
    count_bytes -= n;
  }
  return Status::Ok();
}

Result<FileDigest> FileSink::finish() {
  if (!failed_.ok()) return failed_;
  if (!fd_.valid()) return error(StatusCode::kInternal, name_ + ": finish called twice");
  RDRR_RETURN_IF_ERROR(flush());
  if (options_.sync_to_disk && ::fsync(fd_.get()) != 0) {
    const int err = errno;
    return fail(errno_status(err, name_, "fsync failed"));
  }
  const int close_err = fd_.close();
  if (close_err != 0) return fail(errno_status(close_err, name_, "close failed"));
  buffer_ = {};
  return FileDigest{size_bytes_, hash_.finish_hex()};
}

Result<FileDigest> write_new_file(const std::filesystem::path& path, std::string display_name,
                                  std::span<const std::byte> data, bool sync_to_disk) {
  FileSink::Options options;
  options.buffer_bytes = 1;  // the single append goes straight to write()
  options.sync_to_disk = sync_to_disk;
  RDRR_ASSIGN_OR_RETURN(FileSink sink, FileSink::create(path, std::move(display_name), options));
  RDRR_RETURN_IF_ERROR(sink.append(data));
  return sink.finish();
}

}  // namespace rdrr
