// Section 5's extra rows (extrabits_rows.hpp; SEMANTICS 14.5).
#include "reports/extrabits_rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "reports/mlp_adam.hpp"
#include "reports/output_files.hpp"
#include "reports/stats_intervals.hpp"
#include "sim/native/random_normal.hpp"
#include "sim/native/split_float.hpp"
#include "sim/optim/memory.hpp"
#include "sim/optim/optim.hpp"

namespace exmy::reports {

namespace {

const char* kSrc = "Lewandowski and Kosson, Memory efficient mixed precision optimizers";
// Streams 0x05100000.. (section 5's range): 0 initial values, 1 + step the addends; 0x05200000
// the master-weight check's initial values (0) and gradients (1 + step).
constexpr std::uint32_t kStreamSr = 0x05100000u;
constexpr std::uint32_t kStreamMaster = 0x05200000u;
constexpr int kBlock = 256;  // elements per resampled block

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Per-block sums of (16-bit value - exact)^2 after step 1 and after step K of x <- x + y.
struct SrRun {
  std::vector<double> e1, ek;
};
SrRun run_sr(const std::string& fmt, std::uint64_t seed, int n, int K) {
  const native::SplitFormat f = optim::parse_split_format(fmt);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] =
        static_cast<float>(native::normal_fp64(seed, kStreamSr, static_cast<std::uint64_t>(i)));
  }
  std::vector<double> exact(x.begin(), x.end());
  optim::SplitTensor st = optim::split_tensor(x, f, seed ^ 0x5C000000ull);
  SrRun r;
  const std::size_t nb = static_cast<std::size_t>(n / kBlock);
  for (int s = 1; s <= K; ++s) {
    std::vector<float> cur = optim::join_tensor(st);
    for (std::size_t i = 0; i < cur.size(); ++i) {
      const float y = static_cast<float>(
          native::normal_fp64(seed, kStreamSr + static_cast<std::uint32_t>(s), i));
      exact[i] += static_cast<double>(y);
      cur[i] = cur[i] + y;
    }
    st = optim::split_tensor(cur, f, seed ^ (0x5C000000ull + static_cast<std::uint64_t>(s)));
    if (s == 1 || s == K) {
      std::vector<double> e(nb, 0.0);
      for (std::size_t i = 0; i < cur.size(); ++i) {
        const double d = static_cast<double>(native::split_hi_value(st.hi[i], f)) - exact[i];
        e[i / kBlock] += d * d;
      }
      (s == 1 ? r.e1 : r.ek) = e;
      if (s == 1 && K == 1) r.ek = e;
    }
  }
  return r;
}

// The norm-wise error ratio sqrt(sum e_a^2 / sum e_b^2), blocks paired, bootstrap over blocks.
Estimate norm_ratio(const std::vector<double>& a, const std::vector<double>& b, std::uint64_t seed,
                    std::uint32_t purpose, int reps) {
  Estimate e = bootstrap_ratio(a, b, seed, stats_stream(purpose), reps);
  e.value = std::sqrt(e.value);
  e.lo = std::sqrt(e.lo);
  e.hi = std::sqrt(e.hi);
  return e;
}

}  // namespace

