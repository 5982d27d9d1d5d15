"""Figure of the variance section's accumulation panel: exact sums vs the H100 models."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402


def plot(section_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(section_dir, "accumulation.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
    models = list(dict.fromkeys(r["model"] for r in rows))
    ks = sorted({int(r["k"]) for r in rows})
    first = [r for r in rows if r["model"] == models[0]]
    axes[0].loglog(ks, [float(next(r["var_d_exact_accumulation"] for r in first
                                   if int(r["k"]) == k)) / k for k in ks],
                   "o-", color="black", label="exact sums (appendix D)")
    colours = {"sm90": "#d95f02", "cublas-sm90": "#1b9e77"}
    for m in models:
        pts = sorted((int(r["k"]), float(r["var_d_model"]), float(r["accumulation_share"]),
                      float(r["accumulation_share_lo"]), float(r["accumulation_share_hi"]))
                     for r in rows if r["model"] == m)
        c = colours.get(m, "grey")
        axes[0].loglog([p[0] for p in pts], [p[1] / p[0] for p in pts], "s--", color=c,
                       label=m + " (tensor-core model)")
        axes[1].errorbar([p[0] for p in pts], [p[2] for p in pts],
                         yerr=[[p[2] - p[3] for p in pts], [p[4] - p[2] for p in pts]],
                         fmt="o-", color=c, capsize=3, label=m)
    axes[0].set_xlabel("inner dimension k")
    axes[0].set_ylabel("Var(d) / k")
    axes[0].set_title("e4m3fn tensor-wise inner products: error variance per k", fontsize=9)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("inner dimension k")
    axes[1].set_ylabel("Var(accumulation error) / Var(d)")
    axes[1].set_title("share of the error that is accumulation (95% intervals)", fontsize=9)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    common.save(fig, section_dir, "accumulation_vs_k")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
