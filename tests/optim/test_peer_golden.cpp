// `exmy step --compat PROFILE` against the peers' GPU results (golden/peers/*, captured on an H200
// by bench/peers/bnb_optim_capture.py and torch_optim_capture.py; each case names its profile):
// bitsandbytes 0.50.2's AdamW8bit / Adam8bit / SGD8bit (`bnb-cuda`: params, state codes, absmax,
// the 32-bit fallback's states; fp32/bf16/fp16, inf/NaN gradients, partial blocks, small
// tensors) and torch 2.11's Adam/AdamW/SGD on CUDA (`torch-cuda-fused`, `torch-cuda-foreach`,
// `torch-cuda`: params, exp_avg / momentum buffer, exp_avg_sq). Every byte must match. The same
// files with exmy's default differ (the profile is what makes them match).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>

#include "sim/io/json.hpp"
#include "sim/io/npy.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/source_tree.hpp"

using namespace exmy;
namespace fs = std::filesystem;

namespace {

const fs::path kPeers = exmy::testing::source_root() / "golden" / "peers";

std::string num(const io::Json& h, const char* k) {
  return h.at(k, k).text;  // the JSON number's text, as the capture wrote it
}

io::Json case_json(const fs::path& c) {
  return io::parse_json(testing::slurp(c / "case.json"), (c / "case.json").string());
}

// The case's profile (bitsandbytes' captures predate the key: bnb-cuda).
std::string case_profile(const io::Json& j) {
  const io::Json* p = j.find("profile");
  return p != nullptr ? p->str("profile") : "bnb-cuda";
}

// Runs exmy on case c (its case.json j) with `profile` ("": none); returns the number of output
// files that differ.
int differing_outputs(const fs::path& c, const io::Json& j, const std::string& profile,
                      const std::string& out) {
  const io::Json& h = j.at("hyper", "hyper");
  const std::string opt = j.at("optimizer", "optimizer").str("optimizer");
  std::string args =
      "step --optimizer " + opt + (profile.empty() ? "" : " --compat " + profile) + " --params '" +
      (c / "params0.npy").string() + "' --grads '" + (c / "grads.npy").string() + "' --steps " +
      std::to_string(j.at("steps", "steps").u64("steps")) + " --out '" + out + "' --param-dtype " +
      j.at("dtype", "dtype").str("dtype") + " --lr " + num(h, "lr") + " --wd " + num(h, "wd");
  if (opt == "momentum8bit" || opt == "sgd") {
    args += " --momentum " + num(h, "momentum");
    if (const io::Json* n = h.find("nesterov"); n != nullptr && n->boolean("nesterov")) {
      args += " --nesterov";
    }
    if (h.find("dampening") != nullptr) args += " --dampening " + num(h, "dampening");
  } else {
    args +=
        " --beta1 " + num(h, "beta1") + " --beta2 " + num(h, "beta2") + " --eps " + num(h, "eps");
    // AdEMAMix (bench/peers/bnb_optim8_vs_exmy.py --golden)
    if (h.find("beta3") != nullptr) args += " --beta3 " + num(h, "beta3");
    if (h.find("alpha") != nullptr) args += " --alpha " + num(h, "alpha");
  }
  // Extra exmy flags the capture names (AdEMAMix32bit's `--variant double-buffer`,
  // SEMANTICS 9.4.2).
  if (const io::Json* x = j.find("exmy_flags"); x != nullptr && !x->str("exmy_flags").empty()) {
    args += " " + x->str("exmy_flags");
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

TEST_CASE("--compat profiles: exmy step equals the peers on the GPU, every case, every byte",
          "[optim][compat][cli]") {
  if (testing::cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const std::string tmp = testing::make_tmpdir("exmy_peer_golden");
  REQUIRE(!tmp.empty());
  std::map<std::string, int> cases;  // per profile
  for (const char* peer : {"bnb-cuda", "torch-cuda"}) {
    REQUIRE(fs::is_directory(kPeers / peer));
    for (const auto& e : fs::directory_iterator(kPeers / peer)) {
      if (!fs::exists(e.path() / "case.json")) continue;
      const io::Json j = case_json(e.path());
      const std::string profile = case_profile(j);
      ++cases[profile];
      const std::string out = tmp + "/" + e.path().filename().string();
      INFO(e.path().filename().string() << " --compat " << profile);
      CHECK(differing_outputs(e.path(), j, profile, out) == 0);
    }
  }
  CHECK(cases["bnb-cuda"] == 23);
  CHECK(cases["torch-cuda-fused"] == 12);  // 7 Adam/AdamW, 5 SGD
  CHECK(cases["torch-cuda-foreach"] == 5);
  CHECK(cases["torch-cuda"] == 5);
  // Without a profile (exmy's defaults), the GPU's results differ.
  const auto with_default = [&](const fs::path& c, const std::string& out) {
    return differing_outputs(c, case_json(c), "", out);
  };
  CHECK(with_default(kPeers / "bnb-cuda" / "adamw8bit-fp32", tmp + "/d1") > 0);
  CHECK(with_default(kPeers / "torch-cuda" / "adamw-fused-fp32-h1", tmp + "/d2") > 0);
  CHECK(with_default(kPeers / "torch-cuda" / "adamw-foreach-fp32", tmp + "/d3") > 0);
  // SGD(fused=True) on bf16: fp32 values carried between the lines (SEMANTICS 9.3); the
  // foreach=False model, which rounds each tensor op to bf16, differs.
  CHECK(differing_outputs(kPeers / "torch-cuda" / "sgd-fused-bf16-big",
                          case_json(kPeers / "torch-cuda" / "sgd-fused-bf16-big"), "torch-cuda",
                          tmp + "/d4") > 0);
  fs::remove_all(tmp);
}
