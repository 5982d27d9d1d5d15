// D.3 with realistic operand statistics (d3_realistic.hpp, SEMANTICS 14.1).
#include "reports/d3_realistic.hpp"

#include <cmath>
#include <cstdint>
#include <map>

#include "reports/output_files.hpp"
#include "reports/stats_intervals.hpp"
#include "reports/variance_config.hpp"
#include "sim/fast/exact_dot_simd.hpp"
#include "sim/native/exact_dot.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/random_normal.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::reports {

namespace {

constexpr int kRows = 4;
constexpr double kOutlierScale = 100.0;
constexpr int kNu = 4;
// Streams (section 1's range): 0x01C00000 | matmul << 8 | purpose; purpose 0 = u, 1 = v,
// 2 = token scales, 3 / 4 = the rest-of-tensor absmax draws.
std::uint32_t stream(int mi, int purpose) {
  return 0x01C00000u | (static_cast<std::uint32_t>(mi) << 8) | static_cast<std::uint32_t>(purpose);
}
std::uint64_t eidx(int t, int r, int c) {
  return ((static_cast<std::uint64_t>(t) * kRows + r) << 16) + static_cast<std::uint64_t>(c);
}

// A 53-bit uniform in (0, 1) from two words of (stream, 2i, 2i + 1).
double uniform53(std::uint64_t seed, std::uint32_t st, std::uint64_t i) {
  const std::uint64_t w = (static_cast<std::uint64_t>(native::philox_word(seed, st, 2 * i)) << 21) ^
                          native::philox_word(seed, st, 2 * i + 1);
  return (static_cast<double>(w & ((1ull << 53) - 1)) + 0.5) / 9007199254740992.0;
}

enum class Op { x_row, w_row, wt_row, dy_row, dyt_row, xt_row };

struct Shape {
  int in = 0, out = 0, tokens = 0;
};

// int8 absmax of rows x k (row-wise or tensor-wise, SwitchBack's orders), with `rest` the absmax
// of the tensor's unsampled elements (tensor-wise only; joins as one dropped element).
std::vector<float> int8_q(const std::vector<float>& x, int rows, int k, bool rowwise, float rest) {
  quant::Options o;
  o.target = quant::parse_target("int8");
  o.variant = native::CastVariant::absmax;
  o.scheme.kind = rowwise ? quant::Granularity::row : quant::Granularity::tensor;
  o.order = rowwise ? native::ScaleOrder::div_mul : native::ScaleOrder::recip_mul;
  o.mode = RoundMode::rne;
  std::vector<float> in = x;
  std::vector<std::size_t> shape{static_cast<std::size_t>(rows), static_cast<std::size_t>(k)};
  if (!rowwise && rest > 0) {
    in.push_back(rest);
    shape = {1, in.size()};
  }
  std::vector<float> y = quant::dequantize(quant::quantize(in, shape, o), o);
  y.resize(x.size());
  return y;
}

float to_fp16(float x) {
  return native::f32_from_f16(native::f16_from_f32(x));
}

}  // namespace

bool d3_outlier_feature(std::uint64_t seed, int model, int f) {
  return native::philox_word(seed, 0x01B00000u | (static_cast<std::uint32_t>(model) << 8),
                             static_cast<std::uint64_t>(f)) < (1u << 24);
}

