#include "reports/variance_experiment.hpp"

#include <string>
#include <vector>

#include "reports/stats_intervals.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/fast/exact_dot_simd.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/exact_dot.hpp"
#include "sim/native/mask.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/random_normal.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::reports {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Outlier columns: each inner-dimension index is an outlier feature of U with probability
// 2^-7 (its word < 2^25), and such a column is multiplied by 20 (in fp64, then rounded to fp32):
// the systematic feature outliers of LLM.int8() (seed 000 cites them for row-wise failures).
constexpr std::uint32_t kOutlierThreshold = 1u << 25;
constexpr double kOutlierScale = 20.0;
constexpr int kStudentNu = 4;

// Element (r, c) of trial t has counter index ((t * rows + r) << 16) + c: k <= 2^16.
std::uint64_t element_index(int trial, int rows, int r, int c) {
  return ((static_cast<std::uint64_t>(trial) * rows + r) << 16) + static_cast<std::uint64_t>(c);
}

void draw_operand(std::uint64_t seed, InputDist dist, int di, int kidx, int operand, int trial,
                  int rows, int k, std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(rows) * k);
  const std::uint32_t stream = variance_data_stream(di, kidx, operand);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < k; ++c) {
      const std::uint64_t j = element_index(trial, rows, r, c);
      double x = dist == InputDist::student_t ? native::student_t_fp64(seed, stream, j, kStudentNu)
                                              : native::normal_fp64(seed, stream, j);
      out[static_cast<std::size_t>(r) * k + c] = static_cast<float>(x);
    }
  }
  if (dist == InputDist::outliers && operand == 0) {
    const std::uint32_t os = variance_data_stream(di, kidx, 2);
    for (int c = 0; c < k; ++c) {
      const std::uint64_t j = static_cast<std::uint64_t>(trial) * 65536 + c;
      if (native::philox_word(seed, os, j) >= kOutlierThreshold) continue;
      for (int r = 0; r < rows; ++r) {
        float& x = out[static_cast<std::size_t>(r) * k + c];
        x = static_cast<float>(static_cast<double>(x) * kOutlierScale);
      }
    }
  }
}

// x^ for one operand under one scheme.
//
// `rest_absmax` > 0 (tensor-wise schemes only): the operand is a sample of a larger tensor whose
// other elements have this absmax; the tensor's scale is then max(|x|, rest_absmax). The value is
// appended as one more element of the (tensor-wise, hence layout-free) quantization and its
// output dropped.
void quantize_operand(const VarScheme& s, bool rowwise, std::uint64_t sr_seed, int rows, int k,
                      const std::vector<float>& x, std::vector<float>& xhat,
                      float rest_absmax = 0.0f) {
  if (rest_absmax > 0.0f && !rowwise && s.kind != SchemeKind::mask &&
      s.kind != SchemeKind::elementwise) {
    std::vector<float> ext(x);
    ext.push_back(rest_absmax);
    std::vector<float> eh;
    quantize_operand(s, false, sr_seed, 1, static_cast<int>(ext.size()), ext, eh);
    eh.pop_back();
    xhat.swap(eh);
    return;
  }
  if (s.kind == SchemeKind::mask) {
    // Seed 003 thresholds to the ExMy limits and bit-masks the mantissa (SEMANTICS 2.1).
    xhat.resize(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      xhat[i] = native::float_of(mask_fp32(native::bits_of(x[i]), s.fmt.exp_bits, s.fmt.man_bits,
                                           MaskOuter::clamp, MaskInner::min));
    }
    return;
  }
  if (s.kind == SchemeKind::elementwise) {
    // x^_i = to_float(convert(fp32 -> fmt, r, x_i, sr_word(philox(sr_seed, element-cast stream,
    // i), R))): fast::cast_to_codes computes exactly these codes (it is native::convert element
    // by element, with the same Philox words: sim/fast/array_cast.hpp) and decode_table holds
    // native::to_float of every code. The E8My formats here have at most 16 bits.
    xhat.resize(x.size());
    const Rounding r{s.mode, s.sr_bits, Overflow::none};
    if (fast::array_cast_supported(s.fmt)) {
      const std::size_t cb = s.fmt.total_bits() <= 8 ? 1 : 2;
      std::vector<std::uint8_t> codes(x.size() * cb);
      fast::cast_to_codes(x.data(), fast::ArrayInput::fp32, x.size(), codes.data(), s.fmt, r,
                          sr_seed, quant::kStreamQuantCast, 0, 1);
      const std::vector<float>& table = fast::decode_table(s.fmt);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::uint32_t c =
            cb == 1 ? codes[i] : codes[2 * i] | (static_cast<std::uint32_t>(codes[2 * i + 1]) << 8);
        xhat[i] = table[c];
      }
      return;
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::uint32_t w = 0;
      if (s.mode == RoundMode::sr) {
        w = native::sr_word(native::philox_word(sr_seed, quant::kStreamQuantCast, i), s.sr_bits);
      }
      const Encoded e = native::convert(formats::fp32, s.fmt, r, native::bits_of(x[i]), w);
      xhat[i] = native::to_float(s.fmt, e.code);
    }
    return;
  }
  quant::Options o;
  o.scheme.kind = rowwise ? quant::Granularity::row : quant::Granularity::tensor;
  o.target =
      s.kind == SchemeKind::int8_absmax ? quant::parse_target("int8") : quant::float_target(s.fmt);
  o.variant = native::CastVariant::absmax;
  // SwitchBack: quantize_rowwise divides then multiplies; quantize_global multiplies by the
  // reciprocal of the absmax.
  o.order = rowwise ? native::ScaleOrder::div_mul : native::ScaleOrder::recip_mul;
  o.mode = s.mode;
  o.sr_bits = s.sr_bits;
  o.seed = sr_seed;
  const std::vector<std::size_t> shape{static_cast<std::size_t>(rows), static_cast<std::size_t>(k)};
  xhat = quant::dequantize(quant::quantize(x, shape, o), o);
}

