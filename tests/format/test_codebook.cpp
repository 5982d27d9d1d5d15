// Codebooks: bitsandbytes' dynamic map against the table its users print, structural properties
// of every built-in map, the tie rules on every exact midpoint, and the lookup against literal
// ports of bitsandbytes' CUDA dQuantize and CPU quantize_block written here as references.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/convert.hpp"
#include "tests/support/bnb_transcriptions.hpp"
#include "tests/support/source_tree.hpp"

using namespace exmy;
using bnb_ref::bnb_cpu_quantize;
using bnb_ref::bnb_cuda_dquantize;

namespace {

const std::filesystem::path kData = exmy::testing::source_root() / "tests" / "format" / "data";

std::vector<const Codebook*> builtins() {
  return {&dynamic_codebook(true), &dynamic_codebook(false), &linear_codebook(true),
          &linear_codebook(false)};
}

// Nearest by exact distance (double holds fp32 differences exactly here); ties -> both allowed.
bool is_a_nearest(const float* code, float x, int got) {
  const double dg = std::fabs(static_cast<double>(x) - code[got]);
  for (int i = 0; i < 256; ++i) {
    if (std::fabs(static_cast<double>(x) - code[i]) < dg) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("dynamic map equals bitsandbytes' published create_dynamic_map(signed=True)",
          "[format][codebook]") {
  std::ifstream in(kData / "bnb_dynamic_signed.txt");
  REQUIRE(in);
  std::vector<float> ref;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ref.push_back(std::strtof(line.c_str(), nullptr));
  }
  REQUIRE(ref.size() == 256);
  const Codebook& cb = dynamic_codebook(true);
  int diffs = 0;
  for (int i = 0; i < 256; ++i) {
    if (native::bits_of(cb.values[i]) != native::bits_of(ref[i])) {
      ++diffs;
      UNSCOPED_INFO("entry " << i << ": ours " << cb.values[i] << " bnb " << ref[i]);
    }
  }
  CHECK(diffs == 0);
}

TEST_CASE("built-in codebooks: ascending, in [-1, 1], zeros and ends where bitsandbytes has them",
          "[format][codebook]") {
  for (const Codebook* cb : builtins()) {
    INFO(cb->name);
    CHECK_NOTHROW(validate_codebook(*cb, cb->name));
    CHECK(cb->values[255] == 1.0f);
  }
  const auto& ds = dynamic_codebook(true).values;
  const auto& du = dynamic_codebook(false).values;
  // Signed: 127 negatives, the zero at 127, 127 positives, 1.0 (bitsandbytes' cpu_ops.cpp calls
  // the range "[-0.993, 1.0]"); the negatives mirror the positives below 1.0.
  CHECK(ds[127] == 0.0f);
  CHECK(std::fabs(ds[0] + 0.993f) < 0.001f);
  for (int i = 0; i < 127; ++i) CHECK(ds[i] == -ds[254 - i]);
  // Unsigned: zero first, 254 positives, 1.0; strictly ascending.
  CHECK(du[0] == 0.0f);
  for (int i = 1; i < 256; ++i) CHECK(du[i] > du[i - 1]);
  // Smallest magnitudes: 1e-6 * mean(0.1, 1) (signed) and 1e-6 * mean(linspace(0.1, 1, 3)[:2]).
  CHECK(ds[128] == static_cast<float>(1e-6) * ((0.1f + 1.0f) / 2.0f));
  const auto& ls = linear_codebook(true).values;
  const auto& lu = linear_codebook(false).values;
  CHECK(ls[0] == -1.0f);
  CHECK(ls[127] == 0.0f);
  CHECK(lu[0] == 0.0f);
  for (int i = 1; i < 256; ++i) CHECK(lu[i] > lu[i - 1]);
}

TEST_CASE("tie rules on every exact fp32 midpoint of every codebook", "[format][codebook]") {
  for (const Codebook* cb : builtins()) {
    const float* v = cb->values.data();
    for (int k = 0; k < 255; ++k) {
      const float m = (v[k] + v[k + 1]) * 0.5f;
      INFO(cb->name << " k=" << k << " m=" << m);
      if (v[k] == v[k + 1]) continue;  // no midpoint between equal entries
      const int even = (k % 2 == 0) ? k : k + 1;
      CHECK(codebook_nearest(v, m, TieRule::even_index) == even);
      CHECK(codebook_nearest(v, m, TieRule::lower_index) == k);
      // bitsandbytes' CUDA search resolves it to the even code: the proof in SEMANTICS 5.3.
      CHECK(bnb_cuda_dquantize(v, 0.0f, m, false) == even);
      CHECK(codebook_nearest(v, m, TieRule::bnb_cpu) == bnb_cpu_quantize(v, m));
      // One ulp either side is no tie.
      const float below = std::nextafter(m, -2.0f), above = std::nextafter(m, 2.0f);
      if (below > v[k]) CHECK(codebook_nearest(v, below, TieRule::even_index) == k);
      if (above < v[k + 1]) CHECK(codebook_nearest(v, above, TieRule::lower_index) == k + 1);
    }
  }
}

TEST_CASE("lookups agree with bitsandbytes' CUDA and CPU code on random and edge inputs",
          "[format][codebook]") {
  std::mt19937_64 rng(20261121);  // fixed seed
  std::printf("codebook lookup random seed 20261121\n");
  std::uniform_real_distribution<float> uni(-1.1f, 1.1f);
  std::uniform_int_distribution<std::uint32_t> bits_any;
  for (const Codebook* cb : builtins()) {
    const float* v = cb->values.data();
    std::vector<float> xs;
    for (int i = 0; i < 20000; ++i) xs.push_back(uni(rng));
    // Tiny magnitudes (the dynamic map's lower groups) and the codes themselves.
    for (int i = 0; i < 5000; ++i) {
      xs.push_back(native::float_of((bits_any(rng) & 0x80FFFFFFu) | 0x30000000u));
    }
    for (int i = 0; i < 256; ++i) xs.push_back(v[i]);
    xs.push_back(-0.0f);
    xs.push_back(INFINITY);
    xs.push_back(-INFINITY);
    xs.push_back(NAN);
    for (const float x : xs) {
      INFO(cb->name << " x=" << x);
      REQUIRE(codebook_nearest(v, x, TieRule::even_index) == bnb_cuda_dquantize(v, 0.0f, x, false));
      REQUIRE(codebook_nearest(v, x, TieRule::bnb_cpu) == bnb_cpu_quantize(v, x));
      if (!std::isnan(x)) CHECK(is_a_nearest(v, x, codebook_nearest(v, x, TieRule::lower_index)));
      const float u = uniform_from_word(bits_any(rng));
      REQUIRE(codebook_stochastic(v, x, u) == bnb_cuda_dquantize(v, u, x, true));
    }
  }
}

TEST_CASE("stochastic codebook rounding never moves a code value", "[format][codebook]") {
  const float* v = dynamic_codebook(true).values.data();
  for (int i = 0; i < 256; ++i) {
    for (const float u : {0.0f, 0.5f, uniform_from_word(0xFFFFFFFFu)}) {
      CHECK(codebook_stochastic(v, v[i], u) == i);
    }
  }
}

TEST_CASE("user codebook tables: text and npy, with validation", "[format][codebook]") {
  const auto dir = std::filesystem::temp_directory_path() / "exmy_test_codebook";
  std::filesystem::create_directories(dir);
  const Codebook& lin = linear_codebook(true);
  {
    std::ofstream t(dir / "ok.txt");
    t << "# linear map\n";
    char buf[64];
    for (int i = 0; i < 256; ++i) {
      std::snprintf(buf, sizeof buf, "%.9g%s", lin.values[i], i % 8 == 7 ? "\n" : ", ");
      t << buf;
    }
  }
  const Codebook a = load_codebook((dir / "ok.txt").string());
  CHECK(a.values == lin.values);
  io::write_npy((dir / "ok.npy").string(),
                io::make_npy(std::vector<float>(lin.values.begin(), lin.values.end())));
  CHECK(load_codebook((dir / "ok.npy").string()).values == lin.values);

  const auto write_text = [&](const std::string& name, const std::vector<std::string>& items) {
    std::ofstream t(dir / name);
    for (const auto& s : items) t << s << "\n";
    return (dir / name).string();
  };
  std::vector<std::string> items(256, "0.5");
  for (int i = 0; i < 256; ++i) items[i] = std::to_string(-1.0 + i / 128.0);
  CHECK_NOTHROW(load_codebook(write_text("good.txt", items)));
  auto few = items;
  few.pop_back();
  CHECK_THROWS_WITH(load_codebook(write_text("few.txt", few)), Catch::Contains("255 entries"));
  auto nan = items;
  nan[7] = "nan";
  // Text tables go through the one number parser, which takes no nan (a .npy NaN is still
  // named by validate_codebook).
  CHECK_THROWS_WITH(load_codebook(write_text("nan.txt", nan)),
                    Catch::Contains("entry 7 'nan'") && Catch::Contains("decimal number"));
  // codebook_dev_zero (issue 16): /dev/zero, a directory or an oversized table is refused by
  // name before it is read (it was read line by line until memory ran out).
  CHECK_THROWS_WITH(load_codebook("/dev/zero"),
                    Catch::Contains("/dev/zero: is not a regular file"));
  CHECK_THROWS_WITH(load_codebook("/tmp"), Catch::Contains("/tmp: is a directory"));
  {
    const std::string p = write_text("huge.txt", {std::string(2u << 20, ' ')});
    CHECK_THROWS_WITH(load_codebook(p), Catch::Contains("more than the 1048576"));
  }
  auto more = items;
  more.push_back("0");
  CHECK_THROWS_WITH(load_codebook(write_text("more.txt", more)),
                    Catch::Contains("more than 256 entries"));
  auto big = items;
  big[255] = "1.5";
  CHECK_THROWS_WITH(load_codebook(write_text("big.txt", big)), Catch::Contains("outside [-1, 1]"));
  auto order = items;
  std::swap(order[3], order[4]);
  CHECK_THROWS_WITH(load_codebook(write_text("order.txt", order)), Catch::Contains("ascending"));
  auto junk = items;
  junk[0] = "abc";
  CHECK_THROWS_WITH(load_codebook(write_text("junk.txt", junk)), Catch::Contains("'abc'"));
  CHECK_THROWS_AS(load_codebook((dir / "missing.txt").string()), InputError);
  io::write_npy((dir / "u8.npy").string(), io::make_npy(std::vector<std::uint8_t>(256)));
  CHECK_THROWS_WITH(load_codebook((dir / "u8.npy").string()), Catch::Contains("expected '<f4'"));
  // codebook_npy_huge (issue 16): a .npy table is refused by its header's count, before its data
  // is read (a valid 64 MiB array is not loaded to find it has too many entries).
  io::write_npy((dir / "big.npy").string(), io::make_npy(std::vector<float>(1 << 24, 0.0f)));
  CHECK_THROWS_WITH(load_codebook((dir / "big.npy").string()),
                    Catch::Contains("16777216 entries, expected 256 float32"));
  std::filesystem::remove_all(dir);
}
