// Quantization against peers on the GPU. `exmy quantize / dequantize --scheme block:B --to
// dynamic --compat bnb-cuda` against
// bitsandbytes' quantize_blockwise / dequantize_blockwise on an H200 (golden/peers/
// bnb-cuda-quantize): codes and dequantized values equal; absmax equal except in all-NaN blocks.
// Without the profile the midpoint-placed elements get other codes.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/io/json.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/optim_storage.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/source_tree.hpp"

using namespace exmy;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = exmy::testing::source_root() / "golden" / "peers" / "bnb-cuda-quantize";

std::vector<float> floats(const io::NpyArray& a) {
  std::vector<float> v(a.count());
  std::memcpy(v.data(), a.data.data(), v.size() * 4);
  return v;
}
bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || native::f32_bits(a) == native::f32_bits(b);
}

}  // namespace

TEST_CASE("bnb-cuda quantize/dequantize equal bitsandbytes on the GPU", "[quant][compat][cli]") {
  if (testing::cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const std::string tmp = testing::make_tmpdir("exmy_bnb_quant");
  REQUIRE(!tmp.empty());
  int cases = 0;
  for (const auto& e : fs::directory_iterator(kDir)) {
    const fs::path c = e.path();
    if (!fs::exists(c / "case.json")) continue;
    ++cases;
    INFO(c.filename().string());
    const io::Json j = io::parse_json(testing::slurp(c / "case.json"), "case.json");
    const std::string B = std::to_string(j.at("block", "block").u64("block"));
    const std::string dt = j.at("dtype", "dtype").str("dtype");
    const std::string q = tmp + "/q.npy", s = tmp + "/s.npy", y = tmp + "/y.npy",
                      q0 = tmp + "/q0.npy";
    REQUIRE(testing::run("quantize --scheme block:" + B + " --to dynamic --compat bnb-cuda --in '" +
                         (c / "x.npy").string() + "' --out " + q + " --state-out " + s) == 0);
    REQUIRE(testing::run("dequantize --scheme block:" + B +
                         " --from dynamic --compat bnb-cuda --in '" + (c / "codes.npy").string() +
                         "' --state '" + (c / "absmax.npy").string() + "' --out " + y) == 0);
    CHECK(io::read_npy(q).data == io::read_npy((c / "codes.npy").string()).data);
    // absmax: equal, except that an all-NaN block holds bitsandbytes' -FLT_MAX and exmy's 0.
    const auto x = floats(io::read_npy((c / "x.npy").string()));
    const auto mine = floats(io::read_npy(s)),
               ref = floats(io::read_npy((c / "absmax.npy").string()));
    REQUIRE(mine.size() == ref.size());
    const std::size_t b = std::stoul(B);
    for (std::size_t g = 0; g < ref.size(); ++g) {
      bool all_nan = true;
      for (std::size_t i = g * b; i < std::min(x.size(), (g + 1) * b); ++i)
        all_nan &= std::isnan(x[i]);
      INFO("block " << g);
      if (all_nan) {
        CHECK(ref[g] == -3.40282347e38f);
        CHECK(mine[g] == 0.0f);
      } else {
        CHECK(same(mine[g], ref[g]));
      }
    }
    const native::Storage st = dt == "bf16"   ? native::Storage::bf16
                               : dt == "fp16" ? native::Storage::f16
                                              : native::Storage::f32;
    const auto deq = floats(io::read_npy(y)), dref = floats(io::read_npy((c / "deq.npy").string()));
    REQUIRE(deq.size() == dref.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < deq.size(); ++i)
      bad += !same(native::to_storage(deq[i], st), dref[i]);
    CHECK(bad == 0);
    // Without the profile: other codes for the midpoint-placed elements.
    REQUIRE(testing::run("quantize --scheme block:" + B + " --to dynamic --in '" +
                         (c / "x.npy").string() + "' --out " + q0 + " --state-out " + s) == 0);
    CHECK(io::read_npy(q0).data != io::read_npy((c / "codes.npy").string()).data);
  }
  CHECK(cases == 6);
  fs::remove_all(tmp);
}

TEST_CASE("triton: SwitchBack's Triton row-wise int8 kernel's codes, every one",
          "[quant][compat][cli]") {
  if (testing::cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const fs::path c = kDir.parent_path() / "triton-switchback";
  const std::string tmp = testing::make_tmpdir("exmy_triton_quant");
  REQUIRE(!tmp.empty());
  const std::string q = tmp + "/q.npy", s = tmp + "/s.npy";
  const std::string in = " --in '" + (c / "x.npy").string() + "' --out " + q + " --state-out " + s;
  REQUIRE(testing::run("quantize --scheme rowwise --to int8 --compat triton" + in) == 0);
  CHECK(io::read_npy(q).data == io::read_npy((c / "codes.npy").string()).data);
  CHECK(io::read_npy(s).data == io::read_npy((c / "maxs.npy").string()).data);
  // exmy's default (an IEEE division, the SwitchBack paper's arithmetic) parts on the boundaries.
  REQUIRE(testing::run("quantize --scheme rowwise --to int8" + in) == 0);
  CHECK(io::read_npy(q).data != io::read_npy((c / "codes.npy").string()).data);
  // The profile covers only the row/column-wise kernels' in-kernel division.
  CHECK(testing::run("quantize --scheme tensor --to int8 --compat triton" + in) == 2);
  CHECK(testing::run("quantize --scheme rowwise --to int8 --compat triton --order div-mul" + in) ==
        2);
  fs::remove_all(tmp);
}
