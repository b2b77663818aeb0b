// SHA-256 through OpenSSL EVP: incremental hasher, one-shot helpers, and streamed file hashing.
//
//   Sha256 h;  h.update(chunk1);  h.update(chunk2);  std::string hex = h.finish_hex();
//   std::string hex = sha256_hex(bytes);
//   RDRR_ASSIGN_OR_RETURN(std::string hex, sha256_file(path));
//
// OpenSSL failing to allocate or initialise a digest context is treated like out-of-memory: the
// process aborts with a message (there is no meaningful recovery, and it keeps the API value-typed).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "quant/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX (kept out of this header)

namespace rdrr {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> data);
  void update(std::string_view text);
  // Returns the digest of everything since construction (or the previous finish) and starts over.
  Sha256Digest finish();
  std::string finish_hex();  // 64 lowercase hex digits

 private:
  struct CtxDeleter {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, CtxDeleter> ctx_;
};

std::string to_hex(std::span<const uint8_t> bytes);  // lowercase
std::string sha256_hex(std::span<const std::byte> data);
std::string sha256_hex(std::string_view text);
// True for exactly 64 lowercase hex digits.
bool is_sha256_hex(std::string_view text);

// Streams the file through the hasher in large reads (constant memory for any size).
// Errors: kNotFound (absent), kIo (unreadable, not a regular file), each naming the path.
Result<std::string> sha256_file(const std::filesystem::path& path);

}  // namespace rdrr
