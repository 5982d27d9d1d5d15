// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the array exchange format of the CLI and
// of every report. Little-endian only: a big-endian descr is rejected rather than swapped, so a
// file is never silently reinterpreted. Host only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace exmy::io {

// A raw array: the dtype string as NumPy writes it ("<f4", "|u1", "<u2", ...), the shape, the
// memory order, and the bytes (count() * item_size() of them, little-endian).
struct NpyArray {
  std::string descr;
  std::vector<std::size_t> shape;
  bool fortran_order = false;
  std::vector<std::uint8_t> data;

  std::size_t count() const;      // product of shape (1 for a 0-d array)
  std::size_t item_size() const;  // bytes per element, from descr
};

// Reads a whole .npy file. Unreadable, truncated, malformed header, big-endian or unsupported
// dtype -> InputError naming the file and what was expected.
NpyArray read_npy(const std::string& path);

// Writes a .npy file (version 1.0 header, or 2.0 if the header needs it) atomically: the bytes go
// to a temporary file in the same directory, which is renamed over `path` only when complete.
void write_npy(const std::string& path, const NpyArray& a);

// Arrays from typed data (C order).
NpyArray make_npy(const std::vector<float>& v, std::vector<std::size_t> shape = {});
NpyArray make_npy(const std::vector<double>& v, std::vector<std::size_t> shape = {});
NpyArray make_npy(const std::vector<std::uint8_t>& v, std::vector<std::size_t> shape = {});
NpyArray make_npy(const std::vector<std::uint16_t>& v, std::vector<std::size_t> shape = {});
NpyArray make_npy(const std::vector<std::uint32_t>& v, std::vector<std::size_t> shape = {});
NpyArray make_npy(const std::vector<std::uint64_t>& v, std::vector<std::size_t> shape = {});
NpyArray make_npy(const std::vector<std::int8_t>& v, std::vector<std::size_t> shape = {});
NpyArray make_npy(const std::vector<std::int32_t>& v, std::vector<std::size_t> shape = {});
// An empty shape means 1-d of v.size().

// InputError naming `what` for a Fortran-order array of rank > 1: element order is C order
// everywhere in exmy (rank 0 and 1 are the same either way).
void require_c_order(const NpyArray& a, const std::string& what);

// Typed views. Each checks the descr (and throws InputError naming `what`, e.g. the file, and the
// dtype expected) and copies the elements out in storage order.
std::vector<float> as_f32(const NpyArray& a, const std::string& what);
std::vector<double> as_f64(const NpyArray& a, const std::string& what);
std::vector<std::uint8_t> as_u8(const NpyArray& a, const std::string& what);
std::vector<std::uint16_t> as_u16(const NpyArray& a, const std::string& what);
std::vector<std::uint32_t> as_u32(const NpyArray& a, const std::string& what);
std::vector<std::uint64_t> as_u64(const NpyArray& a, const std::string& what);
std::vector<std::int8_t> as_i8(const NpyArray& a, const std::string& what);
std::vector<std::int32_t> as_i32(const NpyArray& a, const std::string& what);

// Canonical descr strings.
inline constexpr const char* kDescrF16 = "<f2";
inline constexpr const char* kDescrF32 = "<f4";
inline constexpr const char* kDescrF64 = "<f8";
inline constexpr const char* kDescrU8 = "|u1";
inline constexpr const char* kDescrU16 = "<u2";
inline constexpr const char* kDescrU32 = "<u4";
inline constexpr const char* kDescrU64 = "<u8";
inline constexpr const char* kDescrI8 = "|i1";
inline constexpr const char* kDescrI32 = "<i4";

}  // namespace exmy::io
