#include "sim/sfu/sfu_tables.hpp"

#include <zlib.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sim/common/error.hpp"
#include "sim/io/files.hpp"
#include "sim/native/fp32_ops.hpp"

// The compiled-in bundle (sfu_tables_blob.S includes the file when the build found it).
extern "C" const unsigned char exmy_sfu_tables_begin[];
extern "C" const unsigned char exmy_sfu_tables_end[];

namespace exmy::sfu {

namespace {

constexpr std::uint32_t k23 = 1u << 23;

const TableInfo kInfo[kTables] = {
    {"rcp", k23, "rcp.approx.ftz.f32 of 1 + i/2^23"},
    {"sqrt", 2 * k23, "sqrt.approx.ftz.f32 of (1 + (i mod 2^23)/2^23)·2^(i/2^23)"},
    {"rsqrt", 2 * k23, "rsqrt.approx.ftz.f32 of (1 + (i mod 2^23)/2^23)·2^(i/2^23)"},
    {"ex2p", k23, "ex2.approx.ftz.f32 of i/2^23"},
    {"ex2n", k23, "ex2.approx.ftz.f32 of −i/2^23"},
    {"lg2e0", k23, "lg2.approx.ftz.f32 of 1 + i/2^23"},
    {"lg2e1", k23, "lg2.approx.ftz.f32 of (1 + i/2^23)/2"},
    {"lg2s", k23,
     "1 when lg2.approx.ftz.f32 of (1 + i/2^23)/4 is one step below −RZ(2 − lg2e0[i])"},
};

using native::f32_bits;
using native::f32_from_bits;

// 2^f and log2(m) in fp64 from + − × only (no libm: the same bits on every IEEE host); the
// reciprocals 1/k and 1/(2k+1) are IEEE divisions done once.
struct SeriesConstants {
  double inv[25];      // 1/k
  double inv_odd[31];  // 1/(2k+1)
  SeriesConstants() {
    for (int k = 1; k < 25; ++k) inv[k] = 1.0 / k;
    for (int k = 0; k < 31; ++k) inv_odd[k] = 1.0 / (2 * k + 1);
  }
};
const SeriesConstants& series() {
  static const SeriesConstants c;
  return c;
}
constexpr double kLn2 = 0.69314718055994530942;
double exp2_series(double f) {  // |f| <= 1: e^y, y = f·ln2, Taylor to y^24/24!
  const SeriesConstants& c = series();
  const double y = f * kLn2;
  double r = 1.0;
  for (int k = 24; k >= 1; --k) r = 1.0 + (r * y) * c.inv[k];
  return r;
}
double log2_series(double m) {  // m in [1, 2): 2·atanh(z)/ln2, z = (m − 1)/(m + 1) <= 1/3
  const SeriesConstants& c = series();
  const double z = (m - 1.0) / (m + 1.0), z2 = z * z;
  double s = 0.0;
  for (int k = 30; k >= 0; --k) s = s * z2 + c.inv_odd[k];
  return 2.0 * z * s / kLn2;
}

void put32(std::vector<std::uint8_t>& o, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) o.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
}
struct Reader {
  std::span<const std::uint8_t> b;
  std::size_t at = 0;
  const std::string& what;
  std::uint32_t u32() {
    need(4);
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= static_cast<std::uint32_t>(b[at + k]) << (8 * k);
    at += 4;
    return v;
  }
  std::span<const std::uint8_t> bytes(std::size_t n) {
    need(n);
    auto s = b.subspan(at, n);
    at += n;
    return s;
  }
  void need(std::size_t n) {
    if (b.size() - at < n) throw InputError(what + ": truncated SFU table file");
  }
};

std::uint32_t crc_of(const std::vector<std::uint32_t>& v) {
  if constexpr (std::endian::native == std::endian::little) {
    return static_cast<std::uint32_t>(
        crc32_z(0L, reinterpret_cast<const Bytef*>(v.data()), v.size() * sizeof(std::uint32_t)));
  }
  std::vector<std::uint8_t> le;
  le.reserve(v.size() * 4);
  for (std::uint32_t x : v) put32(le, x);
  return static_cast<std::uint32_t>(crc32(0L, le.data(), static_cast<uInt>(le.size())));
}

}  // namespace

const TableInfo& table_info(Table t) {
  return kInfo[static_cast<int>(t)];
}