std::vector<D3RealCell> run_d3_realistic(const ReportContext& ctx, int trials, int replicates) {
  const auto mm = d3_matmuls();
  const std::uint64_t seed = ctx.options().seed;
  // Model dimensions from the inner dimensions: forward k = in, input grad k = out, weight
  // grad k = tokens.
  std::vector<std::string> models;
  std::vector<Shape> shapes;
  for (const auto& m : mm) {
    std::size_t mi = 0;
    while (mi < models.size() && models[mi] != m.model) ++mi;
    if (mi == models.size()) {
      models.push_back(m.model);
      shapes.push_back({});
    }
    if (m.matmul.rfind("forward", 0) == 0) shapes[mi].in = m.k;
    if (m.matmul.rfind("input", 0) == 0) shapes[mi].out = m.k;
    if (m.matmul.rfind("weight", 0) == 0) shapes[mi].tokens = m.k;
  }
  const std::vector<std::string> schemes = {"int8_row", "int8_switchback", "llm_int8"};
  std::vector<D3RealCell> out;
  Progress progress(ctx, "variance", static_cast<double>(mm.size()));
  for (std::size_t mi = 0; mi < mm.size(); ++mi) {
    const D3Matmul& m = mm[mi];
    progress.step("D.3 realistic operands: " + m.model + " " + m.matmul, static_cast<double>(mi));
    int model = 0;
    while (models[static_cast<std::size_t>(model)] != m.model) ++model;
    const Shape sh = shapes[static_cast<std::size_t>(model)];
    const bool fwd = m.matmul.rfind("forward", 0) == 0;
    const bool wgrad = m.matmul.rfind("weight", 0) == 0;
    const Op uop = fwd ? Op::x_row : wgrad ? Op::dyt_row : Op::dy_row;
    const Op vop = fwd ? Op::w_row : wgrad ? Op::xt_row : Op::wt_row;
    const int k = m.k;
    // Outlier features of this model's X.
    std::vector<int> outlier_features, regular_features;
    for (int f = 0; f < sh.in; ++f) {
      (d3_outlier_feature(seed, model, f) ? outlier_features : regular_features).push_back(f);
    }
    const double p_out = static_cast<double>(outlier_features.size()) / sh.in;
    // Row weights of v: X^T rows are stratified (rows 0..2 regular features, row 3 an outlier
    // feature, weighted by their shares of the features); every other operand's rows are
    // exchangeable (weight 1 each).
    std::vector<double> wv(kRows, 1.0);
    if (vop == Op::xt_row) {
      for (int r = 0; r + 1 < kRows; ++r)
        wv[static_cast<std::size_t>(r)] = (1 - p_out) / (kRows - 1);
      wv[kRows - 1] = outlier_features.empty() ? 0.0 : p_out;
    }
    struct Sums {
      double w = 0, d = 0, dd = 0, s = 0, ss = 0, u2 = 0, nu = 0, v2 = 0, nv = 0;
    };
    std::vector<std::vector<Sums>> per(static_cast<std::size_t>(trials),
                                       std::vector<Sums>(schemes.size()));
    ctx.parallel_for(static_cast<std::size_t>(trials), [&](std::size_t ts) {
      const int t = static_cast<int>(ts);
      std::vector<float> u(static_cast<std::size_t>(kRows) * k), v(u.size());
      for (int r = 0; r < kRows; ++r) {
        for (int c = 0; c < k; ++c) {
          const std::uint64_t j = eidx(t, r, c);
          double a = 0, b = 0;
          switch (uop) {
            case Op::x_row:  // token row of X over features c
              a = native::normal_fp64(seed, stream(static_cast<int>(mi), 0), j) *
                  (d3_outlier_feature(seed, model, c) ? kOutlierScale : 1.0);
              break;
            case Op::dy_row:     // token row of dY: one token scale
            case Op::dyt_row: {  // output row of dY^T over tokens c: a scale per token
              const std::uint64_t tok = uop == Op::dy_row ? eidx(t, r, 0) : eidx(t, 0, c);
              const double s =
                  std::exp(native::normal_fp64(seed, stream(static_cast<int>(mi), 2), tok));
              a = s * native::student_t_fp64(seed, stream(static_cast<int>(mi), 0), j, kNu);
              break;
            }
            default:
              break;
          }
          switch (vop) {
            case Op::w_row:
            case Op::wt_row:
              b = native::normal_fp64(seed, stream(static_cast<int>(mi), 1), j) /
                  std::sqrt(static_cast<double>(sh.in));
              break;
            case Op::xt_row: {
              const bool o = r == kRows - 1 && !outlier_features.empty();
              b = native::normal_fp64(seed, stream(static_cast<int>(mi), 1), j) *
                  (o ? kOutlierScale : 1.0);
              break;
            }
            default:
              break;
          }
          u[static_cast<std::size_t>(r) * k + c] = static_cast<float>(a);
          v[static_cast<std::size_t>(r) * k + c] = static_cast<float>(b);
        }
      }
      // Tensor-wise v: the absmax of the rest of the tensor, drawn from the law of the maximum.
      float rest = 0;
      if (vop == Op::w_row || vop == Op::wt_row) {
        const double n = static_cast<double>(sh.in) * sh.out - static_cast<double>(kRows) * k;
        rest = static_cast<float>(
            gaussian_max_quantile(n, uniform53(seed, stream(static_cast<int>(mi), 3), ts)) /
            std::sqrt(static_cast<double>(sh.in)));
      } else if (vop == Op::xt_row) {
        // X's absmax: its outlier entries (x100) and its regular entries, minus the sampled.
        const double no = static_cast<double>(outlier_features.size()) * sh.tokens - k;
        const double nr = static_cast<double>(regular_features.size()) * sh.tokens - 3.0 * k;
        const double mo =
            no > 0 ? kOutlierScale * gaussian_max_quantile(
                                         no, uniform53(seed, stream(static_cast<int>(mi), 3), ts))
                   : 0.0;
        const double mr =
            gaussian_max_quantile(nr, uniform53(seed, stream(static_cast<int>(mi), 4), ts));
        rest = static_cast<float>(std::max(mo, mr));
      }
      std::vector<native::ExactDot32> base(kRows * kRows), qacc(kRows * kRows);
      for (auto& acc : base) acc.clear();
      fast::exact_dots(u.data(), kRows, v.data(), kRows, static_cast<std::size_t>(k), base.data());
      double uv[kRows * kRows];
      for (int q = 0; q < kRows * kRows; ++q) uv[q] = base[static_cast<std::size_t>(q)].to_double();
      double u2 = 0, v2[kRows] = {0, 0, 0, 0};
      for (int i = 0; i < kRows; ++i) {
        for (int c = 0; c < k; ++c) {
          const double a = u[static_cast<std::size_t>(i) * k + c],
                       b = v[static_cast<std::size_t>(i) * k + c];
          u2 += a * a;
          v2[i] += b * b;
        }
      }
      for (std::size_t si = 0; si < schemes.size(); ++si) {
        const std::string& s = schemes[si];
        if (s == "llm_int8" && !fwd) continue;
        std::vector<float> uh, vh;
        if (s == "int8_row") {
          uh = int8_q(u, kRows, k, true, 0);
          vh = int8_q(v, kRows, k, true, 0);
        } else if (s == "int8_switchback") {
          uh = int8_q(u, kRows, k, true, 0);
          vh = int8_q(v, kRows, k, false, rest);
        } else {
          // Decomposition: outlier columns in fp16, the rest vector-wise int8.
          std::vector<int> reg;
          for (int c = 0; c < k; ++c) {
            if (!d3_outlier_feature(seed, model, c)) reg.push_back(c);
          }
          const int kr = static_cast<int>(reg.size());
          std::vector<float> us(static_cast<std::size_t>(kRows) * kr), vs(us.size());
          for (int r = 0; r < kRows; ++r) {
            for (int q = 0; q < kr; ++q) {
              us[static_cast<std::size_t>(r) * kr + q] =
                  u[static_cast<std::size_t>(r) * k + reg[q]];
              vs[static_cast<std::size_t>(r) * kr + q] =
                  v[static_cast<std::size_t>(r) * k + reg[q]];
            }
          }
          const std::vector<float> uq = int8_q(us, kRows, kr, true, 0),
                                   vq = int8_q(vs, kRows, kr, true, 0);
          uh.resize(u.size());
          vh.resize(v.size());
          for (std::size_t e = 0; e < u.size(); ++e) {
            uh[e] = to_fp16(u[e]);
            vh[e] = to_fp16(v[e]);
          }
          for (int r = 0; r < kRows; ++r) {
            for (int q = 0; q < kr; ++q) {
              uh[static_cast<std::size_t>(r) * k + reg[q]] =
                  uq[static_cast<std::size_t>(r) * kr + q];
              vh[static_cast<std::size_t>(r) * k + reg[q]] =
                  vq[static_cast<std::size_t>(r) * kr + q];
            }
          }
        }
        Sums& S = per[ts][si];
        for (auto& acc : qacc) acc.clear();
        fast::exact_dots(uh.data(), kRows, vh.data(), kRows, static_cast<std::size_t>(k),
                         qacc.data());
        for (int i = 0; i < kRows; ++i) {
          for (int jr = 0; jr < kRows; ++jr) {
            native::ExactDot32& acc = qacc[static_cast<std::size_t>(i * kRows + jr)];
            acc.add(base[static_cast<std::size_t>(i * kRows + jr)], /*subtract=*/true);
            const double d = acc.to_double(), w = wv[static_cast<std::size_t>(jr)];
            const double x = uv[i * kRows + jr];
            S.w += w;
            S.d += w * d;
            S.dd += w * d * d;
            S.s += w * x;
            S.ss += w * x * x;
          }
        }
        S.u2 += u2;
        S.nu += static_cast<double>(kRows) * k;
        for (int jr = 0; jr < kRows; ++jr) {
          S.v2 += wv[static_cast<std::size_t>(jr)] * v2[jr];
          S.nv += wv[static_cast<std::size_t>(jr)] * k;
        }
      }
    });
    for (std::size_t si = 0; si < schemes.size(); ++si) {
      if (schemes[si] == "llm_int8" && !fwd) continue;
      // Weighted moments over a multiset of trials (sums in the order given).
      auto stats = [&](const std::vector<int>& pick, double& norm, double& nsr, double& vd,
                       double& vx) {
        Sums a;
        for (int t : pick) {
          const Sums& s = per[static_cast<std::size_t>(t)][si];
          a.w += s.w;
          a.d += s.d;
          a.dd += s.dd;
          a.s += s.s;
          a.ss += s.ss;
          a.u2 += s.u2;
          a.nu += s.nu;
          a.v2 += s.v2;
          a.nv += s.nv;
        }
        vd = a.dd / a.w - (a.d / a.w) * (a.d / a.w);
        vx = a.ss / a.w - (a.s / a.w) * (a.s / a.w);
        norm = vd / ((a.u2 / a.nu) * (a.v2 / a.nv));
        nsr = vx > 0 ? vd / vx : 0.0;
      };
      std::vector<int> all(static_cast<std::size_t>(trials));
      for (int t = 0; t < trials; ++t) all[static_cast<std::size_t>(t)] = t;
      D3RealCell c;
      c.matmul = static_cast<int>(mi);
      c.scheme = schemes[si];
      stats(all, c.norm_var, c.nsr, c.var_d, c.var_uv);
      for (int b = 0; b < replicates; ++b) {
        double n = 0, r = 0, x = 0, y = 0;
        stats(resample_indices(seed, stats_stream(0x0100 + static_cast<std::uint32_t>(mi)), b,
                               trials),
              n, r, x, y);
        c.rep_norm.push_back(n);
        c.rep_nsr.push_back(r);
      }
      c.norm_ci = widened_interval(c.rep_norm, c.norm_var, trials);
      c.nsr_ci = widened_interval(c.rep_nsr, c.nsr, trials);
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string d3_realistic_section(const ReportContext& ctx, const std::string& dir, int trials,
                                 int replicates, std::vector<Claim>& claims) {
  // D.3 with realistic operand statistics (d3_realistic.hpp): noise in units of the operands'
  // element variances, weight grad / forward against the k ratio, and the relative noise.
  const auto real = run_d3_realistic(ctx, trials, replicates);
  const auto mm = d3_matmuls();
  std::map<std::string, int> wgrad_k;
  for (const auto& m : mm) {
    if (m.matmul.rfind("weight", 0) == 0) wgrad_k[m.model] = m.k;
  }
  const int d3_trials = trials;
  Csv d3r({"model", "matmul", "k", "scheme", "var_d_over_su2_sv2", "lo", "hi", "noise_to_signal",
           "nsr_lo", "nsr_hi", "wgrad_over_this", "wgrad_over_this_lo", "wgrad_over_this_hi",
           "k_ratio"});
  std::string d3r_md, d3r_note;
  for (const auto& c : real) {
    const D3Matmul& m = mm[static_cast<std::size_t>(c.matmul)];
    const D3RealCell* w = nullptr;
    for (const auto& x : real) {
      const D3Matmul& mx = mm[static_cast<std::size_t>(x.matmul)];
      if (x.scheme == c.scheme && mx.model == m.model && mx.matmul.rfind("weight", 0) == 0) w = &x;
    }
    const double kr = static_cast<double>(wgrad_k[m.model]) / m.k;
    const bool is_w = m.matmul.rfind("weight", 0) == 0;
    Interval ci;
    double ratio = 0;
    if (w != nullptr && !is_w) {
      ratio = w->norm_var / c.norm_var;
      std::vector<double> rr;
      for (std::size_t b = 0; b < w->rep_norm.size() && b < c.rep_norm.size(); ++b) {
        rr.push_back(w->rep_norm[b] / c.rep_norm[b]);
      }
      ci = widened_interval(rr, ratio, d3_trials);
    }
    d3r.row()
        .add(m.model)
        .add(m.matmul)
        .add(static_cast<long long>(m.k))
        .add(c.scheme)
        .add(c.norm_var)
        .add(c.norm_ci.lo)
        .add(c.norm_ci.hi)
        .add(c.nsr)
        .add(c.nsr_ci.lo)
        .add(c.nsr_ci.hi);
    if (w != nullptr && !is_w) {
      d3r.add(ratio).add(ci.lo).add(ci.hi).add(kr);
    } else {
      d3r.add(std::string()).add(std::string()).add(std::string()).add(is_w ? 1.0 : kr);
    }
    d3r_md += "| " + m.model + " | " + m.matmul + " | " + std::to_string(m.k) + " | " + c.scheme +
              " | " + fmt_ci(c.norm_var, c.norm_ci.lo, c.norm_ci.hi) + " | " +
              fmt_ci(c.nsr, c.nsr_ci.lo, c.nsr_ci.hi) + " | " +
              (w != nullptr && !is_w ? fmt_ci(ratio, ci.lo, ci.hi) : std::string("-")) + " | " +
              fmt_g(kr, 4) + " |\n";
    if (w != nullptr && m.matmul.rfind("forward", 0) == 0 && c.scheme != "llm_int8") {
      Claim cl;
      cl.source = "Wortsman et al. 2023, arXiv 2304.13013";
      cl.where = "appendix D.3";
      cl.claim = m.model == "CLIP ViT-Huge"
                     ? "CLIP ViT-Huge's weight gradient is 51.2x noisier than its forward matmul "
                       "(if D.1 is a good model)"
                     : "LLaMA-65B's weight gradient is 16x less noisy than its forward matmul "
                       "(if D.1 is a good model)";
      cl.measured =
          std::string(
              "Var(d)/(s_u^2 s_v^2) weight grad / forward with realistic operands (X "
              "with outlier features x100, W ~ N(0, 1/in), dY log-normal token scales x "
              "Student-t4), ") +
          (c.scheme == "int8_row"
               ? "int8 row-wise on both operands (LLM.int8() vector-wise)"
               : "int8 SwitchBack (row-wise X/dY, tensor-wise W; X^T tensor-wise in the int8 "
                 "weight-grad hypothetical)");
      cl.set(ratio, ci.lo, ci.hi);
      cl.expected = fmt_g(kr, 4);
      cl.kind = "reproduction";
      judge(cl, kr, 1.25, "reproduced", "partly reproduced", "not reproduced");
      cl.link = "variance/d3_realistic.csv";
      claims.push_back(cl);
      d3r_note += "- " + m.model + ", " + c.scheme +
                  ": weight grad / forward = " + fmt_ci(ratio, ci.lo, ci.hi) +
                  " against the k ratio " + fmt_g(kr, 3) + ": " + cl.verdict + ".\n";
    }
  }
  write_file_atomic(dir + "/d3_realistic.csv", d3r.text());
  std::string md =
      "\n**D.3 with realistic operands.** The rows above draw i.i.d. N(0, 1) operands. Here "
      "X has outlier features (each feature an outlier with probability 2^-8, its column x100, "
      "as LLM.int8() describes them), W ~ N(0, 1/in), and dY has a log-normal scale per token "
      "(ln s ~ N(0, 1)) times Student-t (nu = 4) elements. Noise is Var(d) in units of the "
      "operands' element variances, Var(d)/(s_u^2 s_v^2) (the operands' absolute scales differ "
      "between matmuls), and the relative noise Var(d)/Var(<u,v>); the weight gradient's X^T "
      "rows are stratified (three regular features, one outlier feature, weighted by their "
      "shares). Schemes: `int8_row` (LLM.int8()'s vector-wise int8 on every matmul), "
      "`int8_switchback` (row-wise X and dY, tensor-wise W; SwitchBack itself computes the "
      "weight gradient in 16 bits, so its row is D.3's int8 hypothetical), `llm_int8` (forward "
      "only: the outlier columns in fp16, the rest vector-wise int8). " +
      std::to_string(d3_trials) +
      " trials ([d3_realistic.csv](d3_realistic.csv)):\n\n"
      "| model | matmul | k | scheme | Var(d)/(s_u^2 s_v^2) | Var(d)/Var(<u,v>) | wgrad/this | "
      "k ratio |\n|---|---|---|---|---|---|---|---|\n" +
      d3r_md + "\n" + d3r_note;
  return md;
}

}  // namespace exmy::reports
