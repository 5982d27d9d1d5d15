#include "reports/variance_config.hpp"

#include <algorithm>
#include <cmath>

namespace exmy::reports {

const char* dist_name(InputDist d) {
  switch (d) {
    case InputDist::gaussian:
      return "gaussian";
    case InputDist::student_t:
      return "student_t4";
    case InputDist::outliers:
      return "outliers";
  }
  return "?";
}

namespace {
// IEEE-style E8My (seed 003's "E8M3"... "E8M7"; E8M7 is bf16's grid).
FloatFormat e8m(int m) {
  return FloatFormat{8, m, 127, true, true, NanEncoding::ieee, true};
}

std::vector<VarScheme> all_schemes() {
  const int R = kVarianceSrBits;
  std::vector<VarScheme> s;
  s.push_back({"int8_tensor", SchemeKind::int8_absmax, {}, false, false, RoundMode::rne, 0});
  s.push_back({"int8_row", SchemeKind::int8_absmax, {}, true, true, RoundMode::rne, 0});
  s.push_back({"int8_switchback", SchemeKind::int8_absmax, {}, true, false, RoundMode::rne, 0});
  s.push_back({"int8_row_sr", SchemeKind::int8_absmax, {}, true, true, RoundMode::sr, R});
  s.push_back(
      {"e4m3fn_tensor", SchemeKind::fp8_absmax, formats::e4m3fn, false, false, RoundMode::rne, 0});
  s.push_back({"e4m3fn_tensor_sr", SchemeKind::fp8_absmax, formats::e4m3fn, false, false,
               RoundMode::sr, R});
  s.push_back(
      {"e4m3fn_row", SchemeKind::fp8_absmax, formats::e4m3fn, true, true, RoundMode::rne, 0});
  s.push_back(
      {"e5m2_tensor", SchemeKind::fp8_absmax, formats::e5m2, false, false, RoundMode::rne, 0});
  s.push_back(
      {"e5m2_tensor_sr", SchemeKind::fp8_absmax, formats::e5m2, false, false, RoundMode::sr, R});
  for (int m = 3; m <= 7; ++m) {
    s.push_back({"e8m" + std::to_string(m) + "_mask", SchemeKind::mask, e8m(m), false, false,
                 RoundMode::rtz, 0});
  }
  for (int m : {3, 5}) {
    s.push_back({"e8m" + std::to_string(m) + "_rne", SchemeKind::elementwise, e8m(m), false, false,
                 RoundMode::rne, 0});
    s.push_back({"e8m" + std::to_string(m) + "_sr", SchemeKind::elementwise, e8m(m), false, false,
                 RoundMode::sr, R});
  }
  return s;
}
}  // namespace

VarianceConfig variance_config(bool quick, int tiny) {
  VarianceConfig c;
  c.schemes = all_schemes();
  c.rows = 4;
  if (tiny) {
    c.ks = {16, 64, 256, 1024};
    c.trials = 6;
    c.dists = {InputDist::gaussian, InputDist::outliers};
    return c;
  }
  c.dists = {InputDist::gaussian, InputDist::student_t, InputDist::outliers};
  // Powers of two, the paper's k ~ 32000 (appendix D), and the D.3 inner dimensions.
  if (quick) {
    c.ks = {16, 64, 256, 1024, 1280, 2048, 4096, 5120, 8192, 16384, 32000, 32768, 65536};
    c.trials = 8;
    // --quick keeps one scheme per question: int8 granularity, fp8 formats, masking depth and
    // rne vs sr (the full report runs all of them).
    const std::vector<std::string> keep{"int8_tensor", "int8_row",      "int8_switchback",
                                        "int8_row_sr", "e4m3fn_tensor", "e5m2_tensor",
                                        "e8m3_mask",   "e8m5_mask",     "e8m7_mask",
                                        "e8m3_rne",    "e8m3_sr"};
    std::vector<VarScheme> kept;
    for (const auto& s : c.schemes) {
      if (std::find(keep.begin(), keep.end(), s.name) != keep.end()) kept.push_back(s);
    }
    c.schemes = kept;
  } else {
    for (int k = 16; k <= 65536; k *= 2) c.ks.push_back(k);
    c.ks.insert(c.ks.end(), {1280, 5120, 32000});
    std::sort(c.ks.begin(), c.ks.end());
    c.trials = 128;
  }
  return c;
}

std::vector<D3Matmul> d3_matmuls() {
  // CLIP ViT-Huge MLP fc1: W is 5120 x 1280 (in 1280, out 5120); 65536 patches per GPU.
  // LLaMA-65B output projection as the paper states it: inner dimensions 32768 (forward) and
  // 8192 (input gradient); 2048 tokens per GPU.
  const double clip_tokens = 65536, clip_in = 1280, clip_out = 5120;
  const double ll_tokens = 2048, ll_in = 32768, ll_out = 8192;
  return {
      {"CLIP ViT-Huge", "forward X W^T", 1280, clip_tokens * clip_in, clip_out * clip_in},
      {"CLIP ViT-Huge", "input grad dY W", 5120, clip_tokens * clip_out, clip_in * clip_out},
      {"CLIP ViT-Huge", "weight grad dY^T X", 65536, clip_out * clip_tokens, clip_in * clip_tokens},
      {"LLaMA-65B", "forward X W^T", 32768, ll_tokens * ll_in, ll_out * ll_in},
      {"LLaMA-65B", "input grad dY W", 8192, ll_tokens * ll_out, ll_in * ll_out},
      {"LLaMA-65B", "weight grad dY^T X", 2048, ll_out * ll_tokens, ll_in * ll_tokens}};
}

double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size();
  if (n < 2) return 0.0;
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += std::log2(x[i]);
    my += std::log2(y[i]);
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = std::log2(x[i]) - mx;
    sxy += dx * (std::log2(y[i]) - my);
    sxx += dx * dx;
  }
  return sxx > 0 ? sxy / sxx : 0.0;
}

}  // namespace exmy::reports
