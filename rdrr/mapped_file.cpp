#include "rdrr/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace rdrr {
namespace {

uint64_t page_size_bytes() {
  static const uint64_t kPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return kPage;
}

// Shrinks [offset, offset+len) to the whole pages it fully covers (for release) or grows it (advise).
void page_range(uint64_t offset, uint64_t len, uint64_t size, bool grow, uint64_t* begin, uint64_t* end) {
  const uint64_t page = page_size_bytes();
  uint64_t b = offset;
  uint64_t e = offset + len > size ? size : offset + len;
  if (grow) {
    b = b / page * page;
    e = (e + page - 1) / page * page;
  } else {
    b = (b + page - 1) / page * page;
    e = e == size ? (e + page - 1) / page * page : e / page * page;
  }
  *begin = b;
  *end = e;
}

}  // namespace

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

void MappedFile::reset() {
  if (data_ != nullptr) munmap(data_, size_bytes_);
  data_ = nullptr;
  size_bytes_ = 0;
}

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const StatusCode code = err == ENOENT ? StatusCode::kNotFound : StatusCode::kIo;
    return error(code, path.string() + ": cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(StatusCode::kIo, path.string() + ": not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_bytes_ = static_cast<uint64_t>(st.st_size);
  if (file.size_bytes_ > 0) {
    void* p = mmap(nullptr, file.size_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      file.size_bytes_ = 0;
      return error(StatusCode::kIo, path.string() + ": mmap failed: " + std::strerror(err));
    }
    file.data_ = p;
  }
  ::close(fd);
  return file;
}

void MappedFile::release(uint64_t offset_bytes, uint64_t length_bytes) const {
  if (data_ == nullptr || offset_bytes >= size_bytes_) return;
  uint64_t b = 0;
  uint64_t e = 0;
  page_range(offset_bytes, length_bytes, size_bytes_, false, &b, &e);
  if (e <= b) return;
  madvise(static_cast<char*>(data_) + b, e - b, MADV_DONTNEED);
}

void MappedFile::will_need(uint64_t offset_bytes, uint64_t length_bytes) const {
  if (data_ == nullptr || offset_bytes >= size_bytes_) return;
  uint64_t b = 0;
  uint64_t e = 0;
  page_range(offset_bytes, length_bytes, size_bytes_, true, &b, &e);
  madvise(static_cast<char*>(data_) + b, e - b, MADV_WILLNEED);
}

}  // namespace rdrr
