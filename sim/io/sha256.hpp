// SHA-256 (FIPS 180-4) of byte strings and files: the per-file hashes of golden corpora
// (docs/SEMANTICS.md 13.7). Host only; checked against the FIPS 180-4 example vectors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace exmy::io {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t n);
  std::array<std::uint8_t, 32> digest();  // finishes; the object must not be updated afterwards

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

// Lower-case hex digest of `data`.
std::string sha256_hex(std::string_view data);
// Lower-case hex digest of the file at `path` (InputError naming it when it cannot be read).
std::string sha256_file(const std::string& path);

}  // namespace exmy::io
