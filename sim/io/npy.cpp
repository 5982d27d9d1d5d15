#include "sim/io/npy.hpp"

#include <unistd.h>

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

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open for reading (expected a .npy file)");
  const std::streamoff size = in.tellg();
  if (size < 0) fail(path, "cannot read (expected a .npy file)");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  if (!bytes.empty() &&
      !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size))) {
    fail(path, "read error (expected a .npy file)");
  }
  if (bytes.size() < kMagicLen + 4 || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0) {
    fail(path, "not a .npy file (missing \\x93NUMPY magic)");
  }
  const int major = bytes[6];
  std::size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = read_le(&bytes[8], 2);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(path, "truncated .npy header");
    header_len = read_le(&bytes[8], 4);
    header_at = 12;
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (bytes.size() < header_at + header_len) fail(path, "truncated .npy header");
  const std::string header(bytes.begin() + static_cast<std::ptrdiff_t>(header_at),
                           bytes.begin() + static_cast<std::ptrdiff_t>(header_at + header_len));
  if (header.find('{') == std::string::npos || header.find('}') == std::string::npos) {
    fail(path, "malformed .npy header (expected a dict)");
  }
  NpyArray a;
  std::string descr = dict_value(header, "descr", path);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"')) {
    fail(path, "unsupported dtype " + descr + " (expected a plain numeric dtype such as '<f4')");
  }
  a.descr = descr.substr(1, descr.size() - 2);
  if (a.descr.size() >= 1 && a.descr[0] == '>' && descr_item_size(a.descr) > 1) {
    fail(path, "big-endian dtype '" + a.descr + "' is not supported (expected little-endian)");
  }
  if (descr_item_size(a.descr) == 0) {
    fail(path,
         "unsupported dtype '" + a.descr + "' (expected a plain numeric dtype such as '<f4')");
  }
  // One-byte types carry no byte order; canonicalise '<u1' / '=u1' to NumPy's '|u1'.
  if (descr_item_size(a.descr) == 1) a.descr[0] = '|';
  if (a.descr[0] == '=') a.descr[0] = '<';  // native order: this library is little-endian only
  const std::string fo = dict_value(header, "fortran_order", path);
  if (fo == "True") {
    a.fortran_order = true;
  } else if (fo == "False") {
    a.fortran_order = false;
  } else {
    fail(path, "malformed .npy header: fortran_order is " + fo);
  }
  const std::string shape = dict_value(header, "shape", path);
  if (shape.empty() || shape[0] != '(') fail(path, "malformed .npy header: shape is " + shape);
  a.shape = parse_shape(shape, path);
  const std::size_t need = a.count() * a.item_size();
  const std::size_t have = bytes.size() - header_at - header_len;
  if (have < need) {
    fail(path, "truncated .npy data: expected " + std::to_string(need) + " bytes, found " +
                   std::to_string(have));
  }
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header_at + header_len),
                bytes.begin() + static_cast<std::ptrdiff_t>(header_at + header_len + need));
  return a;
}

void write_npy(const std::string& path, const NpyArray& a) {
  if (a.item_size() == 0) throw InputError(path + ": cannot write dtype '" + a.descr + "'");
  if (a.data.size() != a.count() * a.item_size()) {
    throw InputError(path + ": array data has " + std::to_string(a.data.size()) +
                     " bytes, shape needs " + std::to_string(a.count() * a.item_size()));
  }
  std::string dict = "{'descr': '" + a.descr +
                     "', 'fortran_order': " + (a.fortran_order ? "True" : "False") + ", 'shape': (";
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    dict += std::to_string(a.shape[i]);
    if (a.shape.size() == 1 || i + 1 < a.shape.size()) dict += ",";
    if (i + 1 < a.shape.size()) dict += " ";
  }
  dict += "), }";
  // Pad with spaces and a newline so that the data starts on a 64-byte boundary (NEP 1).
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

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot open for writing");
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    out.write(reinterpret_cast<const char*>(a.data.data()),
              static_cast<std::streamsize>(a.data.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw InputError(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path + ": cannot rename temporary file into place");
  }
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
