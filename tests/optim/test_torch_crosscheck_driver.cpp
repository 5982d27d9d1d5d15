// Driver for tests/optim/torch_crosscheck.py (hidden: runs only when named). Reads
// $EXMY_XCHECK_DIR/p.npy and g.npy ([K, n]), runs K steps of the case $EXMY_XCHECK_CASE with the
// script's hyperparameters and writes params.npy, state1.npy, state2.npy into the same directory.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "sim/io/npy.hpp"
#include "sim/optim/optim.hpp"

using namespace exmy;

TEST_CASE("torch cross-check driver", "[.torch-crosscheck]") {
  const char* dir = std::getenv("EXMY_XCHECK_DIR");
  const char* kase = std::getenv("EXMY_XCHECK_CASE");
  REQUIRE(dir != nullptr);
  REQUIRE(kase != nullptr);
  const std::string d = dir, c = kase;
  auto p = io::as_f32(io::read_npy(d + "/p.npy"), "p.npy");
  const io::NpyArray ga = io::read_npy(d + "/g.npy");
  const auto gall = io::as_f32(ga, "g.npy");
  const std::size_t n = p.size(), K = gall.size() / n;
  std::vector<float> s1(n, 0.0f), s2(n, 0.0f);
  const optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  const optim::SgdHyper sh{0.01, 0.9, 0.0, 1e-4, false};
  for (std::size_t k = 0; k < K; ++k) {
    const std::vector<float> g(gall.begin() + k * n, gall.begin() + (k + 1) * n);
    const long t = static_cast<long>(k) + 1;
    if (c == "adamw" || c == "adamw_foreach") {
      optim::adam_step(h, true, optim::Storage::f32, t, p, g, s1, s2);
    } else if (c == "adam") {
      optim::adam_step(h, false, optim::Storage::f32, t, p, g, s1, s2);
    } else if (c == "adamw_bf16" || c == "adamw_bf16_tiny") {
      optim::adam_step(h, true, optim::Storage::bf16, t, p, g, s1, s2);
    } else if (c == "adamw_f16" || c == "adamw_f16_tiny") {
      optim::adam_step(h, true, optim::Storage::f16, t, p, g, s1, s2);
    } else if (c == "adam_bf16") {
      optim::adam_step(h, false, optim::Storage::bf16, t, p, g, s1, s2);
    } else if (c == "sgd_bf16") {
      optim::sgd_step(sh, optim::Storage::bf16, t, p, g, s1);
    } else if (c == "sgd_f16") {
      optim::sgd_step(sh, optim::Storage::f16, t, p, g, s1);
    } else if (c == "adamw_fused") {
      optim::adam_fused_step(h, true, optim::Storage::f32, t, p, g, s1, s2);
    } else if (c == "sgd") {
      optim::sgd_step(sh, optim::Storage::f32, t, p, g, s1);
    } else {
      FAIL("unknown case " << c);
    }
  }
  io::write_npy(d + "/params.npy", io::make_npy(p));
  io::write_npy(d + "/state1.npy", io::make_npy(s1));
  io::write_npy(d + "/state2.npy", io::make_npy(s2));
  SUCCEED();
}
