// The exhaustive cast campaign (gpu/verify/verify.hpp) as tests: a slice over the top binades
// (large normals, inf, NaN) and the subnormal/zero region in the default run, and the full 2^32
// sweep as the hidden test "[.campaign]" (the same as `exmy verify --device cuda --depth full`),
// which writes its table to $EXMY_CAMPAIGN_OUT when set.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "gpu/common/runtime.hpp"
#include "gpu/verify/verify.hpp"

using namespace exmy;
using namespace exmy::gpu;

namespace {

void require_software_clean(const std::vector<CampaignCase>& cases) {
  for (const auto& c : cases) {
    INFO(c.backend << " " << c.format << " " << c.rounding);
    if (c.backend.rfind("cast", 0) == 0) {
      REQUIRE(c.mismatches == 0);
    } else {
      // Hardware differences are findings: only NaN inputs may differ (SEMANTICS 7, GPU kernels).
      for (int k = 0; k < 4; ++k) REQUIRE(c.class_mismatches[k] == 0);
    }
    REQUIRE(c.inputs > 0);
  }
}

}  // namespace

TEST_CASE("GPU cast campaign on slices of fp32 codes (zero, 1.0, top binade, inf, NaN)",
          "[gpu][campaign]") {
  // 2^20 inputs from each start: zero and the smallest subnormals; around 1.0; the top fp32
  // binade through +inf into the NaNs; the same for negative values.
  for (const std::uint64_t first : {std::uint64_t{0}, std::uint64_t{0x3F780000u},
                                    std::uint64_t{0x7F7F0000u}, std::uint64_t{0xFF7F0000u}}) {
    CampaignOptions o;
    o.first = first;
    o.count = std::uint64_t{1} << 20;
    o.progress = false;
    const auto cases = run_cast_campaign(o);
    std::printf("%s", campaign_markdown(cases).c_str());
    require_software_clean(cases);
  }
}

TEST_CASE("GPU cast campaign over all 2^32 fp32 inputs", "[.campaign]") {
  CampaignOptions o;
  const auto cases = run_cast_campaign(o);
  const std::string text =
      "# exmy GPU cast campaign on " + device_name() + "\n\n" + campaign_markdown(cases);
  std::printf("%s", text.c_str());
  if (const char* path = std::getenv("EXMY_CAMPAIGN_OUT")) std::ofstream(path) << text;
  require_software_clean(cases);
}

#endif  // EXMY_HAVE_CUDA
