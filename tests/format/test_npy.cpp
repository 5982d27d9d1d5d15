// NPY I/O: round trips of every helper dtype and shape, header versions 1/2/3 written by hand,
// and every error path (missing, truncated, malformed, big-endian, wrong dtype).
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"

using namespace exmy;
using namespace exmy::io;

namespace {

const std::filesystem::path kDir = std::filesystem::temp_directory_path() / "exmy_test_npy";

std::string path_of(const std::string& name) {
  std::filesystem::create_directories(kDir);
  return (kDir / name).string();
}

// A file with the given version, header dict text and payload (the header padded per NEP 1).
std::string raw_file(const std::string& name, int version, std::string dict,
                     const std::string& payload) {
  const std::size_t prefix = version == 1 ? 10 : 12;
  std::size_t total = prefix + dict.size() + 1;
  dict.append((total + 63) / 64 * 64 - total, ' ');
  dict += '\n';
  std::string s("\x93NUMPY", 6);
  s += static_cast<char>(version);
  s += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i)
    s += static_cast<char>((dict.size() >> (8 * i)) & 0xFF);
  s += dict + payload;
  const std::string p = path_of(name);
  std::ofstream(p, std::ios::binary) << s;
  return p;
}

}  // namespace

TEST_CASE("npy round trip of every helper dtype", "[format][npy]") {
  const std::string p = path_of("rt.npy");
  const std::vector<float> f = {1.5f, -0.0f, 3e38f, 1e-45f, 0.1f, -2.0f};
  const NpyArray a = make_npy(f, {2, 3});
  write_npy(p, a);
  const NpyArray b = read_npy(p);
  CHECK(b.descr == "<f4");
  CHECK(b.shape == std::vector<std::size_t>{2, 3});
  CHECK_FALSE(b.fortran_order);
  CHECK(b.data == a.data);
  CHECK(as_f32(b, p) == f);
  write_npy(p, make_npy(std::vector<double>{1.0, 2.5}));
  CHECK(as_f64(read_npy(p), p) == std::vector<double>{1.0, 2.5});
  write_npy(p, make_npy(std::vector<std::uint8_t>{0, 255, 7}));
  CHECK(as_u8(read_npy(p), p) == std::vector<std::uint8_t>{0, 255, 7});
  write_npy(p, make_npy(std::vector<std::uint16_t>{0, 65535}));
  CHECK(as_u16(read_npy(p), p) == std::vector<std::uint16_t>{0, 65535});
  write_npy(p, make_npy(std::vector<std::uint32_t>{0xDEADBEEFu}));
  CHECK(as_u32(read_npy(p), p) == std::vector<std::uint32_t>{0xDEADBEEFu});
  write_npy(p, make_npy(std::vector<std::uint64_t>{~0ull}));
  CHECK(as_u64(read_npy(p), p) == std::vector<std::uint64_t>{~0ull});
  write_npy(p, make_npy(std::vector<std::int8_t>{-128, 127}));
  CHECK(as_i8(read_npy(p), p) == std::vector<std::int8_t>{-128, 127});
  write_npy(p, make_npy(std::vector<std::int32_t>{-5, 1 << 30}));
  CHECK(as_i32(read_npy(p), p) == std::vector<std::int32_t>{-5, 1 << 30});
  // Empty and 0-d shapes.
  write_npy(p, make_npy(std::vector<float>{}));
  CHECK(read_npy(p).count() == 0);
  NpyArray scalar = make_npy(std::vector<float>{4.0f}, {});
  scalar.shape.clear();
  write_npy(p, scalar);
  CHECK(read_npy(p).shape.empty());
  CHECK(as_f32(read_npy(p), p) == std::vector<float>{4.0f});
  // The data starts on a 64-byte boundary and no temporary file is left behind.
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK((bytes.size() - 4) % 64 == 0);
  for (const auto& e : std::filesystem::directory_iterator(kDir)) {
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

TEST_CASE("npy versions 1.0, 2.0 and 3.0 headers are read", "[format][npy]") {
  const std::string payload("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // 1.0f, 2.0f
  for (const int v : {1, 2, 3}) {
    const std::string p =
        raw_file("v" + std::to_string(v) + ".npy", v,
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", payload);
    CHECK(as_f32(read_npy(p), p) == std::vector<float>{1.0f, 2.0f});
  }
  // Key order and one-byte byte-order marks as NumPy may write them.
  const std::string p =
      raw_file("order.npy", 1, "{'shape': (1, 2), 'fortran_order': True, 'descr': '<u1'}",
               std::string("\x01\x02", 2));
  const NpyArray a = read_npy(p);
  CHECK(a.descr == "|u1");
  CHECK(a.fortran_order);
  CHECK(a.shape == std::vector<std::size_t>{1, 2});
}

TEST_CASE("npy errors name the file and what was expected", "[format][npy]") {
  CHECK_THROWS_WITH(read_npy(path_of("nope.npy")),
                    Catch::Contains("nope.npy") && Catch::Contains("cannot open"));
  { std::ofstream(path_of("junk.npy")) << "hello world"; }
  CHECK_THROWS_WITH(read_npy(path_of("junk.npy")), Catch::Contains("magic"));
  const std::string ok = path_of("ok.npy");
  write_npy(ok, make_npy(std::vector<float>(100, 1.0f)));
  std::string bytes;
  {
    std::ifstream in(ok, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ofstream(path_of("trunc_data.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 1);
  CHECK_THROWS_WITH(read_npy(path_of("trunc_data.npy")),
                    Catch::Contains("truncated .npy data: expected 400 bytes, found 399"));
  std::ofstream(path_of("trunc_head.npy"), std::ios::binary) << bytes.substr(0, 40);
  CHECK_THROWS_WITH(read_npy(path_of("trunc_head.npy")), Catch::Contains("truncated .npy header"));
  const std::string be =
      raw_file("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
               std::string(4, '\0'));
  CHECK_THROWS_WITH(read_npy(be), Catch::Contains("big-endian"));
  const std::string obj =
      raw_file("obj.npy", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
               std::string(8, '\0'));
  CHECK_THROWS_WITH(read_npy(obj), Catch::Contains("unsupported dtype"));
  const std::string noshape =
      raw_file("noshape.npy", 1, "{'descr': '<f4', 'fortran_order': False}", std::string(4, '\0'));
  CHECK_THROWS_WITH(read_npy(noshape), Catch::Contains("no 'shape' key"));
  const std::string v9 =
      raw_file("v9.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
               std::string(4, '\0'));
  {
    std::fstream f(v9, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(6);
    f.put(9);
  }
  CHECK_THROWS_WITH(read_npy(v9), Catch::Contains("unsupported .npy version 9"));
  CHECK_THROWS_WITH(as_u8(read_npy(ok), ok), Catch::Contains("dtype '<f4', expected '|u1'"));
  CHECK_THROWS_AS(make_npy(std::vector<float>(3), {2, 2}), InputError);
  std::filesystem::remove_all(kDir);
}

// Issue 16: hostile headers. Each is refused with an InputError naming the file and the fault,
// before anything sized by the header is allocated (the shapes below would need exabytes).
TEST_CASE("npy_shape_wrap0: shapes whose element or byte product wraps are refused",
          "[format][npy][hostile]") {
  const auto hdr = [](const std::string& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  // 2**63 x 2 elements is 0 mod 2**64: it passed the size check of an empty file and crashed
  // exmy quantize / dequantize.
  CHECK_THROWS_WITH(read_npy(raw_file("wrap0.npy", 1, hdr("(9223372036854775808, 2)"), "")),
                    Catch::Contains("wrap0.npy") && Catch::Contains("too large"));
  CHECK_THROWS_WITH(read_npy(raw_file("wrap_rc.npy", 1, hdr("(8589934592, 2147483648)"), "")),
                    Catch::Contains("too large"));
  CHECK_THROWS_WITH(read_npy(raw_file("wrap4.npy", 1, hdr("(65536, 65536, 65536, 65536)"), "")),
                    Catch::Contains("too large"));
  // Bytes (not elements) wrap: 2**62 float32 elements.
  CHECK_THROWS_WITH(read_npy(raw_file("wrapb.npy", 1, hdr("(4611686018427387904,)"), "")),
                    Catch::Contains("too large"));
  CHECK_THROWS_WITH(read_npy(raw_file("dim65.npy", 1, hdr("(18446744073709551616,)"), "")),
                    Catch::Contains("does not fit in 64 bits"));
  // With a zero dimension the array is empty, but the other dimensions still must fit (NumPy).
  CHECK_THROWS_WITH(read_npy(raw_file("wrapz.npy", 1, hdr("(0, 9223372036854775807, 2)"), "")),
                    Catch::Contains("too large"));
  CHECK(read_npy(raw_file("empty2.npy", 1, hdr("(0, 1000000)"), "")).count() == 0);
}

TEST_CASE("npy_header_trailing_garbage and other dict faults are refused",
          "[format][npy][hostile]") {
  const std::string f4(4, '\0');
  const auto bad = [&](const std::string& name, const std::string& dict, const char* what) {
    INFO(dict);
    CHECK_THROWS_WITH(read_npy(raw_file(name, 1, dict, f4)),
                      Catch::Contains(name) && Catch::Contains(what));
  };
  bad("trail.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }garbage",
      "trailing characters after the header dict");
  bad("dup.npy", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
      "'descr' given twice");
  bad("extra.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
      "unexpected key 'x'");
  bad("nocomma.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "needs its comma");
  bad("negdim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
      "non-negative integer");
  bad("fo.npy", "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",
      "fortran_order is not True or False");
  bad("nobrace.npy", "'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "dict opening");
  bad("open.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected");
  bad("f3.npy", "{'descr': '<f3', 'fortran_order': False, 'shape': (1,)}", "unsupported dtype");
  bad("pipef4.npy", "{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}", "no byte order");
  bad("sep.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1 1,)}", "','");
  // Data beyond the shape's bytes: a concatenated or corrupt file, not silently ignored.
  CHECK_THROWS_WITH(
      read_npy(raw_file("long.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
                        std::string(5, '\0'))),
      Catch::Contains("trailing bytes after the .npy data: expected 4 bytes, found 5"));
}

TEST_CASE("npy_version_and_header_length are checked", "[format][npy][hostile]") {
  const std::string p =
      raw_file("v11.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
               std::string(4, '\0'));
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(7);
    f.put(1);
  }
  CHECK_THROWS_WITH(read_npy(p), Catch::Contains("unsupported .npy version 1.1"));
  // A version 2 header claiming 4 GiB: refused by its length, before any read of that size.
  std::string huge("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);
  std::ofstream(path_of("hlen.npy"), std::ios::binary) << huge;
  CHECK_THROWS_WITH(read_npy(path_of("hlen.npy")), Catch::Contains("header length"));
  std::ofstream(path_of("short.npy"), std::ios::binary) << std::string("\x93NUMPY\x01", 7);
  CHECK_THROWS_WITH(read_npy(path_of("short.npy")), Catch::Contains("magic"));
}

TEST_CASE("npy_input_not_a_file: directories and devices are named", "[format][npy][hostile]") {
  std::filesystem::create_directories(kDir / "adir");
  CHECK_THROWS_WITH(read_npy((kDir / "adir").string()), Catch::Contains("is a directory"));
  CHECK_THROWS_WITH(read_npy("/dev/zero"),
                    Catch::Contains("/dev/zero") && Catch::Contains("not a regular file"));
  std::filesystem::remove_all(kDir);
}
