"""Figure of the variance section's accumulation panel: exact sums vs the H100 models.

Left: Var(d)/k on a linear axis with 95% cluster-bootstrap intervals, the models shifted apart
at each k. Var(d)/k is flat in k up to sampling noise (a few % at the quick size), and a log axis
spanning 1.34e-3..1.40e-3 drew that noise as structure; a linear axis with the intervals shows
it for what it is. Right: the accumulation error's share of Var(d), which does grow with k
(log-log, with its intervals).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

COLOURS = {"exact": "#000000", "sm90": "#D55E00", "cublas-sm90": "#0072B2"}  # Okabe-Ito
MARKERS = {"exact": "o", "sm90": "s", "cublas-sm90": "^"}


def plot(section_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(section_dir, "accumulation.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.6), constrained_layout=True)
    models = list(dict.fromkeys(r["model"] for r in rows))
    ks = sorted({int(r["k"]) for r in rows})
    has_ci = "var_d_model_lo" in rows[0]

    def pick(model, k):
        return next(r for r in rows if r["model"] == model and int(r["k"]) == k)

    series = [("exact", "exact sums (appendix D)", "var_d_exact_accumulation",
               [pick(models[0], k) for k in ks])]
    for m in models:
        series.append((m, m + " (tensor-core model)", "var_d_model", [pick(m, k) for k in ks]))
    n = len(series)
    ax = axes[0]
    for i, (key, label, col, rs) in enumerate(series):
        x = [k * 2.0 ** (0.12 * (i - (n - 1) / 2.0)) for k in ks]
        y = [float(r[col]) / k for r, k in zip(rs, ks)]
        if has_ci:
            lo = [max(0.0, yy - float(r[col + "_lo"]) / k) for yy, r, k in zip(y, rs, ks)]
            hi = [max(0.0, float(r[col + "_hi"]) / k - yy) for yy, r, k in zip(y, rs, ks)]
            ax.errorbar(x, y, yerr=[lo, hi], fmt=MARKERS.get(key, "o"), ms=5, capsize=3,
                        color=COLOURS.get(key, "grey"), label=label)
        else:
            ax.plot(x, y, MARKERS.get(key, "o"), color=COLOURS.get(key, "grey"), label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("inner dimension k")
    ax.set_ylabel("Var(d) / k (inputs' units squared per term; linear axis)")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
    ax.set_title("e4m3fn tensor-wise inner products, U, V ~ N(0, 1): error variance per k\n"
                 "95% cluster-bootstrap intervals; flat within them = linear in k", fontsize=9)
    ax = axes[1]
    for i, m in enumerate(models):
        pts = sorted((int(r["k"]), float(r["accumulation_share"]),
                      float(r["accumulation_share_lo"]), float(r["accumulation_share_hi"]))
                     for r in rows if r["model"] == m)
        x = [p[0] * 2.0 ** (0.08 * (i - (len(models) - 1) / 2.0)) for p in pts]
        ax.errorbar(x, [p[1] for p in pts],
                    yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                    fmt=MARKERS.get(m, "o") + "-", color=COLOURS.get(m, "grey"), capsize=3,
                    label=m)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("inner dimension k")
    ax.set_ylabel("Var(accumulation error) / Var(d) (ratio)")
    ax.set_title("share of the error that is accumulation (95% intervals)", fontsize=9)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    common.save(fig, section_dir, "accumulation_vs_k")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
