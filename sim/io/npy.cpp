#include "sim/io/npy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>

#include "sim/common/checked_size.hpp"
#include "sim/common/error.hpp"
#include "sim/io/files.hpp"

namespace exmy::io {

namespace {

// The magic string "\x93NUMPY" opens every .npy file (NEP 1).
constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(path + ": " + what);
}

// Bytes per element of a plain numeric descr: [<|>=] then f2/f4/f8, i1..i8, u1..u8 or b1 (the
// kinds and sizes a dtype of NumPy's can have for them); 0 for anything else.
std::size_t descr_item_size(const std::string& d) {
  if (d.size() != 3) return 0;
  if (d[0] != '<' && d[0] != '|' && d[0] != '>' && d[0] != '=') return 0;
  const char kind = d[1];
  const char size = d[2];
  if (size != '1' && size != '2' && size != '4' && size != '8') return 0;
  const std::size_t n = static_cast<std::size_t>(size - '0');
  if (kind == 'f') return n >= 2 ? n : 0;
  if (kind == 'u' || kind == 'i') return n;
  if (kind == 'b') return n == 1 ? 1 : 0;
  return 0;
}

// The header dict of NEP 1, parsed strictly: a Python dict literal whose keys are exactly
// 'descr' (a string), 'fortran_order' (True or False) and 'shape' (a tuple of non-negative
// integers, a 1-tuple with its comma), each once, in any order, an optional trailing comma, and
// after the closing brace nothing but the padding (spaces) and the final newline. NumPy reads
// the dict with ast.literal_eval; this is the subset np.save writes, and every deviation is named.
class HeaderDict {
 public:
  HeaderDict(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  void parse(std::string& descr, std::string& fortran, std::vector<std::size_t>& shape,
             std::string& shape_text) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    space();
    expect('{', "a dict opening with '{'");
    space();
    while (!at('}')) {
      const std::string key = string_literal("a key");
      space();
      expect(':', "':' after '" + key + "'");
      space();
      if (key == "descr") {
        if (have_descr) bad("'descr' given twice");
        descr = string_literal("a dtype string");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_fortran) bad("'fortran_order' given twice");
        fortran = word();
        if (fortran != "True" && fortran != "False") {
          bad("fortran_order is not True or False");
        }
        have_fortran = true;
      } else if (key == "shape") {
        if (have_shape) bad("'shape' given twice");
        const std::size_t from = i_;
        shape = tuple();
        shape_text = std::string(s_.substr(from, i_ - from));
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "' (expected descr, fortran_order and shape)");
      }
      space();
      if (at(',')) {
        ++i_;
        space();
      } else if (!at('}')) {
        bad("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    ++i_;  // '}'
    for (; i_ < s_.size(); ++i_) {
      if (s_[i_] != ' ' && s_[i_] != '\n' && s_[i_] != '\t' && s_[i_] != '\r') {
        bad("trailing characters after the header dict");
      }
    }
    if (!have_descr) bad("no 'descr' key");
    if (!have_fortran) bad("no 'fortran_order' key");
    if (!have_shape) bad("no 'shape' key");
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(path_, "malformed .npy header: " + what);
  }
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  void expect(char c, const std::string& what) {
    if (!at(c)) bad("expected " + what);
    ++i_;
  }
  // '...' or "..." without escapes (no dtype or key of the three contains a quote or backslash).
  std::string string_literal(const std::string& what) {
    if (!at('\'') && !at('"')) bad("expected " + what + " in quotes");
    const char q = s_[i_++];
    const std::size_t from = i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' || s_[i_] == '\n') bad("unsupported character in a string");
      ++i_;
    }
    if (i_ >= s_.size()) bad("unterminated string");
    return std::string(s_.substr(from, i_++ - from));
  }
  std::string word() {
    const std::size_t from = i_;
    while (i_ < s_.size() &&
           ((s_[i_] >= 'A' && s_[i_] <= 'Z') || (s_[i_] >= 'a' && s_[i_] <= 'z'))) {
      ++i_;
    }
    return std::string(s_.substr(from, i_ - from));
  }
  // (), (N,), (N, M), (N, M,): each N a decimal integer that fits in 64 bits.
  std::vector<std::size_t> tuple() {
    expect('(', "the shape as a tuple '(...)'");
    std::vector<std::size_t> dims;
    space();
    bool comma_after_last = false;
    while (!at(')')) {
      if (!dims.empty() && !comma_after_last) bad("expected ',' between shape dimensions");
      if (dims.size() >= kMaxRank)
        bad("shape has more than " + std::to_string(kMaxRank) + " dimensions");
      const std::size_t from = i_;
      std::uint64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        const auto d = static_cast<std::uint64_t>(s_[i_] - '0');
        if (v > (UINT64_MAX - d) / 10) bad("shape dimension does not fit in 64 bits");
        v = v * 10 + d;
        ++i_;
      }
      if (i_ == from) bad("expected a non-negative integer shape dimension");
      dims.push_back(static_cast<std::size_t>(v));
      space();
      comma_after_last = at(',');
      if (comma_after_last) {
        ++i_;
        space();
      }
    }
    ++i_;  // ')'
    // (N) is the integer N in Python, not a tuple: NumPy refuses it too.
    if (dims.size() == 1 && !comma_after_last) bad("a 1-d shape needs its comma, as (N,)");
    return dims;
  }

