"""Figure of the mx-variance section (MX / NVFP4 variance laws), from mx_variance.csv.

Rows: Var(d)/k (the error variance per product; a flat line is Var(d) linear in k) and the
relative noise Var(d)/Var(<u,v>). Columns: input distribution x element family (FP8 elements
under E8M0 scales; e2m1fn elements under E8M0 and E4M3 scales). Measured values are markers with
their 95% bootstrap intervals, the closed form of docs/SEMANTICS.md 14.8 a line of the same
colour. Each row shares its y axis across panels.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

FAMILIES = [
    ("FP8 elements, E8M0 scale (MXFP8)", lambda r: r["element_format"] != "e2m1fn"),
    ("e2m1fn elements: E8M0 (MXFP4) vs E4M3 (NVFP4)", lambda r: r["element_format"] == "e2m1fn"),
]
COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d"]


def plot(section_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(section_dir, "mx_variance.csv"))
    dists = list(dict.fromkeys(r["dist"] for r in rows))
    cols = [(d, name, pred) for d in dists for name, pred in FAMILIES]
    fig, axes = plt.subplots(2, len(cols), figsize=(4.4 * len(cols), 7.0), squeeze=False,
                             sharey="row", constrained_layout=True)
    quantities = [("var_d", "Var(d) / k  (error variance per product)", True),
                  ("noise_to_signal", "Var(d) / Var(<u,v>)  (relative noise)", False)]
    for j, (dist, fname, pred) in enumerate(cols):
        sel = [r for r in rows if r["dist"] == dist and pred(r)]
        schemes = list(dict.fromkeys(r["scheme"] for r in sel))
        for i, (key, ylabel, per_k) in enumerate(quantities):
            ax = axes[i][j]
            for c, s in enumerate(schemes):
                pts = sorted((int(r["k"]), r) for r in sel if r["scheme"] == s)
                k = [p[0] for p in pts]
                div = [float(kk) if per_k else 1.0 for kk in k]
                y = [float(p[1][key]) / dv for p, dv in zip(pts, div)]
                lo = [float(p[1][key + "_lo"]) / dv for p, dv in zip(pts, div)]
                hi = [float(p[1][key + "_hi"]) / dv for p, dv in zip(pts, div)]
                closed = [float(p[1][key + "_closed"]) / dv for p, dv in zip(pts, div)]
                col = COLOURS[c % len(COLOURS)]
                err = [[max(a - b, 0) for a, b in zip(y, lo)], [max(b - a, 0) for a, b in zip(y, hi)]]
                ax.errorbar(k, y, yerr=err, fmt="o", ms=3.5, capsize=2, color=col, label=s)
                ax.plot(k, closed, "-", lw=1.0, color=col, alpha=0.8)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            if i == 0:
                ax.set_title("%s\n%s" % (dist, fname), fontsize=9)
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            if i == 1:
                ax.set_xlabel("inner dimension k", fontsize=8)
            ax.tick_params(labelsize=7)
            if i == 0:
                ax.legend(fontsize=6, loc="best", ncol=2)
    from matplotlib import ticker
    for row in axes:
        # Ticks at 1, 2 and 5 per decade: a row spans little more than a decade.
        row[0].yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        row[0].yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
        row[0].yaxis.set_minor_formatter(ticker.NullFormatter())
    fig.suptitle("MX / NVFP4: measured (markers, 95% intervals) vs block-absmax closed form "
                 "(lines); scheme = element/scale per block", fontsize=10)
    common.save(fig, section_dir, "mx_variance")


if __name__ == "__main__":
    common.main_guard(plot)
