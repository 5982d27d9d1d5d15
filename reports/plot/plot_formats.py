"""Figures of report section 3: range vs precision, rne relative error per binade, sr bias."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

PRESETS = ["fp32", "tf32", "bf16", "fp16", "e5m2", "e4m3fn", "e4m3fnuz", "e5m2fnuz", "e4m3",
           "e3m4", "e4m3b11fnuz", "e2m3fn", "e3m2fn", "e2m1fn", "e8m0fnu"]


def plot(section_dir):
    plt = common.import_pyplot()
    lim = common.read_csv(os.path.join(section_dir, "limits.csv"))
    fig, ax = plt.subplots(figsize=(10, 6.5))
    labels = {}
    for r in lim:
        if r["format"] == "fp64":
            continue
        preset = r["format"] in PRESETS
        x, y = float(r["unit_roundoff"]), float(r["decades_total"])
        ax.scatter([x], [y], s=25 if preset else 8, color="C1" if preset else "C0", zorder=3)
        if preset:
            labels.setdefault((round(math.log2(x)), round(y, 1)), []).append(r["format"])
    # One label per point (formats that share it joined), staggered within a column of equal
    # precision so that none overlaps another.
    by_x = {}
    for (lx, y), names in labels.items():
        by_x.setdefault(lx, []).append((y, " / ".join(names)))
    for lx, items in by_x.items():
        items.sort()
        for i, (y, text) in enumerate(items):
            ax.annotate(text, (2.0 ** lx, y), fontsize=7, xytext=(6, -4 + 9 * (i % 2)),
                        textcoords="offset points",
                        arrowprops=dict(arrowstyle="-", lw=0.4, color="grey"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # spreads the 8-bit and smaller formats, which crowd below 15 decades
    ax.set_xlabel("unit roundoff u = 2^-(M+1)")
    ax.set_ylabel("dynamic range, decades (max / min positive), log scale")
    ax.set_title("presets (orange, labelled; formats sharing a point are joined) and the eXmY "
                 "grid E=2..8, M=1..7 (blue)", fontsize=9)
    ax.grid(True, alpha=0.3)
    common.save(fig, section_dir, "range_vs_precision")
    plt.close(fig)

    prof = common.read_csv(os.path.join(section_dir, "profile.csv"))
    fig, ax = plt.subplots(figsize=(10, 6))
    shown = ["bf16", "fp16", "e5m2", "e4m3fn", "e3m4", "e2m3fn", "e3m2fn", "e2m1fn"]
    for i, name in enumerate(shown):
        pts = [(int(r["binade_log2"]), float(r["max_rel_err"]), float(r["bound"]))
               for r in prof if r["format"] == name]
        if not pts:
            continue
        ax.semilogy([p[0] for p in pts], [p[1] for p in pts], "o", ms=2, color="C%d" % i,
                    label=name)
        ax.semilogy([p[0] for p in pts], [p[2] for p in pts], "-", lw=0.8, color="C%d" % i)
    ax.set_xlabel("binade log2|x|")
    ax.set_ylabel("max relative error |rne(x) - x| / |x| (dimensionless;\n"
                  "markers: measured, lines: bound)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_xlim(-40, 20)
    common.save(fig, section_dir, "relative_error_profile")
    plt.close(fig)

    sr = common.read_csv(os.path.join(section_dir, "sr.csv"))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), constrained_layout=True)
    names = list(dict.fromkeys(r["format"] for r in sr))
    markers = ["o", "s", "^", "v", "D", "x"]
    curves = {}
    for i, name in enumerate(names):
        pts = sorted((int(r["R"]), float(r["max_abs_bias_ulp"]), float(r["max_var_ulp2"]))
                     for r in sr if r["format"] == name)
        curves[name] = pts
        jitter = 0.08 * (i - (len(names) - 1) / 2)
        axes[0].plot([p[0] + jitter for p in pts], [p[1] * 2.0 ** p[0] for p in pts],
                     markers[i % len(markers)], ms=4, mfc="none", color="C%d" % i, label=name)
        axes[2].plot([p[0] + jitter for p in pts], [p[2] for p in pts],
                     markers[i % len(markers)], ms=4, mfc="none", color="C%d" % i, label=name)
    same = len({tuple(v) for v in curves.values()}) == 1
    axes[0].axhline(1.0, color="k", ls="--", lw=0.8, label=r"bound $2^{-R}$ ulp")
    axes[0].set_xlabel("R (random bits)")
    axes[0].set_ylabel(r"worst bias $|\mathrm{E}[\hat{x}] - x|$ (ulp) $/\ 2^{-R}$")
    axes[0].set_title(r"worst bias relative to its bound $2^{-R}$ ulp" +
                      (": identical for every format" if same else ""), fontsize=9)
    axes[0].set_ylim(0.9, 1.02)
    axes[0].legend(fontsize=7)
    axes[0].grid(True, alpha=0.3)
    # The closed form behind it (SEMANTICS 3): with R random bits, x^ rounds up with
    # probability floor(f 2^R) / 2^R for the fraction f of an ulp, so the bias in ulps is
    # floor(f 2^R) / 2^R - f, a sawtooth that depends on nothing but f and R.
    fs = [i / 2000.0 for i in range(2001)]
    for R in (1, 2, 3, 4, 8):
        axes[1].plot(fs, [math.floor(f * 2 ** R) / 2 ** R - f for f in fs], lw=1,
                     label="R = %d" % R)
    axes[1].set_xlabel(r"fraction $f$ of an ulp between the two neighbours")
    axes[1].set_ylabel(r"bias $\mathrm{E}[\hat{x}] - x$ (ulp)")
    axes[1].set_title("closed form: the bias is a sawtooth in f, the same for every format",
                      fontsize=9)
    axes[1].legend(fontsize=7)
    axes[1].grid(True, alpha=0.3)
    axes[2].axhline(0.25, color="k", ls="--", lw=0.8, label="1/4 (p = 1/2)")
    axes[2].set_xlabel("R (random bits)")
    axes[2].set_ylabel(r"worst variance $\mathrm{Var}[\hat{x}]$ (ulp$^2$)")
    axes[2].set_title(r"worst variance of sr (at $p = 1/2$ when $2^R f$ hits it; rne: 0)",
                      fontsize=9)
    axes[2].legend(fontsize=7)
    axes[2].grid(True, alpha=0.3)
    common.save(fig, section_dir, "sr_bias")
    plt.close(fig)

if __name__ == "__main__":
    common.main_guard(plot)