// Sums of one trial for one scheme: the bootstrap resamples whole trials.
struct SchemeTrial {
  std::vector<double> d;  // rows^2 errors d = <u^, v^> - <u, v>, exact then rounded once
  std::vector<double> w;  // rows^2 <u^, v^>, exact then rounded once
  double sum_eu2 = 0, sum_ev2 = 0, sum_eu = 0, sum_ev = 0, sum_euu = 0, sum_evv = 0;
  double sum_rho = 0, sum_rho2 = 0, n_rho = 0;
};
struct Trial {
  std::vector<double> uv;  // rows^2 exact <u, v>, rounded once
  double sum_u2 = 0, sum_v2 = 0;
  std::vector<SchemeTrial> schemes;
};

Trial run_trial(const VarianceConfig& cfg, std::uint64_t seed, int di, int kidx, int trial) {
  const InputDist dist = cfg.dists[di];
  const int k = cfg.ks[kidx], rows = cfg.rows;
  std::vector<float> u, v, uh, vh;
  draw_operand(seed, dist, di, kidx, 0, trial, rows, k, u);
  draw_operand(seed, dist, di, kidx, 1, trial, rows, k, v);
  Trial t;
  // The exact products (fast::exact_dots: the sums add_product would accumulate, vectorised).
  std::vector<native::ExactDot32> base(static_cast<std::size_t>(rows) * rows);
  for (auto& acc : base) acc.clear();
  fast::exact_dots(u.data(), rows, v.data(), rows, k, base.data());
  for (const auto& acc : base) t.uv.push_back(acc.to_double());
  std::vector<native::ExactDot32> qacc(base.size());
  for (float x : u) t.sum_u2 += static_cast<double>(x) * x;
  for (float x : v) t.sum_v2 += static_cast<double>(x) * x;
  for (std::size_t si = 0; si < cfg.schemes.size(); ++si) {
    const VarScheme& s = cfg.schemes[si];
    const int sidx = static_cast<int>(si);
    quantize_operand(s, s.u_rowwise, variance_sr_seed(seed, di, kidx, sidx, 0, trial), rows, k, u,
                     uh);
    quantize_operand(s, s.v_rowwise, variance_sr_seed(seed, di, kidx, sidx, 1, trial), rows, k, v,
                     vh);
    SchemeTrial st;
    for (auto& acc : qacc) acc.clear();
    fast::exact_dots(uh.data(), rows, vh.data(), rows, k, qacc.data());
    for (std::size_t p = 0; p < qacc.size(); ++p) {
      st.w.push_back(qacc[p].to_double());
      qacc[p].add(base[p], /*subtract=*/true);
      st.d.push_back(qacc[p].to_double());
    }
    // Element errors: u^ - u is exact in fp64 (both are fp32 within a factor ~2 of each other,
    // or one is zero); the squares and sums round, which statistics tolerate.
    for (std::size_t i = 0; i < u.size(); ++i) {
      const double e = static_cast<double>(uh[i]) - u[i];
      st.sum_eu2 += e * e;
      st.sum_eu += e;
      st.sum_euu += e * u[i];
      if (u[i] != 0.0f) {
        const double rho = e / u[i];
        st.sum_rho += rho;
        st.sum_rho2 += rho * rho;
        st.n_rho += 1;
      }
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double e = static_cast<double>(vh[i]) - v[i];
      st.sum_ev2 += e * e;
      st.sum_ev += e;
      st.sum_evv += e * v[i];
      if (v[i] != 0.0f) {
        const double rho = e / v[i];
        st.sum_rho += rho;
        st.sum_rho2 += rho * rho;
        st.n_rho += 1;
      }
    }
    t.schemes.push_back(std::move(st));
  }
  return t;
}

}  // namespace

