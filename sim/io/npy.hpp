// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the array exchange format of the CLI and
// of every report. Little-endian only: a big-endian descr is rejected rather than swapped, so a
// file is never silently reinterpreted. Host only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace exmy::io {

class OutputSet;

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

// Streaming access for large arrays (the CLI's array casts): the input is memory-mapped after its
// header is validated, and the output is written in pieces to a temporary file that is renamed
// into place only by commit(). Same header rules and errors as read_npy / write_npy.

// The header of a .npy file: dtype (canonicalised as by read_npy), shape, order, and the offset of
// the data in the file.
struct NpyHeader {
  std::string descr;
  std::vector<std::size_t> shape;
  bool fortran_order = false;
  std::size_t data_offset = 0;

  std::size_t count() const;
  std::size_t item_size() const;
};

// The one validator of .npy headers (read_npy, NpyMappedFile and the fuzz target all go through
// it; docs/SEMANTICS.md 11.0). npy_prefix_size checks the magic, the version (1.0, 2.0 or 3.0)
// and the header length (at most 1 MiB) in the first bytes[0, size) of a file and returns where
// the data starts; parse_npy_header then checks the dict (exactly the keys descr, fortran_order
// and shape, nothing after it but padding), the dtype, every shape dimension and the byte count
// (no 64-bit wrap; at most 2^63 bytes, as NumPy) against file_size, which must be exactly the
// data offset plus the data. `bytes` holds at least the header. InputError naming `path` and
// the fault otherwise; nothing is allocated from the header's numbers before they are checked.
std::size_t npy_prefix_size(const unsigned char* bytes, std::size_t size, const std::string& path);
NpyHeader parse_npy_header(const unsigned char* bytes, std::size_t size, std::uint64_t file_size,
                           const std::string& path);

// A .npy file mapped read-only. The constructor validates the header (parse_npy_header) before
// mapping; directories, devices and pipes are refused by name.
class NpyMappedFile {
 public:
  explicit NpyMappedFile(const std::string& path);
  ~NpyMappedFile();
  NpyMappedFile(const NpyMappedFile&) = delete;
  NpyMappedFile& operator=(const NpyMappedFile&) = delete;

  const NpyHeader& header() const { return header_; }
  // The first data byte (count() * item_size() bytes; nullptr for an empty array).
  const std::uint8_t* data() const { return base_ ? base_ + header_.data_offset : nullptr; }
  // Drops the pages holding data bytes [0, bytes) from memory (the mapping stays valid; they are
  // read again if touched): a reader that converts the array front to back keeps its resident
  // memory to the converted copy plus one chunk.
  void release_before(std::size_t bytes) const;

 private:
  NpyHeader header_;
  const std::uint8_t* base_ = nullptr;
  std::size_t size_ = 0;
};

// A .npy file written in pieces: the header at construction, the data by write() in order, and
// commit() renames the temporary file over `path` after checking that exactly
// count(shape) * item_size(descr) bytes were written. Destroyed without commit() (an exception
// on the way), it removes the temporary file, so no partial output is ever left; the temporary
// is staged by io::OutputSet (files.hpp), so a signal removes it too.
class NpyFileWriter {
 public:
  NpyFileWriter(const std::string& path, const std::string& descr,
                const std::vector<std::size_t>& shape, bool fortran_order = false);
  ~NpyFileWriter();
  NpyFileWriter(const NpyFileWriter&) = delete;
  NpyFileWriter& operator=(const NpyFileWriter&) = delete;

  void write(const void* bytes, std::size_t n);
  void commit();

 private:
  std::string path_, tmp_;
  std::unique_ptr<OutputSet> out_;
  std::FILE* file_ = nullptr;
  std::size_t expected_ = 0, written_ = 0;
};

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
void require_c_order(const NpyHeader& h, const std::string& what);

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
