#include "reports/mx_variance.hpp"

#include <cmath>

#include "reports/sections.hpp"
#include "sim/native/random_normal.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::reports {

namespace {

// This section's Philox streams: 0x0B000000 | dist << 16 | k index << 8 | operand. Its bootstrap
// draws are section 1's (variance_stats.hpp) with dist + 8, a range section 1 never uses.
constexpr std::uint32_t kStream = 0x0B000000u;
constexpr int kBootstrapDistOffset = 8;
constexpr int kStudentNu = 4;

void draw(std::uint64_t seed, InputDist dist, int di, int ki, int operand, int trial, int rows,
          int k, std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(rows) * k);
  const std::uint32_t st = kStream | (static_cast<std::uint32_t>(di) << 16) |
                           (static_cast<std::uint32_t>(ki) << 8) |
                           static_cast<std::uint32_t>(operand);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < k; ++c) {
      // Element (trial, r, c): counter ((trial rows + r) << 17) + c (k <= 2^17).
      const std::uint64_t j =
          ((static_cast<std::uint64_t>(trial) * rows + r) << 17) + static_cast<std::uint64_t>(c);
      const double x = dist == InputDist::student_t
                           ? native::student_t_fp64(seed, st, j, kStudentNu)
                           : native::normal_fp64(seed, st, j);
      out[static_cast<std::size_t>(r) * k + c] = static_cast<float>(x);
    }
  }
}

quant::Options options_of(const MxVarScheme& s) {
  quant::Options o;
  // The CLI's mx (blocks of 32) and nvfp4 (blocks of 16) schemes; other block lengths run the
  // same per-block functions with the block changed (not a CLI scheme).
  o.scheme.kind =
      s.scale == BlockScaleKind::e8m0_floor ? quant::Granularity::mx : quant::Granularity::nvfp4;
  o.scheme.block = static_cast<std::size_t>(s.block);
  o.target = quant::parse_target(s.elem);
  o.variant = s.scale == BlockScaleKind::e8m0_floor ? native::CastVariant::ocp
                                                    : native::CastVariant::torchao;
  o.scale_mode = native::MxScaleMode::floor;
  o.two_level = s.scale == BlockScaleKind::e4m3_two_level;
  return o;
}

struct SchemeTrial {
  std::vector<double> d;  // rows^2 errors
  double e2 = 0, ex = 0;  // sums over both operands' elements of e^2 and e x
};
struct Trial {
  std::vector<double> uv;
  double x2 = 0;
  std::vector<SchemeTrial> s;
};

Trial run_trial(const MxVarConfig& cfg, std::uint64_t seed, int di, int ki, int t) {
  const int k = cfg.ks[ki], rows = cfg.rows;
  std::vector<float> u, v;
  draw(seed, cfg.dists[di], di, ki, 0, t, rows, k, u);
  draw(seed, cfg.dists[di], di, ki, 1, t, rows, k, v);
  Trial tr;
  // Each product of two fp32 values is exact in fp64; sums are in fp64 in index order (their
  // rounding, below 1e-13 relative, is far below the sampling error).
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < rows; ++j) {
      double acc = 0;
      for (int c = 0; c < k; ++c) {
        acc += static_cast<double>(u[static_cast<std::size_t>(i) * k + c]) *
               v[static_cast<std::size_t>(j) * k + c];
      }
      tr.uv.push_back(acc);
    }
  }
  for (float x : u) tr.x2 += static_cast<double>(x) * x;
  for (float x : v) tr.x2 += static_cast<double>(x) * x;
  const std::vector<std::size_t> shape{static_cast<std::size_t>(rows), static_cast<std::size_t>(k)};
  for (const MxVarScheme& s : cfg.schemes) {
    const quant::Options o = options_of(s);
    const std::vector<float> uh = quant::dequantize(quant::quantize(u, shape, o), o);
    const std::vector<float> vh = quant::dequantize(quant::quantize(v, shape, o), o);
    SchemeTrial st;
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < rows; ++j) {
        double acc = 0;
        for (int c = 0; c < k; ++c) {
          const std::size_t a = static_cast<std::size_t>(i) * k + c;
          const std::size_t b = static_cast<std::size_t>(j) * k + c;
          acc += static_cast<double>(uh[a]) * vh[b] - static_cast<double>(u[a]) * v[b];
        }
        st.d.push_back(acc);
      }
    }
    for (std::size_t i = 0; i < u.size(); ++i) {
      const double eu = static_cast<double>(uh[i]) - u[i];
      const double ev = static_cast<double>(vh[i]) - v[i];
      st.e2 += eu * eu + ev * ev;
      st.ex += eu * u[i] + ev * v[i];
    }
    tr.s.push_back(std::move(st));
  }
  return tr;
}

struct Stats {
  double var_d = 0, var_uv = 0, s2 = 0, c = 0, sigma2 = 0;
};

double sample_var(double n, double s, double ss) {
  return n > 1 ? (ss - s * s / n) / (n - 1) : 0.0;
}