std::uint32_t table_input(Table t, std::uint32_t i) {
  const std::uint32_t m = i & (k23 - 1);
  switch (t) {
    case Table::rcp:
    case Table::lg2e0:
      return 0x3F800000u | m;
    case Table::sqrt:
    case Table::rsqrt:
      return ((127u + (i >> 23)) << 23) | m;
    case Table::ex2p:
      return f32_bits(static_cast<float>(i) / static_cast<float>(k23));
    case Table::ex2n:
      return f32_bits(-static_cast<float>(i) / static_cast<float>(k23));
    case Table::lg2e1:
      return 0x3F000000u | m;
    case Table::lg2s:
      return 0x3E800000u | m;
  }
  return 0;
}

std::uint32_t predict(Table t, std::uint32_t i) {
  const float x = f32_from_bits(table_input(t, i));
  switch (t) {
    case Table::rcp:
      return f32_bits(native::rn_div(1.0f, x));
    case Table::sqrt:
      return f32_bits(native::rn_sqrt(x));
    case Table::rsqrt:
      return f32_bits(native::rn_f32(native::rn_div64(1.0, native::rn_sqrt64(x))));
    case Table::ex2p:
      return f32_bits(native::rn_f32(exp2_series(static_cast<double>(x))));
    case Table::ex2n:
      return f32_bits(native::rn_f32(exp2_series(static_cast<double>(x))));
    case Table::lg2e0:
      return f32_bits(native::rn_f32(log2_series(static_cast<double>(x))));
    case Table::lg2e1:
      return f32_bits(native::rn_f32(log2_series(2.0 * static_cast<double>(x)) - 1.0));
    case Table::lg2s:
      return 0u;
  }
  return 0;
}

native::SfuTables Bundle::view() const {
  native::SfuTables v;
  v.rcp = tables[0].data();
  v.sqrt = tables[1].data();
  v.rsqrt = tables[2].data();
  v.ex2p = tables[3].data();
  v.ex2n = tables[4].data();
  v.lg2e0 = tables[5].data();
  v.lg2e1 = tables[6].data();
  v.lg2s = lg2s_bits.data();
  return v;
}

void pack_lg2s(Bundle& b) {
  const auto& s = b.tables[static_cast<int>(Table::lg2s)];
  b.lg2s_bits.assign(s.size() / 32, 0u);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i]) b.lg2s_bits[i >> 5] |= 1u << (i & 31);
  }
}

std::vector<std::uint8_t> encode(const Bundle& b) {
  std::vector<std::uint8_t> o = {'E', 'X', 'M', 'Y', 'S', 'F', 'U', '1'};
  put32(o, kTables);
  put32(o, static_cast<std::uint32_t>(b.manifest.size()));
  o.insert(o.end(), b.manifest.begin(), b.manifest.end());
  for (int k = 0; k < kTables; ++k) {
    const Table t = static_cast<Table>(k);
    const TableInfo& info = kInfo[k];
    const auto& v = b.tables[k];
    if (v.size() != info.entries) {
      throw InputError(std::string("SFU table ") + info.name + ": expected " +
                       std::to_string(info.entries) + " entries, got " + std::to_string(v.size()));
    }
    std::vector<std::uint8_t> res;
    res.reserve(v.size());
    for (std::uint32_t i = 0; i < info.entries; ++i) {
      const std::int64_t r = static_cast<std::int64_t>(v[i]) - predict(t, i);
      if (r > -128 && r < 128) {
        res.push_back(static_cast<std::uint8_t>(static_cast<std::int8_t>(r)));
      } else {
        res.push_back(0x80);
        put32(res, static_cast<std::uint32_t>(static_cast<std::int32_t>(r)));
      }
    }
    uLongf zlen = compressBound(static_cast<uLong>(res.size()));
    std::vector<std::uint8_t> z(zlen);
    if (compress2(z.data(), &zlen, res.data(), static_cast<uLong>(res.size()), 9) != Z_OK) {
      throw InputError(std::string("SFU table ") + info.name + ": zlib compression failed");
    }
    z.resize(zlen);
    put32(o, static_cast<std::uint32_t>(std::strlen(info.name)));
    o.insert(o.end(), info.name, info.name + std::strlen(info.name));
    put32(o, info.entries);
    put32(o, crc_of(v));
    put32(o, static_cast<std::uint32_t>(z.size()));
    o.insert(o.end(), z.begin(), z.end());
  }
  return o;
}