  static constexpr std::size_t kMaxRank = 64;  // NumPy 2's NPY_MAXDIMS
  std::string_view s_;
  const std::string& path_;
  std::size_t i_ = 0;
};

std::uint32_t read_le(const unsigned char* p, int n) {
  std::uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::size_t NpyArray::count() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

std::size_t NpyArray::item_size() const {
  return descr_item_size(descr);
}

namespace {

// Longest header accepted: far beyond any real one (a 64-d shape of 20-digit dimensions is under
// 2 KiB), small enough that reading it first never allocates much.
constexpr std::size_t kMaxHeaderLen = std::size_t{1} << 20;

}  // namespace

std::size_t npy_prefix_size(const unsigned char* bytes, std::size_t size, const std::string& path) {
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    fail(path, "not a .npy file (missing \\x93NUMPY magic)");
  }
  const int major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(path, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (expected 1.0, 2.0 or 3.0)");
  }
  const std::size_t header_at = major == 1 ? 10 : 12;
  if (size < header_at) fail(path, "truncated .npy header");
  const std::size_t header_len = read_le(&bytes[8], major == 1 ? 2 : 4);
  if (header_len > kMaxHeaderLen) {
    fail(path, "malformed .npy header: header length " + std::to_string(header_len) + " exceeds " +
                   std::to_string(kMaxHeaderLen) + " bytes");
  }
  return header_at + header_len;
}

NpyHeader parse_npy_header(const unsigned char* bytes, std::size_t size, std::uint64_t file_size,
                           const std::string& path) {
  const std::size_t data_offset = npy_prefix_size(bytes, size, path);
  if (size < data_offset || file_size < data_offset) fail(path, "truncated .npy header");
  const std::size_t header_at = bytes[6] == 1 ? 10 : 12;
  const std::string_view header(reinterpret_cast<const char*>(bytes) + header_at,
                                data_offset - header_at);
  NpyHeader h;
  std::string fo, shape_text;
  HeaderDict(header, path).parse(h.descr, fo, h.shape, shape_text);
  if (h.descr.size() >= 1 && h.descr[0] == '>' && descr_item_size(h.descr) > 1) {
    fail(path, "big-endian dtype '" + h.descr + "' is not supported (expected little-endian)");
  }
  if (descr_item_size(h.descr) == 0) {
    fail(path,
         "unsupported dtype '" + h.descr + "' (expected a plain numeric dtype such as '<f4')");
  }
  // One-byte types carry no byte order; canonicalise '<u1' / '=u1' to NumPy's '|u1'.
  if (descr_item_size(h.descr) == 1) h.descr[0] = '|';
  if (h.descr[0] == '=') h.descr[0] = '<';  // native order: this library is little-endian only
  if (h.descr[0] == '|' && descr_item_size(h.descr) > 1) {
    fail(path, "dtype '" + h.descr + "' has no byte order (expected '<' for a multi-byte type)");
  }
  if (fo == "True") {
    h.fortran_order = true;
  } else if (fo == "False") {
    h.fortran_order = false;
  } else {
    fail(path, "malformed .npy header: fortran_order is '" + fo + "' (expected True or False)");
  }
  h.data_offset = data_offset;
  // Elements and bytes, each product checked: a shape whose product wraps (2**63 x 2 is 0 in 64
  // bits) would otherwise pass the size check below and index far outside the data. As NumPy
  // does, the product of the non-zero dimensions times the item size must fit in an int64 even
  // when a zero dimension makes the array empty, so every partial product (rows, columns) of
  // any shape that passes fits too.
  std::uint64_t bytes_nonzero = descr_item_size(h.descr);
  bool empty = false;
  for (const std::size_t d : h.shape) {
    if (d == 0) {
      empty = true;
      continue;
    }
    if (bytes_nonzero > static_cast<std::uint64_t>(INT64_MAX) / d) {
      fail(path, "malformed .npy header: shape " + shape_text + " of '" + h.descr +
                     "' is too large (more than 2^63 bytes)");
    }
    bytes_nonzero *= d;
  }
  const std::uint64_t bytes_needed = empty ? 0 : bytes_nonzero;
  const std::uint64_t have = file_size - data_offset;
  if (have < bytes_needed) {
    fail(path, "truncated .npy data: expected " + std::to_string(bytes_needed) + " bytes, found " +
                   std::to_string(have));
  }
  if (have > bytes_needed) {
    fail(path, "trailing bytes after the .npy data: expected " + std::to_string(bytes_needed) +
                   " bytes, found " + std::to_string(have));
  }
  return h;
}

