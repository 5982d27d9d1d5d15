"""Figure of the extra-bits section: forward error of in-place adds per storage format."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

# Colour-blind-safe encoding (Okabe-Ito): the hue names the extra bits (none, +4, +8, +8:sr),
# the marker names the 16-bit storage format; so no two series share both, and the variants of
# one format are told apart by hue, not by shades of one hue.
VARIANT_COLOURS = {"": "#000000", "+4": "#E69F00", "+8": "#0072B2", "+8:sr": "#D55E00"}
FORMAT_MARKERS = {"e5m2": "o", "fp16": "s", "bf16": "^"}


def style(f):
    base, _, extra = f.partition("+")
    extra = "+" + extra if extra else ""
    return VARIANT_COLOURS.get(extra, "#999999"), FORMAT_MARKERS.get(base, "D")


def plot(section_dir):
    plt = common.import_pyplot()
    one = common.read_csv(os.path.join(section_dir, "one_add.csv"))
    cum = common.read_csv(os.path.join(section_dir, "cumulative.csv"))
    cond = common.read_csv(os.path.join(section_dir, "condition.csv"))
    fmts = list(dict.fromkeys(r["format"] for r in one))
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.2), sharey=True, constrained_layout=True)
    for f in fmts:
        col, mk = style(f)
        sol, dash = mk + "-", mk + "--"
        pts = sorted((int(r["n"]), float(r["relerr_16bit_value"]), float(r["relerr_stored_value"]))
                     for r in one if r["format"] == f)
        axes[0].loglog([p[0] for p in pts], [p[1] for p in pts], sol, color=col, ms=5, label=f)
        if "+" in f:
            axes[0].loglog([p[0] for p in pts], [p[2] for p in pts], dash, color=col,
                           ms=4, mfc="white")
        pts = sorted((int(r["K"]), float(r["relerr_16bit_value"]), float(r["relerr_stored_value"]))
                     for r in cum if r["format"] == f)
        axes[1].loglog([p[0] for p in pts], [p[1] for p in pts], sol, color=col, ms=5, label=f)
        if "+" in f:
            axes[1].loglog([p[0] for p in pts], [p[2] for p in pts], dash, color=col,
                           ms=4, mfc="white")
        pts = sorted((float(r["condition_bin_lo"]), float(r["median_relerr_16bit"]),
                      float(r["median_relerr_stored"])) for r in cond if r["format"] == f)
        xs = [p[0] * 3.16 for p in pts]  # bin centres (geometric)
        axes[2].loglog(xs, [p[1] for p in pts], sol, color=col, ms=5, label=f)
        if "+" in f:
            axes[2].loglog(xs, [p[2] for p in pts], dash, color=col,
                           ms=4, mfc="white")
    for ax, title, xl in ((axes[0], "one in-place add", "tensor size n"),
                          (axes[1], "K in-place adds", "K"),
                          (axes[2], "all K: median element error by condition number",
                           "condition number sum|terms| / |sum|")):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xl)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("relative forward error (dimensionless)\nsolid, filled: 16-bit value; "
                       "dashed, open: stored value")
    for ax in axes[1:]:
        ax.tick_params(labelleft=True)
    for eps, name in ((2.0 ** -11, "fp16 unit roundoff"), (2.0 ** -19, "fp16+8: 2^-19")):
        axes[1].axhline(eps, color="grey", lw=0.6, ls=":")
        axes[1].text(1, eps * 1.2, name, fontsize=6, color="grey")
    axes[0].legend(fontsize=7, ncol=2, title="hue: extra bits; marker: format", title_fontsize=7)
    common.save(fig, section_dir, "forward_error")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
