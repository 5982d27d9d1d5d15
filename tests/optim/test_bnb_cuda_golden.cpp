// `exmy step --compat bnb-cuda` against bitsandbytes 0.50.2 on an H200 (golden/peers/bnb-cuda,
// captured by bench/peers/bnb_optim_capture.py): every byte of params, state codes, absmax and
// the 32-bit fallback's states must match, for AdamW8bit / Adam8bit / SGD8bit on fp32, bf16 and
// fp16 parameters, inf/NaN gradients, a partial last block and tensors below 4096 elements.
// The same files with the default profile differ (the profile is what makes them match).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "sim/io/json.hpp"
#include "sim/io/npy.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
namespace fs = std::filesystem;

namespace {

const fs::path kDir =
    fs::path(__FILE__).parent_path().parent_path().parent_path() / "golden" / "peers" / "bnb-cuda";

std::string num(const io::Json& h, const char* k) {
  return h.at(k, k).text;  // the JSON number's text, as the capture wrote it
}

// Runs exmy on one case with `profile` ("": none); returns the number of output files that differ.
int differing_outputs(const fs::path& c, const std::string& profile, const std::string& out) {
  const io::Json j = io::parse_json(testing::slurp(c / "case.json"), (c / "case.json").string());
  const io::Json& h = j.at("hyper", "hyper");
  const std::string opt = j.at("optimizer", "optimizer").str("optimizer");
  std::string args = "step --optimizer " + opt + (profile.empty() ? "" : " --compat " + profile) +
                     " --params '" +
                     (c / "params0.npy").string() + "' --grads '" + (c / "grads.npy").string() +
                     "' --steps " + std::to_string(j.at("steps", "steps").u64("steps")) +
                     " --out '" + out + "' --param-dtype " + j.at("dtype", "dtype").str("dtype") +
                     " --lr " + num(h, "lr") + " --wd " + num(h, "wd");
  if (opt == "momentum8bit") {
    args += " --momentum " + num(h, "momentum");
  } else {
    args += " --beta1 " + num(h, "beta1") + " --beta2 " + num(h, "beta2") + " --eps " + num(h, "eps");
  }
  INFO(args);
  REQUIRE(testing::run(args, out + ".err") == 0);
  int differ = 0;
  for (const char* f : {"params", "state1", "state2", "absmax1", "absmax2"}) {
    const fs::path ref = c / (std::string(f) + ".npy");
    if (!fs::exists(ref)) continue;
    const io::NpyArray a = io::read_npy(ref.string());
    const io::NpyArray b = io::read_npy(out + "/" + f + ".npy");
    INFO(c.filename().string() << " " << f);
    REQUIRE(a.count() == b.count());
    REQUIRE(a.item_size() == b.item_size());
    if (a.data != b.data) ++differ;
  }
  return differ;
}

}  // namespace

TEST_CASE("bnb-cuda: exmy step equals bitsandbytes on the GPU, every case, every byte",
          "[optim][compat][cli]") {
  if (testing::cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  REQUIRE(fs::is_directory(kDir));
  const std::string tmp = testing::make_tmpdir("exmy_bnb_golden");
  REQUIRE(!tmp.empty());
  int cases = 0;
  for (const auto& e : fs::directory_iterator(kDir)) {
    if (!fs::exists(e.path() / "case.json")) continue;
    ++cases;
    const std::string out = tmp + "/" + e.path().filename().string();
    INFO(e.path().filename().string());
    CHECK(differing_outputs(e.path(), "bnb-cuda", out) == 0);
  }
  CHECK(cases == 23);
  // Without the profile (exmy's correctly rounded default), fp32 AdamW parameters differ.
  CHECK(differing_outputs(kDir / "adamw8bit-fp32", "", tmp + "/default") > 0);
  fs::remove_all(tmp);
}
