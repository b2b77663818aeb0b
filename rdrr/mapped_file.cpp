#include "rdrr/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
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

Status pread_all(int fd, uint64_t offset, std::span<std::byte> out, const std::string& path) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n == 0 ? "end of file (the file shrank after it was opened)" : std::strerror(errno);
      return error(StatusCode::kIo, path + ": read of " + std::to_string(out.size()) + " bytes at offset " +
                                        std::to_string(offset) + " failed: " + why);
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Every live mapping by its first byte: end, file descriptor and path (copy_mapped_bytes finds a span's file).
struct Mapping {
  uintptr_t end = 0;
  int fd = -1;
  std::string path;
};

class MappingRegistry {
 public:
  void add(const void* data, uint64_t size, int fd, std::string path) {
    const std::unique_lock lock(mu_);
    const auto b = reinterpret_cast<uintptr_t>(data);
    by_begin_[b] = {b + size, fd, std::move(path)};
  }
  // Waits for reads in flight from this mapping (they hold the shared lock), so its descriptor can be closed.
  void remove(const void* data) {
    const std::unique_lock lock(mu_);
    by_begin_.erase(reinterpret_cast<uintptr_t>(data));
  }
  // Reads [p, p + out.size()) from the file of the mapping holding it; false when no live mapping holds it.
  bool read(const std::byte* p, std::span<std::byte> out, Status* st) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    const std::shared_lock lock(mu_);
    auto it = by_begin_.upper_bound(a);
    if (it == by_begin_.begin()) return false;
    --it;
    if (a + out.size() > it->second.end) return false;
    *st = pread_all(it->second.fd, a - it->first, out, it->second.path);
    return true;
  }

 private:
  mutable std::shared_mutex mu_;
  std::map<uintptr_t, Mapping> by_begin_;
};

MappingRegistry& registry() {
  static MappingRegistry* r = new MappingRegistry();  // never destroyed: mappings may outlive static destructors
  return *r;
}

// Mapped files keep their descriptors open (one per pack shard): the soft limit on open files is raised to the
// hard one once, so a pack of a thousand shards opens under the usual soft limit of 1024.
void raise_open_file_limit() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct rlimit rl {};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
  });
}

}  // namespace

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

void MappedFile::reset() {
  if (data_ != nullptr) {
    registry().remove(data_);
    munmap(data_, size_bytes_);
  }
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_bytes_ = 0;
  fd_ = -1;
}

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  raise_open_file_limit();
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
    file.fd_ = fd;
    registry().add(p, file.size_bytes_, fd, path.string());
    return file;
  }
  ::close(fd);
  return file;
}

Status MappedFile::read(uint64_t offset_bytes, std::span<std::byte> out) const {
  if (offset_bytes > size_bytes_ || out.size() > size_bytes_ - offset_bytes) {
    return error(StatusCode::kInvalidArgument, path_.string() + ": read of " + std::to_string(out.size()) +
                                                   " bytes at offset " + std::to_string(offset_bytes) + " beyond its " +
                                                   std::to_string(size_bytes_) + " bytes");
  }
  if (out.empty()) return Status::Ok();
  return pread_all(fd_, offset_bytes, out, path_.string());
}

Status copy_mapped_bytes(std::span<const std::byte> src, std::span<std::byte> dst) {
  if (src.size() != dst.size()) {
    return error(StatusCode::kInvalidArgument, "copy_mapped_bytes: " + std::to_string(src.size()) + " bytes into " +
                                                   std::to_string(dst.size()));
  }
  if (src.empty()) return Status::Ok();
  Status st = Status::Ok();
  if (src.size() < kFileReadMinBytes || !registry().read(src.data(), dst, &st)) {
    std::memcpy(dst.data(), src.data(), src.size());
  }
  return st;
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