namespace {

// The header bytes of a .npy file (version 1.0, or 2.0 if the dict needs it), padded so that the
// data starts on a 64-byte boundary (NEP 1).
std::string header_bytes(const std::string& descr, bool fortran_order,
                         const std::vector<std::size_t>& shape) {
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': " + (fortran_order ? "True" : "False") + ", 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  std::size_t total = prefix + dict.size() + 1;
  const std::size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  const std::size_t hlen = dict.size();
  std::string head(kMagic, kMagicLen);
  head += static_cast<char>(v2 ? 2 : 1);
  head += '\0';
  const int nlen = v2 ? 4 : 2;
  for (int i = 0; i < nlen; ++i) head += static_cast<char>((hlen >> (8 * i)) & 0xFF);
  head += dict;
  return head;
}

std::size_t shape_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

}  // namespace

std::size_t NpyHeader::count() const {
  return shape_count(shape);
}

std::size_t NpyHeader::item_size() const {
  return descr_item_size(descr);
}

// Through the mapped file: the data is copied once, from the page cache into the array (reading
// the whole file into a buffer first copied it twice).
NpyArray read_npy(const std::string& path) {
  const NpyMappedFile f(path);
  const NpyHeader& h = f.header();
  NpyArray a;
  a.descr = h.descr;
  a.shape = h.shape;
  a.fortran_order = h.fortran_order;
  const std::size_t n = h.count() * h.item_size();
  if (n > 0) a.data.assign(f.data(), f.data() + n);
  return a;
}

namespace {

// pread until n bytes or end of file; the count read.
std::size_t read_at(int fd, unsigned char* buf, std::size_t n, std::size_t offset) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, buf + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

// The header is read with pread and validated (shape, dtype, the data size against the file
// size) before the file is mapped or anything sized by it is allocated: a hostile header costs
// at most kMaxHeaderLen bytes of memory.
NpyMappedFile::NpyMappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open for reading (expected a .npy file)");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, "cannot read (expected a regular .npy file)");
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory (expected a regular .npy file)");
  if (!S_ISREG(st.st_mode)) {
    fail(path, "is not a regular file (expected a .npy file; devices and pipes are refused)");
  }
  const std::size_t file_size = static_cast<std::size_t>(st.st_size);
  unsigned char prefix[12] = {};
  const std::size_t got = read_at(fd, prefix, sizeof prefix, 0);
  const std::size_t header_end = npy_prefix_size(prefix, got, path);
  if (header_end > file_size) fail(path, "truncated .npy header");
  std::vector<unsigned char> head(header_end);
  if (read_at(fd, head.data(), header_end, 0) != header_end) fail(path, "truncated .npy header");
  header_ = parse_npy_header(head.data(), head.size(), file_size, path);
  size_ = file_size;
  if (header_.count() * header_.item_size() == 0) return;  // nothing to map
  // MAP_POPULATE reads the file in up front (one pass in the kernel) instead of one page fault
  // per 4 KiB while the cast runs.
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) fail(path, "cannot map for reading (expected a .npy file)");
  base_ = static_cast<const std::uint8_t*>(p);
}

void NpyMappedFile::release_before(std::size_t bytes) const {
  if (!base_) return;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t end = std::min(size_, header_.data_offset + bytes) / page * page;
  if (end > 0) ::madvise(const_cast<std::uint8_t*>(base_), end, MADV_DONTNEED);
}

NpyMappedFile::~NpyMappedFile() {
  if (base_) ::munmap(const_cast<std::uint8_t*>(base_), size_);
}

NpyFileWriter::NpyFileWriter(const std::string& path, const std::string& descr,
                             const std::vector<std::size_t>& shape, bool fortran_order)
    : path_(path), out_(std::make_unique<OutputSet>()) {
  if (descr_item_size(descr) == 0) throw InputError(path + ": cannot write dtype '" + descr + "'");
  expected_ = checked_bytes(shape, descr_item_size(descr), path);
  tmp_ = out_->stage(path);
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) throw InputError(path + ": cannot open for writing");
  const std::string head = header_bytes(descr, fortran_order, shape);
  if (std::fwrite(head.data(), 1, head.size(), file_) != head.size()) {
    std::fclose(file_);
    file_ = nullptr;
    throw InputError(path + ": write failed");
  }
}

