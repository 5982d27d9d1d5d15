"""Figures of the lm-mantissa section: final eval loss minus fp32 against the mantissa bits of the
matmul inputs (masked and round-to-nearest), per seed and median, and the divergence rate; the
logit sharpness trajectories (mean over seeds and its 95% interval, from sharpness_summary.csv)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

STYLE = {"mask": ("#d62728", "o", "masked (truncated)"), "rne": ("#1f77b4", "s", "RNE")}


def plot(section_dir):
    plt = common.import_pyplot()
    # The clamp ablation's rows (EbM7) are masked too: the sweep's figure takes the sweep's rows only.
    runs = [r for r in common.read_csv(os.path.join(section_dir, "runs.csv"))
            if r["group"] == "sweep"]
    summ = [r for r in common.read_csv(os.path.join(section_dir, "summary.csv"))
            if r["group"] == "sweep"]
    fig, axes = plt.subplots(2, 1, figsize=(6.5, 6.5), sharex=True, constrained_layout=True,
                             gridspec_kw={"height_ratios": [3, 1]})
    ax = axes[0]
    for mode, (colour, marker, label) in STYLE.items():
        off = -0.08 if mode == "mask" else 0.08
        xs = [int(r["mantissa_bits"]) + off for r in runs if r["mode"] == mode]
        ys = [float(r["diff_vs_fp32"]) for r in runs if r["mode"] == mode]
        ax.plot(xs, ys, marker, color=colour, alpha=0.35, ms=4, lw=0)
        ms, med = [], []
        for m in range(3, 8):
            v = sorted(float(r["diff_vs_fp32"]) for r in runs
                       if r["mode"] == mode and int(r["mantissa_bits"]) == m)
            v = [x for x in v if x == x]
            if v:
                ms.append(m + off)
                med.append(v[len(v) // 2])
        ax.plot(ms, med, "-" + marker, color=colour, label=label + " (median; dots: seeds)")
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("final eval loss minus fp32\n(nats/token, paired by seed)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax = axes[1]
    for mode, (colour, marker, label) in STYLE.items():
        rows = [r for r in summ if r["mode"] == mode]
        ax.plot([int(r["mantissa_bits"]) for r in rows],
                [float(r["divergence_rate"]) for r in rows], "-" + marker, color=colour,
                label=label)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("divergence rate\n(share of seeds)")
    ax.set_xlabel("mantissa bits M of the E8M matmul inputs")
    ax.set_xticks(range(3, 8))
    ax.grid(True, alpha=0.3)
    common.save(fig, section_dir, "lm_mantissa")
    plt.close(fig)
    plot_sharpness(plt, section_dir)


def plot_sharpness(plt, section_dir):
    rows = common.read_csv(os.path.join(section_dir, "sharpness_summary.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True, sharey=True,
                             constrained_layout=True)
    cmap = plt.get_cmap("viridis")

    def draw(ax, name, colour, label):
        r = [x for x in rows if x["format"] == name]
        steps = [int(x["step"]) for x in r]
        ax.plot(steps, [float(x["mean_logit_sharpness_pct"]) for x in r], "-", color=colour,
                label=label, lw=1.2)
        lo = [float(x["lo"]) for x in r]
        hi = [float(x["hi"]) for x in r]
        ax.fill_between(steps, lo, hi, color=colour, alpha=0.2, lw=0)

    for ax, mode, title in ((axes[0], "mask", "masked (truncated)"), (axes[1], "rne", "RNE")):
        draw(ax, "fp32", "grey", "fp32")
        for m in range(3, 8):
            draw(ax, "%s_e8m%d" % (mode, m), cmap((m - 3) / 4.5), "E8M%d" % m)
        ax.set_title(title + " matmul inputs")
        ax.set_xlabel("training step")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    axes[0].set_ylabel("logit sharpness (percent, eps 5e-4)\nmean over seeds, band: 95% interval")
    common.save(fig, section_dir, "lm_mantissa_sharpness")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
