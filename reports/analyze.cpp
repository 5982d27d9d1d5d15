// The metrics of `exmy analyze` (docs/SEMANTICS.md 18): the combinations, the round trips through
// sim/quant and sim/native, and the fp64 sums. The command (inputs, jobs, outputs) is in
// reports/analyze_run.cpp.
#include "reports/analyze.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/native/convert.hpp"

namespace exmy::reports {

namespace {

std::vector<std::string> split_list(const std::string& s, const char* option) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = std::min(s.find(',', i), s.size());
    const std::string item = s.substr(i, j - i);
    if (item.empty()) throw InputError(std::string(option) + " '" + s + "': an empty item");
    out.push_back(item);
    i = j + 1;
  }
  return out;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

std::vector<AnalyzeCombo> analyze_combos(const std::string& formats, const std::string& schemes,
                                         std::vector<std::string>* skipped) {
  std::vector<quant::Scheme> sch;
  for (const std::string& s : split_list(schemes, "--schemes")) {
    const quant::Scheme q = quant::parse_scheme(s);
    if (q.kind == quant::Granularity::mx || q.kind == quant::Granularity::nvfp4 ||
        q.kind == quant::Granularity::nvfp4_2d) {
      throw InputError("--schemes '" + s +
                       "': mx and nvfp4 are formats here (--formats mx:e4m3fn, nvfp4)");
    }
    sch.push_back(q);
  }
  std::vector<AnalyzeCombo> out;
  for (const std::string& f : split_list(formats, "--formats")) {
    AnalyzeCombo c;
    c.format = f;
    if (f == "bf16" || f == "fp16") {
      c.cast = true;
      c.scheme = "none";
      c.cast_format = f == "bf16" ? formats::bf16 : formats::fp16;
      out.push_back(c);
      continue;
    }
    const bool mx = f.rfind("mx:", 0) == 0;
    // nvfp4: two levels (a per-tensor fp32 scale above the E4M3 block scales, as TE and torchao
    // run it); nvfp4:one-level: the E4M3 block scales alone (small tensors' scales underflow).
    const bool nv = f == "nvfp4" || f == "nvfp4:one-level";
    const std::string target = mx ? f.substr(3) : nv ? std::string("e2m1fn") : f;
    c.opt.target = quant::parse_target(target);
    if (c.opt.target.kind == FormatKind::codebook) {
      throw InputError("--formats '" + f +
                       "': codebooks are not analysed (expected int8, a float format of <= 8 "
                       "bits, mx:F, nvfp4, bf16 or fp16)");
    }
    if (mx || nv) {
      c.opt.scheme = quant::parse_scheme(mx ? "mx" : "nvfp4");
      c.opt.two_level = f == "nvfp4";
      quant::validate_options(c.opt);  // mx with int8: the quantizer's own refusal
      c.scheme = quant::scheme_name(c.opt.scheme);
      out.push_back(c);
      continue;
    }
    for (const quant::Scheme& s : sch) {
      AnalyzeCombo k = c;
      k.opt.scheme = s;
      k.scheme = quant::scheme_name(s);
      try {
        quant::validate_options(k.opt);
      } catch (const InputError& e) {
        if (skipped != nullptr) skipped->push_back(f + " x " + k.scheme + ": " + e.what());
        continue;
      }
      out.push_back(k);
    }
  }
  if (out.empty()) throw InputError("--formats x --schemes: no valid combination");
  return out;
}

ElementStats element_stats(const float* x, const float* d, std::size_t n, std::size_t saturated) {
  ElementStats s;
  s.n = n;
  std::size_t under = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double xi = x[i], e = static_cast<double>(d[i]) - xi;
    s.sum_x2 += xi * xi;
    s.sum_e2 += e * e;
    s.max_abs_err = std::max(s.max_abs_err, std::fabs(e));
    if (std::isnan(e)) s.max_abs_err = e;
    if (xi != 0.0 && d[i] == 0.0f) ++under;
  }
  if (s.sum_x2 == 0.0) {
    s.rel_mse = s.sum_e2 == 0.0 ? 0.0 : kInf;
  } else {
    s.rel_mse = s.sum_e2 / s.sum_x2;
  }
  s.nsr = std::sqrt(s.rel_mse);
  s.snr_db = s.rel_mse == 0.0 ? kInf : -10.0 * std::log10(s.rel_mse);
  s.underflow = n == 0 ? 0.0 : static_cast<double>(under) / static_cast<double>(n);
  s.saturated = n == 0 ? 0.0 : static_cast<double>(saturated) / static_cast<double>(n);
  return s;
}