NpyFileWriter::~NpyFileWriter() {
  if (file_) std::fclose(file_);  // out_ removes the temporary
}

void NpyFileWriter::write(const void* bytes, std::size_t n) {
  if (!file_) throw InputError(path_ + ": write after commit");
  if (written_ + n > expected_) {
    throw InputError(path_ + ": array data exceeds the " + std::to_string(expected_) +
                     " bytes its shape needs");
  }
  if (n > 0 && std::fwrite(bytes, 1, n, file_) != n) throw InputError(path_ + ": write failed");
  written_ += n;
}

void NpyFileWriter::commit() {
  if (!file_) throw InputError(path_ + ": commit twice");
  if (written_ != expected_) {
    throw InputError(path_ + ": array data has " + std::to_string(written_) +
                     " bytes, shape needs " + std::to_string(expected_));
  }
  const bool ok = std::fflush(file_) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) throw InputError(path_ + ": write failed");
  out_->commit();
}

void write_npy(const std::string& path, const NpyArray& a) {
  if (a.item_size() == 0) throw InputError(path + ": cannot write dtype '" + a.descr + "'");
  if (a.data.size() != a.count() * a.item_size()) {
    throw InputError(path + ": array data has " + std::to_string(a.data.size()) +
                     " bytes, shape needs " + std::to_string(a.count() * a.item_size()));
  }
  NpyFileWriter w(path, a.descr, a.shape, a.fortran_order);
  w.write(a.data.data(), a.data.size());
  w.commit();
}

namespace {

template <typename T>
NpyArray make_typed(const std::vector<T>& v, std::vector<std::size_t> shape, const char* descr) {
  NpyArray a;
  a.descr = descr;
  a.shape = shape.empty() ? std::vector<std::size_t>{v.size()} : std::move(shape);
  if (a.count() != v.size()) {
    throw InputError("make_npy: shape holds " + std::to_string(a.count()) + " elements, data has " +
                     std::to_string(v.size()));
  }
  a.data.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

template <typename T>
std::vector<T> typed(const NpyArray& a, const std::string& what, const char* descr) {
  if (a.descr != descr) {
    throw InputError(what + ": dtype '" + a.descr + "', expected '" + descr + "'");
  }
  std::vector<T> v(a.count());
  if (a.data.size() < v.size() * sizeof(T)) throw InputError(what + ": truncated array data");
  if (!v.empty()) std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace

NpyArray make_npy(const std::vector<float>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrF32);
}
NpyArray make_npy(const std::vector<double>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrF64);
}
NpyArray make_npy(const std::vector<std::uint8_t>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrU8);
}
NpyArray make_npy(const std::vector<std::uint16_t>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrU16);
}
NpyArray make_npy(const std::vector<std::uint32_t>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrU32);
}
NpyArray make_npy(const std::vector<std::uint64_t>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrU64);
}
NpyArray make_npy(const std::vector<std::int8_t>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrI8);
}
NpyArray make_npy(const std::vector<std::int32_t>& v, std::vector<std::size_t> s) {
  return make_typed(v, std::move(s), kDescrI32);
}

void require_c_order(const NpyArray& a, const std::string& what) {
  if (a.fortran_order && a.shape.size() > 1) {
    throw InputError(what + ": Fortran-order arrays are not supported (expected C order)");
  }
}

void require_c_order(const NpyHeader& h, const std::string& what) {
  if (h.fortran_order && h.shape.size() > 1) {
    throw InputError(what + ": Fortran-order arrays are not supported (expected C order)");
  }
}

std::vector<float> as_f32(const NpyArray& a, const std::string& w) {
  return typed<float>(a, w, kDescrF32);
}
std::vector<double> as_f64(const NpyArray& a, const std::string& w) {
  return typed<double>(a, w, kDescrF64);
}
std::vector<std::uint8_t> as_u8(const NpyArray& a, const std::string& w) {
  return typed<std::uint8_t>(a, w, kDescrU8);
}
std::vector<std::uint16_t> as_u16(const NpyArray& a, const std::string& w) {
  return typed<std::uint16_t>(a, w, kDescrU16);
}
std::vector<std::uint32_t> as_u32(const NpyArray& a, const std::string& w) {
  return typed<std::uint32_t>(a, w, kDescrU32);
}
std::vector<std::uint64_t> as_u64(const NpyArray& a, const std::string& w) {
  return typed<std::uint64_t>(a, w, kDescrU64);
}
std::vector<std::int8_t> as_i8(const NpyArray& a, const std::string& w) {
  return typed<std::int8_t>(a, w, kDescrI8);
}
std::vector<std::int32_t> as_i32(const NpyArray& a, const std::string& w) {
  return typed<std::int32_t>(a, w, kDescrI32);
}

}  // namespace exmy::io