Stats stats_of(const std::vector<Trial>& trials, const std::vector<int>& pick, std::size_t si,
               int rows, int k) {
  double n = 0, sd = 0, sdd = 0, sx = 0, sxx = 0, e2 = 0, ex = 0, x2 = 0;
  for (int t : pick) {
    const Trial& tr = trials[static_cast<std::size_t>(t)];
    const SchemeTrial& st = tr.s[si];
    for (std::size_t p = 0; p < st.d.size(); ++p) {
      sd += st.d[p];
      sdd += st.d[p] * st.d[p];
      sx += tr.uv[p];
      sxx += tr.uv[p] * tr.uv[p];
    }
    n += static_cast<double>(st.d.size());
    e2 += st.e2;
    ex += st.ex;
    x2 += tr.x2;
  }
  const double ne = 2.0 * static_cast<double>(pick.size()) * rows * k;
  Stats s;
  s.var_d = sample_var(n, sd, sdd);
  s.var_uv = sample_var(n, sx, sxx);
  s.s2 = e2 / ne;
  s.c = ex / ne;
  s.sigma2 = x2 / ne;
  return s;
}

}  // namespace

const char* scale_format_name(BlockScaleKind k) {
  switch (k) {
    case BlockScaleKind::e8m0_floor:
      return "e8m0";
    case BlockScaleKind::e4m3:
      return "e4m3";
    case BlockScaleKind::e4m3_two_level:
      return "e4m3+fp32";
  }
  return "?";
}

MxVarConfig mx_variance_config(bool quick, int tiny) {
  MxVarConfig c;
  const auto mx = [](const char* e, int b) {
    return MxVarScheme{std::string("mx:") + e + "/" + std::to_string(b), e,
                       BlockScaleKind::e8m0_floor, b};
  };
  const auto nv = [](BlockScaleKind s, int b) {
    return MxVarScheme{
        std::string(s == BlockScaleKind::e4m3 ? "nvfp4-1l/" : "nvfp4/") + std::to_string(b),
        "e2m1fn", s, b};
  };
  c.schemes = {mx("e4m3fn", 16),
               mx("e4m3fn", 32),
               mx("e4m3fn", 64),
               mx("e5m2", 32),
               mx("e2m1fn", 16),
               mx("e2m1fn", 32),
               mx("e2m1fn", 64),
               nv(BlockScaleKind::e4m3_two_level, 16),
               nv(BlockScaleKind::e4m3_two_level, 32),
               nv(BlockScaleKind::e4m3_two_level, 64),
               nv(BlockScaleKind::e4m3, 16)};
  c.dists = {InputDist::gaussian, InputDist::student_t};
  c.rows = 8;
  if (tiny) {
    c.ks = {64, 256, 1024};
    c.trials = 24;
  } else if (quick) {
    c.ks = {64, 256, 1024, 4096};
    c.trials = 96;
  } else {
    // k = 65536 with 96 trials costs 150 s of CPU (measured), three times this.
    c.ks = {64, 256, 1024, 4096, 16384};
    c.trials = 128;
  }
  return c;
}

const MxVarCell* MxVarResults::find(InputDist d, const std::string& scheme, int k) const {
  for (const auto& c : cells) {
    if (c.dist == d && c.k == k &&
        config.schemes[static_cast<std::size_t>(c.scheme)].name == scheme)
      return &c;
  }
  return nullptr;
}

BlockLaw mx_law(const MxVarScheme& s, InputDist d, int rows, int k) {
  BlockLaw l;
  l.elem = elem_grid(s.elem.c_str());
  l.scale = s.scale;
  l.block = s.block;
  l.student_nu = d == InputDist::student_t ? kStudentNu : 0;
  l.tensor_elements = static_cast<double>(rows) * k;
  if (s.scale == BlockScaleKind::e4m3_two_level) l.x_points = 256;  // 16 bins of A, one each
  return l;
}