namespace {
double sample_var(double n, double s, double ss) {
  return n > 1 ? (ss - s * s / n) / (n - 1) : 0.0;
}
}  // namespace

std::uint64_t variance_sr_seed(std::uint64_t seed, int dist, int kidx, int scheme, int operand,
                               int trial) {
  const std::uint64_t packed =
      (static_cast<std::uint64_t>(dist) << 56) | (static_cast<std::uint64_t>(kidx) << 48) |
      (static_cast<std::uint64_t>(scheme) << 40) | (static_cast<std::uint64_t>(operand) << 32) |
      static_cast<std::uint32_t>(trial);
  return seed ^ splitmix64(packed);
}

std::uint32_t variance_data_stream(int dist, int kidx, int purpose) {
  // Section 1 owns streams 0x01000000..0x01FFFFFF: dist, k index and purpose packed.
  return 0x01000000u | (static_cast<std::uint32_t>(dist) << 16) |
         (static_cast<std::uint32_t>(kidx) << 8) | static_cast<std::uint32_t>(purpose);
}

const VarianceCell* VarianceResults::find(InputDist d, const std::string& scheme, int k) const {
  for (const auto& c : cells) {
    if (c.dist == d && c.k == k && config.schemes[c.scheme].name == scheme) return &c;
  }
  return nullptr;
}

