// `exmy cast --device cuda` against `--device cpu` (docs/SEMANTICS.md 11.4): for every float
// preset, a few eXmY names, every rounding mode, --decoded, --pack and the compat profiles, the
// output files are byte-identical where the GPU path accepts the request, and exit code 2 with no
// file where it does not (formats wider than 16 bits, integers, codebooks, mask, --rand, fp64).
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sim/format/float_names.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;

namespace {

const std::filesystem::path kDir = std::filesystem::temp_directory_path() / "exmy_gpu_cli_cast";

using testing::slurp;

int run_exmy(const std::string& args) {
  REQUIRE(!testing::cli().empty());
  return testing::run(args);
}

// CPU and CUDA runs of `cast ARGS --in IN`; true when both wrote the same bytes, or the CUDA run
// refused (exit 2, no file) and `gpu_accepts` is false.
void compare(const std::string& args, const std::filesystem::path& in, bool gpu_accepts) {
  const auto cpu = kDir / "cpu.npy", gpu = kDir / "gpu.npy";
  std::filesystem::remove(cpu);
  std::filesystem::remove(gpu);
  INFO("cast " << args << " --in " << in.filename().string());
  const std::string io = " --in " + in.string() + " --out ";
  REQUIRE(run_exmy("cast " + args + io + cpu.string()) == 0);
  const int rc = run_exmy("cast " + args + " --device cuda" + io + gpu.string());
  if (gpu_accepts) {
    REQUIRE(rc == 0);
    CHECK(slurp(cpu) == slurp(gpu));
  } else {
    CHECK(rc == 2);
    CHECK_FALSE(std::filesystem::exists(gpu));
  }
}

}  // namespace

TEST_CASE("cast --device cuda is byte-identical to the CPU for every format and mode it accepts",
          "[gpu][cast][cli]") {
  std::filesystem::create_directories(kDir);
  // fp32 specials and boundaries plus random patterns (odd length: a ragged GPU tail), and the
  // same top halves as fp16 and bf16 files.
  std::vector<std::uint32_t> bits = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x00400000u, 0x00400001u, 0x00600000u, 0x7F800000u,
      0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F7FFFFFu, 0x7F400000u, 0x43E80000u, 0x47700000u,
      0x3F880000u, 0x3FC00000u, 0x3A000000u, 0x33800000u, 0x3F800000u, 0xBF800000u};
  std::mt19937 rng(11);
  while (bits.size() < 50001) {
    const std::uint32_t r = rng();
    bits.push_back((bits.size() & 1) ? r : (r & 0x807FFFFFu) | ((112u + (rng() % 32u)) << 23));
  }
  std::vector<float> f32;
  std::vector<std::uint16_t> h16;
  for (const std::uint32_t b : bits) {
    f32.push_back(native::float_of(b));
    h16.push_back(static_cast<std::uint16_t>(b >> 16));
  }
  const auto p32 = kDir / "x32.npy", p16 = kDir / "x16.npy", pbf = kDir / "xbf.npy",
             p64 = kDir / "x64.npy", pev = kDir / "xeven.npy";
  io::write_npy(p32.string(), io::make_npy(f32));
  io::NpyArray half = io::make_npy(h16);
  half.descr = io::kDescrF16;
  io::write_npy(p16.string(), half);
  io::write_npy(pbf.string(), io::make_npy(h16));
  io::write_npy(p64.string(), io::make_npy(std::vector<double>{1.0, 2.5, -3.0}));
  f32.pop_back();
  io::write_npy(pev.string(), io::make_npy(f32, {25000, 2}));

  std::vector<std::string> names;
  for (const auto& p : float_presets()) names.push_back(p.name);
  for (const char* extra : {"e6m5", "e3m3", "e2m1", "e5m9fn", "e4m2fnuz"}) names.push_back(extra);
  const char* modes[] = {"",
                         " --round rtz",
                         " --round rna",
                         " --round rup",
                         " --round rdn",
                         " --round rto",
                         " --round sr:8 --seed 3",
                         " --round sr:20 --seed 4",
                         " --overflow satfinite",
                         " --decoded"};
  for (const std::string& name : names) {
    const auto parsed = parse_float_format(name);
    REQUIRE(parsed.has_value());
    const FloatFormat f = *parsed;
    const bool accepts = f.total_bits() <= 16;
    for (const char* mode : modes) compare(name + mode, p32, accepts);
    compare(name + " --round sr:8 --seed 7", p16, accepts);
    compare(name + " --in-format bf16 --round rtz", pbf, accepts);
    if (f.total_bits() <= 4) compare(name + " --pack", pev, true);
  }
  for (const char* profile : {"torch", "ml_dtypes"}) {
    compare(std::string("e8m0fnu --compat ") + profile, p32, true);
    compare(std::string("e8m0fnu --compat ") + profile, p16, true);
    compare(std::string("e8m0fnu --compat ") + profile + " --in-format bf16", pbf, true);
    compare(std::string("e8m0fnu --decoded --compat ") + profile, p32, true);
  }
  // What the GPU path refuses: exit 2, nothing written.
  compare("int8", p32, false);
  compare("dynamic", p32, false);
  compare("e4m3 --round mask", p32, false);
  compare("e4m3fn --round sr:4 --rand 3", p32, false);
  compare("e4m3fn", p64, false);
  std::filesystem::remove_all(kDir);
}
