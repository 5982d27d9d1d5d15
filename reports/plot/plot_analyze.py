"""Figure of `exmy analyze`: a heatmap of noise-to-signal per item x format/scheme.

Rows: each tensor (||Q(x) - x|| / ||x||) and each matmul product (||Q(A)Q(B) - AB|| / ||AB||);
columns: the format / scheme combinations of analyze.csv, in its order. Colour: log10 of the
noise-to-signal ratio (dimensionless), one shared scale; each cell is labelled with its value.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402


def plot(out_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(out_dir, "analyze.csv"))
    if not rows:
        return
    cols = list(dict.fromkeys((r["format"], r["scheme"]) for r in rows))
    items = list(dict.fromkeys(
        (r["item"], r["product"]) for r in rows))
    val = {}
    for r in rows:
        v = float(r["nsr"])
        val[((r["item"], r["product"]), (r["format"], r["scheme"]))] = v
    grid = []
    for it in items:
        line = []
        for c in cols:
            v = val.get((it, c))
            if v is None or not math.isfinite(v):
                line.append(float("nan"))
            elif v <= 0:
                line.append(None)  # exact: drawn at the scale's minimum, labelled "0"
            else:
                line.append(math.log10(v))
        grid.append(line)
    import numpy as np
    finite = [v for line in grid for v in line if v is not None and math.isfinite(v)]
    lo = min(finite) if finite else -8.0
    hi = max(finite) if finite else 0.0
    if hi - lo < 1.0:
        lo, hi = lo - 0.5, hi + 0.5
    g = np.array([[lo if v is None else v for v in line] for line in grid], dtype=float)
    masked = np.ma.masked_invalid(g)
    w = max(6.0, 0.55 * len(cols) + 3)
    h = max(2.5, 0.42 * len(items) + 2)
    fig, ax = plt.subplots(figsize=(w, h), constrained_layout=True)
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("#dddddd")
    im = ax.imshow(masked, aspect="auto", cmap=cmap, vmin=lo, vmax=hi)
    for i in range(len(items)):
        for j in range(len(cols)):
            v = val.get((items[i], cols[j]))
            if v is None:
                text = "n/a"
            elif not math.isfinite(v):
                text = "inf"
            else:
                text = "%.2g" % v
            ax.text(j, i, text, ha="center", va="center", fontsize=6,
                    color="white" if math.isfinite(g[i, j]) and g[i, j] < (lo + hi) / 2 else "black")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(["%s %s" % c for c in cols], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels(["%s %s" % (it[0], ("(" + it[1] + ")") if it[1] else "")
                        for it in items], fontsize=7)
    ax.set_xlabel("format and scale granularity")
    ax.set_ylabel("tensor, or matmul (product)")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("log10 noise-to-signal\n||Q - ref||_F / ||ref||_F (dimensionless)")
    ax.set_title("exmy analyze: quantization noise-to-signal (grey: not applicable; 0: exact, drawn at the minimum)", fontsize=9)
    common.save(fig, out_dir, "analyze")


if __name__ == "__main__":
    common.main_guard(plot)
