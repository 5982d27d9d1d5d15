"""Figure of the layers section: relative errors per layer kind, and W_grad's error vs b.

Both panels share the kinds' axis. Left: every output's relative error at the largest b, with
the range over the replicates. Right: W_grad's relative error at every b as a point chart (one
marker per b, the replicates' range as bars): with two or three values of b a line per kind says
nothing a marker does not, and the relative error, not the MSE, is the quantity to compare (the
MSE grows with b also when the relative error does not: it is the signal growing).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

# Okabe-Ito (colour-blind safe).
OUTPUTS = (("relerr_y", "Y = X W^T", "#0072B2"),
           ("relerr_x_grad", "X_grad = G W", "#E69F00"),
           ("relerr_w_grad", "W_grad = G^T X", "#009E73"))
B_COLOURS = ["#CC79A7", "#D55E00", "#000000", "#56B4E9"]
B_MARKERS = ["o", "s", "D", "^"]


def plot(section_dir):
    plt = common.import_pyplot()
    raw = common.read_csv(os.path.join(section_dir, "layers.csv"))
    kinds = list(dict.fromkeys(r["kind"] for r in raw))
    bs = sorted({int(r["b"]) for r in raw})
    bmax = bs[-1]

    def reps(kind, b, col):
        return [float(r[col]) for r in raw if r["kind"] == kind and int(r["b"]) == b]

    nrep = len(reps(kinds[0], bmax, "relerr_y"))
    fig, axes = plt.subplots(1, 2, figsize=(15, 0.42 * len(kinds) + 2.2), sharey=True,
                             constrained_layout=True)
    ax = axes[0]
    h = 0.26
    for oi, (col, label, colour) in enumerate(OUTPUTS):
        vals, lo, hi = [], [], []
        for k in kinds:
            v = reps(k, bmax, col)
            m = sum(v) / len(v)
            vals.append(m)
            lo.append(m - min(v))
            hi.append(max(v) - m)
        ys = [i + (oi - 1) * h for i in range(len(kinds))]
        ax.barh(ys, vals, height=h, color=colour, label=label, xerr=[lo, hi],
                error_kw=dict(lw=0.8, capsize=2))
    ax.set_yticks(range(len(kinds)))
    ax.set_yticklabels(kinds, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("relative error ||out - exact||_F / ||exact||_F (dimensionless; mean of %d "
                  "replicates, bars: their range)" % nrep, fontsize=8)
    ax.set_title("every kind at b = %d (bf16 inputs, 16-bit products as an H100)" % bmax,
                 fontsize=9)
    ax.axvline(2.0 ** -9, color="grey", lw=0.6, ls=":")
    ax.text(2.0 ** -9, -0.55, " bf16 unit roundoff 2^-9", fontsize=7, color="grey")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax = axes[1]
    hb = 0.6 / max(1, len(bs))
    for bi, b in enumerate(bs):
        xs, lo, hi, ys = [], [], [], []
        for i, k in enumerate(kinds):
            v = reps(k, b, "relerr_w_grad")
            if not v:
                continue
            m = sum(v) / len(v)
            xs.append(m)
            lo.append(m - min(v))
            hi.append(max(v) - m)
            ys.append(i + (bi - (len(bs) - 1) / 2.0) * hb)
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt=B_MARKERS[bi % len(B_MARKERS)], ms=5, capsize=2,
                    lw=0.8, color=B_COLOURS[bi % len(B_COLOURS)], label="b = %d" % b)
    # The growth with b, per kind: relative error at the largest b over that at the smallest.
    if len(bs) > 1:
        for i, k in enumerate(kinds):
            v0, v1 = reps(k, bs[0], "relerr_w_grad"), reps(k, bmax, "relerr_w_grad")
            if v0 and v1:
                r = (sum(v1) / len(v1)) / (sum(v0) / len(v0))
                top = max(max(v0), max(v1))
                ax.annotate("x%.3g" % r, (top, i), xytext=(8, -3), textcoords="offset points",
                            fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(right=ax.get_xlim()[1] * 3)
    ax.axvline(2.0 ** -9, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("relative error of W_grad (dimensionless; mean of %d replicates, bars: their "
                  "range)" % nrep, fontsize=8)
    ax.set_title("W_grad = G^T X against its inner dimension b (batch x sequence): int8 "
                 "(LLM.int8) vs 16-bit (SwitchBack)\nx: relative error at b = %d over b = %d"
                 % (bmax, bs[0]), fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    common.save(fig, section_dir, "layers")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