Bundle decode(std::span<const std::uint8_t> bytes, const std::string& what, unsigned mask) {
  Reader r{bytes, 0, what};
  const auto magic = r.bytes(8);
  if (std::memcmp(magic.data(), "EXMYSFU1", 8) != 0) {
    throw InputError(what + ": not an exmy SFU table file (expected the magic EXMYSFU1)");
  }
  if (r.u32() != kTables)
    throw InputError(what + ": expected " + std::to_string(kTables) + " tables");
  Bundle b;
  const std::uint32_t mlen = r.u32();
  const auto man = r.bytes(mlen);
  b.manifest.assign(man.begin(), man.end());
  // The headers in order (cheap), then the selected tables' payloads in parallel: the zlib
  // inflate of 72 M entries is most of a process's start-up when a profile needs the tables.
  struct Payload {
    std::uint32_t crc = 0;
    std::span<const std::uint8_t> z;
  };
  std::array<Payload, kTables> payloads;
  for (int k = 0; k < kTables; ++k) {
    const TableInfo& info = kInfo[k];
    const std::uint32_t nlen = r.u32();
    const auto name = r.bytes(nlen);
    if (std::string(name.begin(), name.end()) != info.name) {
      throw InputError(what + ": table " + std::to_string(k) + " should be '" + info.name + "'");
    }
    if (r.u32() != info.entries) {
      throw InputError(what + ": table " + info.name + " should have " +
                       std::to_string(info.entries) + " entries");
    }
    payloads[k].crc = r.u32();
    const std::uint32_t zlen = r.u32();
    payloads[k].z = r.bytes(zlen);
  }
  std::array<std::string, kTables> errors;
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < kTables; ++k) {
    if ((mask & (1u << k)) == 0) continue;
    const TableInfo& info = kInfo[k];
    // Each entry takes 1 or 5 residual bytes.
    std::vector<std::uint8_t> res(static_cast<std::size_t>(info.entries) * 5);
    uLongf rlen = static_cast<uLongf>(res.size());
    if (uncompress(res.data(), &rlen, payloads[k].z.data(),
                   static_cast<uLong>(payloads[k].z.size())) != Z_OK) {
      errors[k] = what + ": table " + info.name + " does not decompress (corrupt file)";
      continue;
    }
    auto& v = b.tables[k];
    v.resize(info.entries);
    const Table t = static_cast<Table>(k);
    std::size_t at = 0;
    for (std::uint32_t i = 0; i < info.entries && errors[k].empty(); ++i) {
      if (at >= rlen) {
        errors[k] = what + ": table " + info.name + " is short";
        break;
      }
      const std::uint8_t c = res[at++];
      std::uint32_t resid;
      if (c != 0x80) {
        resid = static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int8_t>(c)));
      } else {
        if (rlen - at < 4) {
          errors[k] = what + ": table " + info.name + " is short";
          break;
        }
        resid = 0;
        for (int q = 0; q < 4; ++q) resid |= static_cast<std::uint32_t>(res[at + q]) << (8 * q);
        at += 4;
      }
      v[i] = predict(t, i) + resid;
    }
    if (errors[k].empty() && crc_of(v) != payloads[k].crc) {
      errors[k] = what + ": table " + info.name + " fails its CRC-32 (corrupt file)";
    }
  }
  for (const std::string& e : errors) {
    if (!e.empty()) throw InputError(e);
  }
  if ((mask & (1u << static_cast<int>(Table::lg2s))) != 0) pack_lg2s(b);
  return b;
}

namespace {

// The sm_90 tables of `mask`, from EXMY_SFU_TABLES or the compiled-in bundle.
Bundle load_sm90(unsigned mask) {
  if (const char* path = std::getenv("EXMY_SFU_TABLES"); path != nullptr && *path != '\0') {
    const std::string text =
        io::read_small_file(path, std::size_t{64} << 20, "an exmy SFU table file (exmy probe sfu)");
    const std::vector<std::uint8_t> bytes(text.begin(), text.end());
    return decode(bytes, std::string("EXMY_SFU_TABLES '") + path + "'", mask);
  }
  const std::size_t n = static_cast<std::size_t>(exmy_sfu_tables_end - exmy_sfu_tables_begin);
  if (n == 0) {
    throw InputError(
        "the sm_90 SFU tables are not compiled into this build (golden/profiles/sm90/"
        "sfu-tables.bin was missing at configure time); set EXMY_SFU_TABLES=FILE or run "
        "`exmy probe sfu --device cuda --out DIR` on an H100/H200");
  }
  return decode({exmy_sfu_tables_begin, n}, "compiled-in golden/profiles/sm90/sfu-tables.bin",
                mask);
}

}  // namespace

const Bundle& sm90() {
  static const Bundle bundle = load_sm90(kAllTables);
  return bundle;
}

const native::SfuTables& sm90_view() {
  static const native::SfuTables v = sm90().view();
  return v;
}

const native::SfuTables& sm90_rcp_view() {
  static const Bundle rcp_only = load_sm90(1u << static_cast<int>(Table::rcp));
  static const native::SfuTables v = rcp_only.view();
  return v;
}

}  // namespace exmy::sfu