RoundTrip fake_quantize(const AnalyzeCombo& c, const std::vector<float>& x,
                        const std::vector<std::size_t>& shape) {
  RoundTrip r;
  r.d.resize(x.size());
  if (c.cast) {
    // exmy cast's conversion: fp32 -> the format by RNE, overflow to infinity (IEEE).
    const FloatFormat& f = c.cast_format;
    const std::uint64_t top = f.max_code();
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::uint32_t u;
      std::memcpy(&u, &x[i], 4);
      const std::uint64_t code = native::convert(formats::fp32, f, Rounding{}, u, 0).code;
      r.d[i] = native::to_float(f, code);
      if ((code & f.magnitude_mask()) > top) ++r.saturated;  // infinity
    }
    return r;
  }
  const quant::Quantized q = quant::quantize(x, shape, c.opt);
  r.d = quant::dequantize(q, c.opt);
  // The top code and half its spacing, relative to its value (per group the value is
  // top x scale, so the ratio holds in every group).
  std::uint8_t top_mag = 127;
  std::uint8_t mag_mask = 0x7F;
  double half_rel = 0.5 * (1.0 - 126.0 / 127.0);
  const bool is_int = c.opt.target.kind == FormatKind::integer;
  if (!is_int) {
    const FloatFormat& f = c.opt.target.fp;
    top_mag = static_cast<std::uint8_t>(f.max_code());
    mag_mask = static_cast<std::uint8_t>(f.magnitude_mask());
    const double fmax = native::to_float(f, f.max_code());
    const double prev = native::to_float(f, f.max_code() - 1);
    half_rel = 0.5 * (1.0 - prev / fmax);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint8_t code = q.codes[i];
    const bool top = is_int ? (code == 0x7F || code == 0x81) : ((code & mag_mask) == top_mag);
    if (!top) continue;
    const double ax = std::fabs(static_cast<double>(x[i]));
    const double ad = std::fabs(static_cast<double>(r.d[i]));
    if (ax - ad > half_rel * ad) ++r.saturated;
  }
  return r;
}

std::vector<std::size_t> sampled_rows(std::size_t M, std::size_t rows) {
  std::vector<std::size_t> out;
  if (rows == 0 || rows >= M) {
    out.resize(M);
    for (std::size_t i = 0; i < M; ++i) out[i] = i;
    return out;
  }
  out.resize(rows);
  for (std::size_t t = 0; t < rows; ++t) {
    out[t] = static_cast<std::size_t>((static_cast<unsigned __int128>(t) * M) / rows);
  }
  return out;
}

std::vector<double> product_rows(ProductForm form, const float* a, const float* b, std::size_t M,
                                 std::size_t N, std::size_t K,
                                 const std::vector<std::size_t>& rows) {
  (void)M;
  const std::size_t R = rows.size();
  std::vector<double> out(R * N, 0.0);
  if (form == ProductForm::nt) {
    // Each output: four partial sums over k = l mod 4 (a fixed order: the same bits on every run
    // and for every blocking), added as ((s0 + s1) + (s2 + s3)), then the tail in k order. Rows
    // are taken four at a time so that each element of B is read once per four outputs.
    const std::size_t K4 = K / 4 * 4;
    for (std::size_t t0 = 0; t0 < R; t0 += 4) {
      const std::size_t nr = std::min<std::size_t>(4, R - t0);
      const float* ar[4];
      for (std::size_t u = 0; u < 4; ++u) ar[u] = a + rows[t0 + std::min(u, nr - 1)] * K;
      for (std::size_t j = 0; j < N; ++j) {
        const float* br = b + j * K;
        double s[4][4] = {};
        for (std::size_t k = 0; k < K4; k += 4) {
          double bv[4];
          for (int l = 0; l < 4; ++l) bv[l] = br[k + l];
          for (std::size_t u = 0; u < 4; ++u) {
            for (int l = 0; l < 4; ++l) s[u][l] += static_cast<double>(ar[u][k + l]) * bv[l];
          }
        }
        for (std::size_t u = 0; u < nr; ++u) {
          double tot = (s[u][0] + s[u][1]) + (s[u][2] + s[u][3]);
          for (std::size_t k = K4; k < K; ++k) {
            tot += static_cast<double>(ar[u][k]) * static_cast<double>(br[k]);
          }
          out[(t0 + u) * N + j] = tot;
        }
      }
    }
    return out;
  }
  // nn / tn: out row t += a(i_t, k) b(k, :) for k in order (each output a sum in k order).
  for (std::size_t t = 0; t < R; ++t) {
    double* o = out.data() + t * N;
    for (std::size_t k = 0; k < K; ++k) {
      const double av = form == ProductForm::nn ? a[rows[t] * K + k] : a[k * M + rows[t]];
      const float* br = b + k * N;
      for (std::size_t j = 0; j < N; ++j) o[j] += av * static_cast<double>(br[j]);
    }
  }
  return out;
}

ProductStats product_stats(const std::vector<double>& q, const std::vector<double>& r) {
  ProductStats s;
  double e2 = 0, r2 = 0;
  for (std::size_t i = 0; i < q.size(); ++i) {
    const double e = q[i] - r[i];
    e2 += e * e;
    r2 += r[i] * r[i];
    s.max_abs_err = std::max(s.max_abs_err, std::fabs(e));
    if (std::isnan(e)) s.max_abs_err = e;
  }
  s.rel_err = r2 == 0.0 ? (e2 == 0.0 ? 0.0 : kInf) : std::sqrt(e2 / r2);
  return s;
}

}  // namespace exmy::reports