std::string extrabits_rows(const ReportContext& ctx, const std::string& dir,
                           std::vector<Claim>& claims) {
  const bool tiny = ctx.options().tiny != 0, quick = ctx.options().quick;
  const std::uint64_t seed = ctx.options().seed;
  const int reps = tiny ? 200 : quick ? 400 : 1000;
  std::string md;

  // ---- 1. Stochastic rounding against basic extra bits (figure 6, "Stochastic Rounding").
  const int n = tiny ? 4096 : quick ? 16384 : 65536, K = tiny ? 8 : quick ? 64 : 256;
  ctx.progress("extrabits", "sr vs basic extra bits: " + std::to_string(n) + " elements, " +
                                std::to_string(K) + " adds");
  const std::vector<std::string> sf = {"fp16+8", "fp16+8:sr", "bf16+8", "bf16+8:sr"};
  std::vector<SrRun> runs(sf.size());
  ctx.parallel_for(sf.size(), [&](std::size_t i) { runs[i] = run_sr(sf[i], seed, n, K); });
  Csv sc({"format", "basic", "adds", "blocks", "norm_error_ratio_sr_over_basic", "lo", "hi"});
  md += "## Stochastic rounding against basic extra bits\n\n" + std::to_string(n) +
        " elements x ~ N(0, 1) stored split, then x <- x + y (y ~ N(0, 1), one fp32 add, stored "
        "again); the 16-bit value's norm-wise error against the exact sum, :sr over basic, "
        "paired by element block (" +
        std::to_string(kBlock) + " elements), 95% block-bootstrap interval:\n\n" +
        "| format | after 1 add | after " + std::to_string(K) + " adds |\n|---|---|---|\n";
  Estimate fp16_1, fp16_k;
  for (std::size_t i = 0; i + 1 < sf.size(); i += 2) {
    const Estimate a = norm_ratio(runs[i + 1].e1, runs[i].e1, seed, 0x0501 + i, reps);
    const Estimate b = norm_ratio(runs[i + 1].ek, runs[i].ek, seed, 0x0511 + i, reps);
    if (i == 0) {
      fp16_1 = a;
      fp16_k = b;
    }
    for (const auto& [steps, e] : {std::pair<int, Estimate>{1, a}, {K, b}}) {
      sc.row()
          .add(sf[i + 1])
          .add(sf[i])
          .add(static_cast<long long>(steps))
          .add(static_cast<long long>(n / kBlock))
          .add(e.value)
          .add(e.lo)
          .add(e.hi);
    }
    md += "| " + sf[i + 1] + " / " + sf[i] + " | " + fmt_ci(a.value, a.lo, a.hi) + " | " +
          fmt_ci(b.value, b.lo, b.hi) + " |\n";
  }
  write_file_atomic(dir + "/sr_vs_basic.csv", sc.text());
  {
    Claim c;
    c.source = kSrc;
    c.where = "section 4 (Stochastic Rounding), figure 6";
    c.claim =
        "stochastic rounding provides a better accuracy as compared to ... basic extra-bit "
        "format";
    c.measured = "norm-wise error of the 16-bit value, fp16+8:sr / fp16+8, after " +
                 std::to_string(K) +
                 " in-place adds (after 1 add: " + fmt_ci(fp16_1.value, fp16_1.lo, fp16_1.hi) + ")";
    c.set(fp16_k.value, fp16_k.lo, fp16_k.hi);
    c.expected = "< 1";
    c.kind = "reproduction";
    // Reproduced when both intervals lie below 1, partly when one does, not reproduced when
    // neither: data on which SR is no better would fail it.
    const int below = (fp16_1.hi < 1 ? 1 : 0) + (fp16_k.hi < 1 ? 1 : 0);
    c.verdict = below == 2 ? "reproduced" : below == 1 ? "partly reproduced" : "not reproduced";
    // Decided in a quick run when the interval lies wholly on one side of 1.
    c.has_rule = true;
    c.rule_expected = 1;
    c.rule_near = 1;
    c.link = "extrabits/sr_vs_basic.csv";
    claims.push_back(c);
  }

  // ---- 2. bf16+16 and fp16+13 against fp32 master weights, bit for bit.
  {
    const int nm = tiny ? 2048 : 8192, T = tiny ? 50 : quick ? 200 : 1000;
    ctx.progress("extrabits", "fp32 master vs bf16+16 / fp16+13: " + std::to_string(T) + " steps");
    std::vector<float> p32(static_cast<std::size_t>(nm));
    for (int i = 0; i < nm; ++i) {
      // Weights over 8 decades (1e-6 .. 1e2 in magnitude), so that fp16's range matters.
      const double z = native::normal_fp64(seed, kStreamMaster, static_cast<std::uint64_t>(i));
      const double mag = std::pow(
          10.0, -6.0 + 8.0 * ((i * 0.6180339887498949) - std::floor(i * 0.6180339887498949)));
      p32[static_cast<std::size_t>(i)] = static_cast<float>(z * mag);
    }
    const std::vector<std::string> fm = {"bf16+16", "fp16+13"};
    std::vector<optim::SplitTensor> sp;
    for (const auto& f : fm)
      sp.push_back(optim::split_tensor(p32, optim::parse_split_format(f), 0));
    std::vector<float> m32(p32.size(), 0), v32(p32.size(), 0);
    std::vector<std::vector<float>> ms(fm.size(), m32), vs(fm.size(), v32);
    optim::AdamHyper h;
    h.lr = 1e-3;
    h.wd = 0.01;
    std::vector<long long> first_bad(fm.size(), -1);
    // Elements whose fp32 master value was ever below fp16's normal range (2^-14) in magnitude.
    std::vector<char> ever_small(p32.size(), 0);
    std::vector<float> g(p32.size());
    for (int t = 1; t <= T; ++t) {
      for (std::size_t i = 0; i < g.size(); ++i) {
        g[i] = static_cast<float>(
            1e-2 * native::normal_fp64(seed, kStreamMaster + static_cast<std::uint32_t>(t), i));
      }
      for (std::size_t i = 0; i < p32.size(); ++i) {
        ever_small[i] |= std::fabs(p32[i]) < std::ldexp(1.0f, -14) ? 1 : 0;
      }
      optim::adam_step(h, /*decoupled=*/true, native::Storage::f32, t, p32, g, m32, v32);
      for (std::size_t f = 0; f < fm.size(); ++f) {
        optim::split_adam_step(h, /*decoupled=*/true, t, 0, sp[f], g, ms[f], vs[f]);
        if (first_bad[f] >= 0) continue;
        const std::vector<float> j = optim::join_tensor(sp[f]);
        for (std::size_t i = 0; i < j.size(); ++i) {
          if (bits(j[i]) != bits(p32[i])) {
            first_bad[f] = t;
            break;
          }
        }
      }
    }
    Csv mc({"format", "steps", "elements", "first_step_differing", "differing_elements",
            "differing_ever_below_2^-14", "max_rel_diff"});
    md += "\n## 16-bit + extra bits against fp32 master weights\n\n" + std::to_string(nm) +
          " weights of magnitudes 1e-6 .. 1e2, " + std::to_string(T) +
          " AdamW steps (lr 1e-3, wd 0.01, gradients 0.01 N(0, 1)), fp32 master weights "
          "(optim::adam_step) against split weights (optim::split_adam_step, SEMANTICS 9.6), "
          "compared bit for bit after every step:\n\n"
          "| format | first step that differs | differing elements at the end | of them ever "
          "below 2^-14 | max relative difference |\n|---|---|---|---|---|\n";
    for (std::size_t f = 0; f < fm.size(); ++f) {
      const std::vector<float> j = optim::join_tensor(sp[f]);
      long long bad = 0, bad_small = 0;
      double worst = 0;
      for (std::size_t i = 0; i < j.size(); ++i) {
        if (bits(j[i]) == bits(p32[i])) continue;
        ++bad;
        bad_small += ever_small[i] || std::fabs(p32[i]) < std::ldexp(1.0f, -14) ? 1 : 0;
        if (p32[i] != 0) {
          worst = std::max(worst, std::fabs((static_cast<double>(j[i]) - p32[i]) / p32[i]));
        }
      }
      mc.row()
          .add(fm[f])
          .add(static_cast<long long>(T))
          .add(static_cast<long long>(nm))
          .add(first_bad[f])
          .add(bad)
          .add(bad_small)
          .add(worst);
      md += "| " + fm[f] + " | " +
            (first_bad[f] < 0 ? std::string("none") : std::to_string(first_bad[f])) + " | " +
            std::to_string(bad) + " | " + std::to_string(bad_small) + " | " + fmt_g(worst, 3) +
            " |\n";
      Claim c;
      c.source = kSrc;
      c.where = "section 3.1";
      c.claim = fm[f] == "bf16+16"
                    ? "bf16 keeps 7 significand bits: 16 extra bits maintain full fp32 accuracy"
                    : "fp16 keeps 10 significand bits: 13 extra bits maintain full fp32 accuracy";
      c.measured = fm[f] + " AdamW against fp32 master-weight AdamW, " + std::to_string(T) +
                   " steps, " + std::to_string(nm) + " weights of magnitude 1e-6..1e2: elements " +
                   "not bit-identical at the end (" + std::to_string(bad_small) +
                   " of them ever below fp16's normal range 2^-14)";
      c.set(static_cast<double>(bad));
      c.expected = fm[f] == "bf16+16" ? "0 (bf16 has fp32's exponent range)"
                                      : "0 within fp16's normal range; not below 2^-14 (fp16 "
                                        "has 5 exponent bits)";
      // By construction (SEMANTICS 9.6: join, one fp32 step, split): a check of exmy's split
      // formats, not of the paper's training.
      c.kind = "unit check";
      c.verdict = fm[f] == "bf16+16"
                      ? (bad == 0 ? "agrees" : "disagrees")
                      : (bad == bad_small ? "agrees (exact in fp16's normal range)" : "disagrees");
      c.link = "extrabits/master_exact.csv";
      claims.push_back(c);
    }
    write_file_atomic(dir + "/master_exact.csv", mc.text());
  }

  // ---- 3. Memory per parameter through `exmy memory`'s code (optim::memory_breakdown).
  {
    struct Mem {
      std::string name, weights;
      bool master;
      int extra;
      bool sr, fused;
    };
    const std::vector<Mem> rows = {{"fp32", "fp32", false, -1, false, false},
                                   {"amp fp16 + fp32 master", "fp16", true, -1, false, false},
                                   {"fp16+16, fused backward", "fp16", false, 16, false, true},
                                   {"fp16+13 sr", "fp16", false, 13, true, false},
                                   {"fp16+8", "fp16", false, 8, false, false},
                                   {"fp16", "fp16", false, -1, false, false}};
    Csv mm({"configuration", "exmy_memory_arguments", "bytes_per_param"});
    md +=
        "\n## Memory per parameter (`exmy memory`, weights + master + extra bits + "
        "gradients, no optimizer state)\n\n| configuration | exmy memory arguments | "
        "bytes/param |\n|---|---|---|\n";
    std::vector<double> per;
    for (const auto& r : rows) {
      optim::MemoryConfig c;
      c.params = 1;
      c.optimizer = std::string(optim::kNoOptimizer);
      c.weight_bytes = r.weights == "fp32" ? 4 : 2;
      c.master = r.master;
      c.extra_bits = r.extra;
      c.sr = r.sr;
      c.fused_backward = r.fused;
      const double b = optim::memory_total_per_param(optim::memory_breakdown(c));
      per.push_back(b);
      const std::string args = "--params 1 --optimizer none --weights " + r.weights +
                               (r.master ? " --master" : "") +
                               (r.extra >= 0 ? " --extra-bits " + std::to_string(r.extra) : "") +
                               (r.sr ? " --sr" : "") + (r.fused ? " --fused-backward" : "");
      mm.row().add(r.name).add(args).add(b);
      md += "| " + r.name + " | `" + args + "` | " + fmt_g(b, 4) + " |\n";
    }
    write_file_atomic(dir + "/memory.csv", mm.text());
    Claim c;
    c.source = kSrc;
    c.where = "introduction";
    c.claim =
        "for a given parameter, this leads to - at least - 6 bytes less having to remain "
        "stored on the memory";
    c.measured =
        "exmy memory: amp fp16 + fp32 master + fp32 grads minus fp16+16 with fused "
        "backward, bytes per parameter";
    c.set(per[1] - per[2]);
    c.expected = "6";
    c.kind = "arithmetic restatement";
    c.verdict = "arithmetic restatement";
    c.link = "extrabits/memory.csv";
    claims.push_back(c);
  }

  // ---- 4. A short training of the report's MLP with bf16+k / fp16+k weights.
  {
    const std::vector<std::string> tf = {"fp32",   "bf16+0", "bf16+4", "bf16+8",   "bf16+8:sr",
                                         "fp16+0", "fp16+4", "fp16+8", "fp16+8:sr"};
    const int seeds = tiny ? 1 : quick ? 2 : 5;
    MlpConfig base;
    base.in = 32;
    base.hidden = 64;
    base.classes = 8;
    base.batch = 32;
    base.steps = tiny ? 40 : quick ? 200 : 1000;
    base.dense = true;
    base.unit_scales = true;
    base.wd = 0.01f;
    base.log_every = 5;
    ctx.progress("extrabits", "MLP training with split weights: " + std::to_string(tf.size()) +
                                  " formats x " + std::to_string(seeds) + " seeds");
    std::vector<double> fin(tf.size() * static_cast<std::size_t>(seeds));
    ctx.parallel_for(fin.size(), [&](std::size_t i) {
      MlpConfig c = base;
      const std::string& f = tf[i / static_cast<std::size_t>(seeds)];
      if (f == "fp32") {
        c.optimizer = MlpConfig::Optimizer::torch_adamw;
      } else {
        c.optimizer = MlpConfig::Optimizer::split_adamw;
        c.split = f;
      }
      TrainLog log;
      train_mlp_adam(c, seed + 500 + i % static_cast<std::size_t>(seeds), log);
      // Final loss: mean of the last quarter of the logged batch losses.
      const std::size_t from = log.loss.size() - log.loss.size() / 4;
      double s = 0;
      for (std::size_t j = from; j < log.loss.size(); ++j) s += log.loss[j];
      fin[i] = s / static_cast<double>(log.loss.size() - from);
    });
    Csv tc({"weights", "seeds", "final_loss", "lo", "hi", "ratio_to_fp32", "ratio_lo", "ratio_hi"});
    md += "\n## Training with 16-bit + k extra bits\n\nThe MLP of the Adam section (fair task, " +
          std::to_string(base.in) + "-" + std::to_string(base.hidden) + "-" +
          std::to_string(base.hidden) + "-" + std::to_string(base.classes) + ", batch " +
          std::to_string(base.batch) + ", " + std::to_string(base.steps) +
          " AdamW steps, lr 1e-3, wd 0.01), weights stored split (the model computes with the "
          "16-bit part; +0 truncates to 16 bits), " +
          std::to_string(seeds) +
          " seeds; final loss = mean of the last quarter of the logged batch losses; ratio to "
          "fp32 paired by seed (log-scale t interval over seeds):\n\n"
          "| weights | final loss | / fp32 |\n|---|---|---|\n";
    Estimate r8;
    for (std::size_t f = 0; f < tf.size(); ++f) {
      std::vector<double> x, ratio;
      for (int s = 0; s < seeds; ++s) {
        x.push_back(fin[f * seeds + s]);
        ratio.push_back(fin[f * seeds + s] / fin[static_cast<std::size_t>(s)]);
      }
      const Estimate e = positive_mean(x), r = positive_mean(ratio);
      if (tf[f] == "fp16+8") r8 = r;
      tc.row().add(tf[f]).add(static_cast<long long>(seeds)).add(e.value).add(e.lo).add(e.hi);
      tc.add(r.value).add(r.lo).add(r.hi);
      md += "| " + tf[f] + " | " + (e.has_ci ? fmt_ci(e.value, e.lo, e.hi) : fmt_g(e.value, 4)) +
            " | " + (r.has_ci ? fmt_ci(r.value, r.lo, r.hi) : fmt_g(r.value, 4)) + " |\n";
    }
    write_file_atomic(dir + "/training.csv", tc.text());
    Claim c;
    c.source = kSrc;
    c.where = "table 3 (ResNet18 on CIFAR10: fp16+8 94.06% vs fp32 94.64%)";
    c.claim = "16-bit weights with 8 extra bits train to the accuracy of fp32 / mixed precision";
    c.measured = "toy MLP final loss with fp16+8 weights / fp32 weights, paired by seed";
    c.set(r8.value, r8.has_ci ? r8.lo : r8.value, r8.has_ci ? r8.hi : r8.value);
    c.has_ci = r8.has_ci;
    c.expected = "1 (within 2%)";
    c.kind = "proxy";
    judge(c, 1.0, 1.02, "consistent", "consistent (within 2%, interval excludes 1)",
          "inconsistent");
    c.link = "extrabits/training.csv";
    claims.push_back(c);
  }
  return md;
}

}  // namespace exmy::reports
