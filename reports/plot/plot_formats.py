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
    fig, ax = plt.subplots(figsize=(9, 6))
    for r in lim:
        if r["format"] == "fp64":
            continue
        preset = r["format"] in PRESETS
        x, y = float(r["unit_roundoff"]), float(r["decades_total"])
        ax.scatter([x], [y], s=25 if preset else 8, color="C1" if preset else "C0")
        if preset:
            ax.annotate(r["format"], (x, y), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("unit roundoff u = 2^-(M+1)")
    ax.set_ylabel("dynamic range, decades (max / min positive)")
    ax.set_title("presets (orange) and the eXmY grid E=2..8, M=1..7 (blue)")
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
    ax.set_ylabel("max relative error of rne (markers: measured, lines: bound)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_xlim(-40, 20)
    common.save(fig, section_dir, "relative_error_profile")
    plt.close(fig)

    sr = common.read_csv(os.path.join(section_dir, "sr.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    names = list(dict.fromkeys(r["format"] for r in sr))
    for i, name in enumerate(names):
        pts = sorted((int(r["R"]), float(r["max_abs_bias_ulp"]), float(r["max_var_ulp2"]))
                     for r in sr if r["format"] == name)
        axes[0].semilogy([p[0] for p in pts], [max(p[1], 1e-12) for p in pts], "o-", ms=3,
                         color="C%d" % i, label=name)
        axes[1].plot([p[0] for p in pts], [p[2] for p in pts], "o-", ms=3, color="C%d" % i,
                     label=name)
    rs = sorted({int(r["R"]) for r in sr})
    axes[0].semilogy(rs, [math.ldexp(1.0, -r) for r in rs], "k--", label="2^-R bound")
    axes[0].set_xlabel("R (random bits)")
    axes[0].set_ylabel("max |E[x^] - x| (ulp)")
    axes[0].legend(fontsize=7)
    axes[0].grid(True, which="both", alpha=0.3)
    axes[1].axhline(0.25, color="k", ls="--", lw=0.8, label="1/4 (p = 1/2)")
    axes[1].set_xlabel("R (random bits)")
    axes[1].set_ylabel("max Var[x^] (ulp^2); rne: 0")
    axes[1].legend(fontsize=7)
    axes[1].grid(True, alpha=0.3)
    common.save(fig, section_dir, "sr_bias")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
