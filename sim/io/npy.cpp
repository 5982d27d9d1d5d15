#include "sim/io/npy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>

#include "sim/common/error.hpp"

namespace exmy::io {

namespace {

// The magic string "\x93NUMPY" opens every .npy file (NEP 1).
constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(path + ": " + what);
}

// Bytes per element from a descr such as "<f4" or "|u1"; 0 if not a plain numeric dtype.
std::size_t descr_item_size(const std::string& d) {
  if (d.size() < 3) return 0;
  if (d[0] != '<' && d[0] != '|' && d[0] != '>' && d[0] != '=') return 0;
  if (d[1] != 'f' && d[1] != 'u' && d[1] != 'i' && d[1] != 'b') return 0;
  std::size_t n = 0;
  for (std::size_t i = 2; i < d.size(); ++i) {
    if (d[i] < '0' || d[i] > '9') return 0;
    n = n * 10 + static_cast<std::size_t>(d[i] - '0');
  }
  return n;
}

// Value text of `key` in the header dict, e.g. 'descr': '<f4' -> "'<f4'".
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::string k = "'" + key + "'";
  const std::size_t at = header.find(k);
  if (at == std::string::npos) fail(path, "malformed .npy header: no '" + key + "' key");
  std::size_t p = header.find(':', at + k.size());
  if (p == std::string::npos) fail(path, "malformed .npy header near '" + key + "'");
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  std::size_t end = p;
  if (p < header.size() && header[p] == '(') {
    end = header.find(')', p);
    if (end == std::string::npos) fail(path, "malformed .npy header: unterminated shape");
    ++end;
  } else if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
    end = header.find(header[p], p + 1);
    if (end == std::string::npos) fail(path, "malformed .npy header: unterminated string");
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return header.substr(p, end - p);
}

std::vector<std::size_t> parse_shape(const std::string& text, const std::string& path) {
  std::vector<std::size_t> shape;
  std::size_t i = 1;  // after '('
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size() || text[i] == ')') break;
    std::size_t v = 0;
    std::size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + static_cast<std::size_t>(text[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0 || digits > 18) fail(path, "malformed .npy header: bad shape " + text);
    shape.push_back(v);
  }
  return shape;
}

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

// The header of the .npy bytes [0, size) of `path`, validated, with the data size checked.
NpyHeader parse_header(const unsigned char* bytes, std::size_t size, const std::string& path) {
  if (size < kMagicLen + 4 || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    fail(path, "not a .npy file (missing \\x93NUMPY magic)");
  }
  const int major = bytes[6];
  std::size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = read_le(&bytes[8], 2);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(path, "truncated .npy header");
    header_len = read_le(&bytes[8], 4);
    header_at = 12;
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (size < header_at + header_len) fail(path, "truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(bytes) + header_at, header_len);
  if (header.find('{') == std::string::npos || header.find('}') == std::string::npos) {
    fail(path, "malformed .npy header (expected a dict)");
  }
  NpyHeader h;
  std::string descr = dict_value(header, "descr", path);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"')) {
    fail(path, "unsupported dtype " + descr + " (expected a plain numeric dtype such as '<f4')");
  }
  h.descr = descr.substr(1, descr.size() - 2);
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
  const std::string fo = dict_value(header, "fortran_order", path);
  if (fo == "True") {
    h.fortran_order = true;
  } else if (fo == "False") {
    h.fortran_order = false;
  } else {
    fail(path, "malformed .npy header: fortran_order is " + fo);
  }
  const std::string shape = dict_value(header, "shape", path);
  if (shape.empty() || shape[0] != '(') fail(path, "malformed .npy header: shape is " + shape);
  h.shape = parse_shape(shape, path);
  h.data_offset = header_at + header_len;
  std::size_t elems = 1;
  for (std::size_t d : h.shape) {
    if (d != 0 && elems > SIZE_MAX / d / h.item_size()) {
      fail(path, "malformed .npy header: shape " + shape + " is too large");
    }
    elems *= d;
  }
  const std::size_t need = h.count() * h.item_size();
  const std::size_t have = size - h.data_offset;
  if (have < need) {
    fail(path, "truncated .npy data: expected " + std::to_string(need) + " bytes, found " +
                   std::to_string(have));
  }
  return h;
}

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

NpyMappedFile::NpyMappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(path, "cannot open for reading (expected a .npy file)");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "cannot read (expected a regular .npy file)");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    // MAP_POPULATE reads the file in up front (one pass in the kernel) instead of one page
    // fault per 4 KiB while the cast runs.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail(path, "cannot map for reading (expected a .npy file)");
    }
    base_ = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);
  try {
    static const unsigned char kEmpty[1] = {0};
    header_ = parse_header(base_ ? base_ : kEmpty, size_, path);
  } catch (...) {
    if (base_) ::munmap(const_cast<std::uint8_t*>(base_), size_);
    throw;
  }
}

NpyMappedFile::~NpyMappedFile() {
  if (base_) ::munmap(const_cast<std::uint8_t*>(base_), size_);
}

NpyFileWriter::NpyFileWriter(const std::string& path, const std::string& descr,
                             const std::vector<std::size_t>& shape, bool fortran_order)
    : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {
  if (descr_item_size(descr) == 0) throw InputError(path + ": cannot write dtype '" + descr + "'");
  expected_ = shape_count(shape) * descr_item_size(descr);
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) throw InputError(path + ": cannot open for writing");
  const std::string head = header_bytes(descr, fortran_order, shape);
  if (std::fwrite(head.data(), 1, head.size(), file_) != head.size()) {
    std::fclose(file_);
    file_ = nullptr;
    std::remove(tmp_.c_str());
    throw InputError(path + ": write failed");
  }
}

NpyFileWriter::~NpyFileWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
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
  if (!ok || !closed) {
    std::remove(tmp_.c_str());
    throw InputError(path_ + ": write failed");
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    throw InputError(path_ + ": cannot rename temporary file into place");
  }
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