MxVarResults run_mx_variance(const ReportContext& ctx, const MxVarConfig& cfg, bool laws) {
  MxVarResults res;
  res.config = cfg;
  res.replicates = bootstrap_replicates(ctx.options().quick, ctx.options().tiny);
  const std::uint64_t seed = ctx.options().seed;
  double total = 0;
  for (int k : cfg.ks) total += static_cast<double>(k) * cfg.dists.size();
  Progress progress(ctx, "mx-variance", total);
  double done = 0;
  std::vector<int> all(static_cast<std::size_t>(cfg.trials));
  for (int t = 0; t < cfg.trials; ++t) all[static_cast<std::size_t>(t)] = t;
  // Closed forms first, one job per law: the two-level law depends on k (through the tensor
  // absmax's law), the others do not.
  const std::size_t nd = cfg.dists.size(), ns = cfg.schemes.size(), nk = cfg.ks.size();
  std::vector<ElementMoments> law_of(nd * ns * nk);
  if (laws) {
    struct Job {
      std::size_t di, si, ki;
    };
    std::vector<Job> jobs;
    for (std::size_t di = 0; di < nd; ++di) {
      for (std::size_t si = 0; si < ns; ++si) {
        const bool per_k = cfg.schemes[si].scale == BlockScaleKind::e4m3_two_level;
        for (std::size_t ki = 0; ki < (per_k ? nk : 1); ++ki) jobs.push_back({di, si, ki});
      }
    }
    progress.step("closed forms (" + std::to_string(jobs.size()) + " laws)", 0);
    std::vector<ElementMoments> out(jobs.size());
    ctx.parallel_for(jobs.size(), [&](std::size_t j) {
      throw_if_interrupted();
      const Job& b = jobs[j];
      out[j] =
          block_error_moments(mx_law(cfg.schemes[b.si], cfg.dists[b.di], cfg.rows, cfg.ks[b.ki]));
    });
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const Job& b = jobs[j];
      const bool per_k = cfg.schemes[b.si].scale == BlockScaleKind::e4m3_two_level;
      for (std::size_t ki = 0; ki < nk; ++ki) {
        if (!per_k || ki == b.ki) law_of[(b.di * ns + b.si) * nk + ki] = out[j];
      }
    }
  }
  for (std::size_t di = 0; di < cfg.dists.size(); ++di) {
    for (std::size_t ki = 0; ki < cfg.ks.size(); ++ki) {
      const int k = cfg.ks[ki];
      progress.step(std::string(dist_name(cfg.dists[di])) + " k=" + std::to_string(k), done);
      done += k;
      std::vector<Trial> trials(static_cast<std::size_t>(cfg.trials));
      ctx.parallel_for(trials.size(), [&](std::size_t t) {
        throw_if_interrupted();
        trials[t] =
            run_trial(cfg, seed, static_cast<int>(di), static_cast<int>(ki), static_cast<int>(t));
      });
      std::vector<std::vector<int>> draws(static_cast<std::size_t>(res.replicates));
      for (int b = 0; b < res.replicates; ++b) {
        draws[static_cast<std::size_t>(b)] = bootstrap_draw(
            seed, kBootstrapDistOffset + static_cast<int>(di), static_cast<int>(ki), b, cfg.trials);
      }
      const std::size_t first = res.cells.size();
      res.cells.resize(first + cfg.schemes.size());
      ctx.parallel_for(cfg.schemes.size(), [&](std::size_t si) {
        const Stats a = stats_of(trials, all, si, cfg.rows, k);
        MxVarCell c;
        c.dist = cfg.dists[di];
        c.scheme = static_cast<int>(si);
        c.k = k;
        c.samples = static_cast<long long>(cfg.trials) * cfg.rows * cfg.rows;
        c.var_d = a.var_d;
        c.var_uv = a.var_uv;
        c.nsr = a.var_uv > 0 ? a.var_d / a.var_uv : 0.0;
        c.s2 = a.s2;
        c.c = a.c;
        c.sigma2 = a.sigma2;
        std::vector<double> rs2;
        for (const auto& pick : draws) {
          const Stats r = stats_of(trials, pick, si, cfg.rows, k);
          c.rep_var_d.push_back(r.var_d);
          c.rep_nsr.push_back(r.var_uv > 0 ? r.var_d / r.var_uv : 0.0);
          rs2.push_back(r.s2);
        }
        c.var_d_ci = percentile_interval(c.rep_var_d);
        c.nsr_ci = percentile_interval(c.rep_nsr);
        c.s2_ci = percentile_interval(rs2);
        if (laws) {
          c.closed = law_of[(di * ns + si) * nk + ki];
          c.var_d_closed = var_d_closed(c.closed, c.closed, k);
          const double sig2 = c.closed.sigma2;
          c.nsr_closed = c.var_d_closed / (static_cast<double>(k) * sig2 * sig2);
        }
        res.cells[first + si] = std::move(c);
      });
    }
  }
  progress.step("done", total);
  return res;
}

LawCheck mx_law_check(const MxVarResults& r, InputDist d, const std::string& scheme,
                      const std::vector<double>& closed) {
  LawCheck out;
  std::vector<const MxVarCell*> cells;
  for (int k : r.config.ks) {
    const MxVarCell* c = r.find(d, scheme, k);
    if (c != nullptr) cells.push_back(c);
  }
  if (cells.empty() || (!closed.empty() && closed.size() != cells.size())) return out;
  auto law = [&](std::size_t i) { return closed.empty() ? cells[i]->var_d_closed : closed[i]; };
  double lr = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (!(law(i) > 0)) return out;
    lr += std::log(cells[i]->var_d / law(i)) / static_cast<double>(cells.size());
  }
  out.ratio = std::exp(lr);
  std::vector<double> reps;
  const std::size_t nrep = cells.front()->rep_var_d.size();
  for (std::size_t b = 0; b < nrep; ++b) {
    double s = 0;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      s += std::log(cells[i]->rep_var_d[b] / law(i)) / static_cast<double>(cells.size());
    }
    reps.push_back(std::exp(s));
  }
  out.ci = percentile_interval(reps);
  out.ok = true;
  return out;
}

std::string mx_law_verdict(const LawCheck& c) {
  if (!c.ok) return "inconclusive";
  return verdict_for(c.ci.lo, c.ci.hi, c.ratio, 1.0, 1.03, "agrees", "agrees within 3%",
                     "disagrees");
}

}  // namespace exmy::reports