std::vector<D3ShapeCell> run_d3_shapes(const ReportContext& ctx, int trials, int replicates) {
  const auto mm = d3_matmuls();
  std::vector<VarScheme> schemes;
  for (const auto& s : variance_config(false, 0).schemes) {
    if (s.name == "int8_tensor" || s.name == "int8_row" || s.name == "e4m3fn_tensor" ||
        s.name == "e5m2_tensor") {
      schemes.push_back(s);
    }
  }
  const std::uint64_t seed = ctx.options().seed;
  const int rows = 4;
  std::vector<D3ShapeCell> out;
  Progress progress(ctx, "variance", static_cast<double>(mm.size()));
  for (std::size_t mi = 0; mi < mm.size(); ++mi) {
    const D3Matmul& m = mm[mi];
    progress.step("D.3 shapes: " + m.model + " " + m.matmul + " (k=" + std::to_string(m.k) + ")",
                  static_cast<double>(mi));
    // Streams: the D.3 shapes use k index 128 + mi, so they never meet the sweep's draws.
    const int kidx = 128 + static_cast<int>(mi);
    struct T {
      std::vector<std::vector<double>> d;  // per scheme, rows^2 errors
    };
    std::vector<T> tr(static_cast<std::size_t>(trials));
    ctx.parallel_for(tr.size(), [&](std::size_t t) {
      std::vector<float> u, v, uh, vh;
      draw_operand(seed, InputDist::gaussian, 0, kidx, 0, static_cast<int>(t), rows, m.k, u);
      draw_operand(seed, InputDist::gaussian, 0, kidx, 1, static_cast<int>(t), rows, m.k, v);
      // The absmax of the rest of each tensor (N - rows k elements), drawn from the law of
      // the maximum of that many |N(0,1)| by inversion of a 53-bit uniform.
      float rest[2];
      for (int op = 0; op < 2; ++op) {
        const double n = static_cast<double>(op == 0 ? m.u_elements : m.v_elements) -
                         static_cast<double>(rows) * m.k;
        const std::uint32_t st = variance_data_stream(0, kidx, 3 + op);
        const std::uint64_t w =
            (static_cast<std::uint64_t>(native::philox_word(seed, st, 2 * t)) << 21) ^
            native::philox_word(seed, st, 2 * t + 1);
        const double p = (static_cast<double>(w & ((1ull << 53) - 1)) + 0.5) / 9007199254740992.0;
        rest[op] = static_cast<float>(gaussian_max_quantile(n, p));
      }
      std::vector<native::ExactDot32> base(static_cast<std::size_t>(rows) * rows);
      for (auto& acc : base) acc.clear();
      fast::exact_dots(u.data(), rows, v.data(), rows, m.k, base.data());
      std::vector<native::ExactDot32> qacc(base.size());
      tr[t].d.resize(schemes.size());
      for (std::size_t si = 0; si < schemes.size(); ++si) {
        const VarScheme& s = schemes[si];
        quantize_operand(s, s.u_rowwise, 0, rows, m.k, u, uh, rest[0]);
        quantize_operand(s, s.v_rowwise, 0, rows, m.k, v, vh, rest[1]);
        for (auto& acc : qacc) acc.clear();
        fast::exact_dots(uh.data(), rows, vh.data(), rows, m.k, qacc.data());
        for (std::size_t p = 0; p < qacc.size(); ++p) {
          qacc[p].add(base[p], /*subtract=*/true);
          tr[t].d[si].push_back(qacc[p].to_double());
        }
      }
    });
    for (std::size_t si = 0; si < schemes.size(); ++si) {
      auto var_of = [&](const std::vector<int>& pick) {
        double n = 0, a = 0, b = 0;
        for (int t : pick) {
          for (double x : tr[static_cast<std::size_t>(t)].d[si]) {
            n += 1;
            a += x;
            b += x * x;
          }
        }
        return sample_var(n, a, b);
      };
      std::vector<int> all(static_cast<std::size_t>(trials));
      for (int t = 0; t < trials; ++t) all[static_cast<std::size_t>(t)] = t;
      D3ShapeCell c;
      c.matmul = static_cast<int>(mi);
      c.scheme = schemes[si].name;
      c.var_d = var_of(all);
      for (int b = 0; b < replicates; ++b) {
        c.rep_var_d.push_back(var_of(bootstrap_draw(seed, 0, kidx, b, trials)));
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

double variance_work(const VarianceConfig& cfg, int k) {
  return static_cast<double>(k) * static_cast<double>(cfg.schemes.size() + 1);
}

namespace {

// The statistics of one cell from a multiset of trials (all of them, or a bootstrap replicate).
struct CellStats {
  double var_d = 0, var_w = 0, var_uv = 0, mean_d = 0;
  double su2 = 0, sv2 = 0, qu2 = 0, qv2 = 0, mu = 0, mv = 0, cu = 0, cv = 0;
  double rho = 0, rho2 = 0;
};

CellStats cell_stats(const std::vector<Trial>& trials, const std::vector<int>& pick, std::size_t si,
                     int rows, int k) {
  double n_d = 0, sd = 0, sdd = 0, sw = 0, sww = 0, sx = 0, sxx = 0;
  double su2 = 0, sv2 = 0, eu2 = 0, ev2 = 0, eu = 0, ev = 0, euu = 0, evv = 0;
  double r1 = 0, r2 = 0, nr = 0;
  for (int t : pick) {
    const Trial& tr = trials[static_cast<std::size_t>(t)];
    const SchemeTrial& st = tr.schemes[si];
    for (std::size_t p = 0; p < st.d.size(); ++p) {
      sd += st.d[p];
      sdd += st.d[p] * st.d[p];
      sw += st.w[p];
      sww += st.w[p] * st.w[p];
      sx += tr.uv[p];
      sxx += tr.uv[p] * tr.uv[p];
    }
    n_d += static_cast<double>(st.d.size());
    su2 += tr.sum_u2;
    sv2 += tr.sum_v2;
    eu2 += st.sum_eu2;
    ev2 += st.sum_ev2;
    eu += st.sum_eu;
    ev += st.sum_ev;
    euu += st.sum_euu;
    evv += st.sum_evv;
    r1 += st.sum_rho;
    r2 += st.sum_rho2;
    nr += st.n_rho;
  }
  const double n_elem = static_cast<double>(pick.size()) * rows * k;
  CellStats c;
  c.mean_d = sd / n_d;
  c.var_d = sample_var(n_d, sd, sdd);
  c.var_w = sample_var(n_d, sw, sww);
  c.var_uv = sample_var(n_d, sx, sxx);
  c.su2 = su2 / n_elem;
  c.sv2 = sv2 / n_elem;
  c.qu2 = eu2 / n_elem;
  c.qv2 = ev2 / n_elem;
  c.mu = eu / n_elem;
  c.mv = ev / n_elem;
  c.cu = euu / n_elem;
  c.cv = evv / n_elem;
  c.rho = nr > 0 ? r1 / nr : 0;
  c.rho2 = nr > 0 ? r2 / nr : 0;
  return c;
}

double eq12(const CellStats& c, int k) {
  return k * (c.qu2 * c.sv2 + c.qv2 * c.su2 + c.qu2 * c.qv2);
}

// Closed-form (s_qu^2 + s_qv^2) / 2 for the int8 absmax schemes (VarianceCell).
double int8_closed_sigma_q2(const VarScheme& s, InputDist dist, int rows, int k) {
  if (s.kind != SchemeKind::int8_absmax || dist == InputDist::outliers) return 0.0;
  const int nu = dist == InputDist::student_t ? 4 : 0;
  const double div = (s.mode == RoundMode::sr ? 6.0 : 12.0) * 127.0 * 127.0;
  const double mu = expected_max_sq(s.u_rowwise ? k : static_cast<double>(rows) * k, nu);
  const double mv = expected_max_sq(s.v_rowwise ? k : static_cast<double>(rows) * k, nu);
  return 0.5 * (mu + mv) / div;
}

}  // namespace

VarianceResults run_variance_experiment(const ReportContext& ctx, const VarianceConfig& cfg) {
  VarianceResults res;
  res.config = cfg;
  res.replicates = bootstrap_replicates(ctx.options().quick, ctx.options().tiny);
  const int rows = cfg.rows;
  double total = 0;
  for (int k : cfg.ks) total += variance_work(cfg, k) * static_cast<double>(cfg.dists.size());
  Progress progress(ctx, "variance", total);
  double done = 0;
  std::vector<int> all(static_cast<std::size_t>(cfg.trials));
  for (int t = 0; t < cfg.trials; ++t) all[static_cast<std::size_t>(t)] = t;
  for (std::size_t di = 0; di < cfg.dists.size(); ++di) {
    for (std::size_t ki = 0; ki < cfg.ks.size(); ++ki) {
      const int k = cfg.ks[ki];
      progress.step(std::string(dist_name(cfg.dists[di])) + " k=" + std::to_string(k) + " (" +
                        std::to_string(cfg.trials) + " trials x " +
                        std::to_string(cfg.schemes.size()) + " schemes)",
                    done);
      done += variance_work(cfg, k);
      std::vector<Trial> trials(cfg.trials);
      ctx.parallel_for(trials.size(), [&](std::size_t t) {
        trials[t] = run_trial(cfg, ctx.options().seed, static_cast<int>(di), static_cast<int>(ki),
                              static_cast<int>(t));
      });
      // Bootstrap draws of this (dist, k), shared by every scheme (paired intervals).
      std::vector<std::vector<int>> draws(static_cast<std::size_t>(res.replicates));
      for (int b = 0; b < res.replicates; ++b) {
        draws[static_cast<std::size_t>(b)] = bootstrap_draw(
            ctx.options().seed, static_cast<int>(di), static_cast<int>(ki), b, cfg.trials);
      }
      const std::size_t first = res.cells.size();
      res.cells.resize(first + cfg.schemes.size());
      // Sums in trial order (or replicate draw order): independent of the thread count.
      ctx.parallel_for(cfg.schemes.size(), [&](std::size_t si) {
        const CellStats a = cell_stats(trials, all, si, rows, k);
        VarianceCell c;
        c.dist = cfg.dists[di];
        c.scheme = static_cast<int>(si);
        c.k = k;
        c.samples = static_cast<long long>(cfg.trials) * rows * rows;
        c.mean_d = a.mean_d;
        c.var_d = a.var_d;
        c.var_uv = a.var_uv;
        c.var_w = a.var_w;
        c.delta_var = a.var_w - a.var_uv;
        c.sigma_u2 = a.su2;
        c.sigma_v2 = a.sv2;
        c.sigma_qu2 = a.qu2;
        c.sigma_qv2 = a.qv2;
        c.mean_qu = a.mu;
        c.mean_qv = a.mv;
        c.cov_qu = a.cu;
        c.cov_qv = a.cv;
        c.predicted = eq12(a, k);
        c.predicted_corr = c.predicted + k * (2 * c.cov_qu * c.cov_qv + 2 * c.sigma_qu2 * c.cov_qv +
                                              2 * c.sigma_qv2 * c.cov_qu -
                                              (c.mean_qu * c.mean_qv) * (c.mean_qu * c.mean_qv));
        c.predicted_delta =
            c.predicted_corr +
            2.0 * k * (c.cov_qu * c.sigma_v2 + c.cov_qv * c.sigma_u2 + c.cov_qu * c.cov_qv);
        c.rho_mean = a.rho;
        c.rho_sq = a.rho2;
        c.mask_factor = a.rho2 > 0 ? 1.0 + a.rho * a.rho / a.rho2 : 0.0;
        c.sigma_q2_closed = int8_closed_sigma_q2(cfg.schemes[si], c.dist, rows, k);
        std::vector<double> dv, ratio, dratio;
        for (const auto& pick : draws) {
          const CellStats r = cell_stats(trials, pick, si, rows, k);
          c.rep_var_d.push_back(r.var_d);
          c.rep_sigma_q2.push_back(0.5 * (r.qu2 + r.qv2));
          c.rep_nsr.push_back(r.var_uv > 0 ? r.var_d / r.var_uv : 0.0);
          dv.push_back(r.var_w - r.var_uv);
          const double p = eq12(r, k);
          ratio.push_back(p > 0 ? r.var_d / p : 0.0);
          dratio.push_back(p > 0 ? (r.var_w - r.var_uv) / p : 0.0);
        }
        // Percentile intervals widened by sqrt(T / (T - 1)) for T resampled trials
        // (stats_intervals.hpp; the coverage simulation is in tests/report).
        const int nt = cfg.trials;
        c.var_d_ci = widened_interval(c.rep_var_d, c.var_d, nt);
        c.sigma_q2_ci = widened_interval(c.rep_sigma_q2, 0.5 * (c.sigma_qu2 + c.sigma_qv2), nt);
        c.nsr_ci = widened_interval(c.rep_nsr, c.var_uv > 0 ? c.var_d / c.var_uv : 0.0, nt);
        c.delta_var_ci = widened_interval(dv, c.delta_var, nt);
        c.ratio_ci = widened_interval(ratio, c.predicted > 0 ? c.var_d / c.predicted : 0.0, nt);
        c.delta_ratio_ci =
            widened_interval(dratio, c.predicted > 0 ? c.delta_var / c.predicted : 0.0, nt);
        res.cells[first + si] = std::move(c);
      });
    }
  }
  progress.step("done", total);
  return res;
}

}  // namespace exmy::reports
