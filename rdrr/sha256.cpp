#include "rdrr/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdrr/file_io.h"

namespace rdrr {
namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "rdrr: fatal: OpenSSL %s failed (out of memory?)\n", what);
  std::abort();
}

void init_ctx(EVP_MD_CTX* ctx) {
  if (EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) die("EVP_DigestInit_ex(sha256)");
}

constexpr size_t kFileReadChunkBytes = 4u << 20;

}  // namespace

void Sha256::CtxDeleter::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) die("EVP_MD_CTX_new");
  init_ctx(ctx_.get());
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::byte> data) {
  if (data.empty()) return;
  if (EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1) die("EVP_DigestUpdate");
}

void Sha256::update(std::string_view text) { update(std::as_bytes(std::span(text.data(), text.size()))); }

Sha256Digest Sha256::finish() {
  Sha256Digest digest{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &len) != 1 || len != digest.size()) {
    die("EVP_DigestFinal_ex");
  }
  init_ctx(ctx_.get());
  return digest;
}

std::string Sha256::finish_hex() {
  const Sha256Digest d = finish();
  return to_hex(d);
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
  return out;
}

std::string sha256_hex(std::span<const std::byte> data) {
  Sha256 h;
  h.update(data);
  return h.finish_hex();
}

std::string sha256_hex(std::string_view text) {
  Sha256 h;
  h.update(text);
  return h.finish_hex();
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::string> sha256_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return errno_status(err, path.string(), "cannot open");
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return errno_status(err, path.string(), "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) return error(StatusCode::kIo, path.string() + ": not a regular file");
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);

  std::vector<std::byte> buffer(kFileReadChunkBytes);
  Sha256 h;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      return errno_status(err, path.string(), "read failed");
    }
    if (n == 0) break;
    h.update(std::span(buffer.data(), static_cast<size_t>(n)));
  }
  return h.finish_hex();
}

}  // namespace rdrr
