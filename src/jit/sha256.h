// SHA-256 (FIPS 180-4), used to key the disk cache and to checksum the
// shared objects stored in it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace plait::jit {

// An incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The 32-byte digest. The hasher must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  // The digest as 64 lowercase hex digits.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The hex SHA-256 of `text`.
std::string sha256_hex(std::string_view text);

// The hex SHA-256 of the file at `path`; throws InternalError when it cannot
// be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace plait::jit
