"""Figure of the lm-mantissa section: final eval loss minus fp32 against the mantissa bits of the
matmul inputs (masked and round-to-nearest), per seed and median, and the divergence rate."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

STYLE = {"mask": ("#d62728", "o", "masked (truncated)"), "rne": ("#1f77b4", "s", "RNE")}


def plot(section_dir):
    plt = common.import_pyplot()
    runs = common.read_csv(os.path.join(section_dir, "runs.csv"))
    summ = common.read_csv(os.path.join(section_dir, "summary.csv"))
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


if __name__ == "__main__":
    common.main_guard(plot)
