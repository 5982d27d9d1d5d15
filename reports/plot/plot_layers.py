"""Figure of the layers section: relative errors per layer kind, and W_grad's error vs b."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

OUTPUTS = (("relerr_y_mean", "Y = X W^T", "#1b9e77"),
           ("relerr_x_grad_mean", "X_grad = G W", "#d95f02"),
           ("relerr_w_grad_mean", "W_grad = G^T X", "#7570b3"))
FAMILY = {"plain": "#444444", "switchback": "#1b9e77", "switchback-m": "#66a61e",
          "switchback-q": "#a6761d", "llm-int8": "#d95f02", "fp8-tensorwise": "#e7298a",
          "switchback-fp8": "#7570b3"}


def plot(section_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(section_dir, "layers_summary.csv"))
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    bmax = max(int(r["b"]) for r in rows)
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.5), constrained_layout=True)
    ax = axes[0]
    h = 0.26
    for oi, (col, label, colour) in enumerate(OUTPUTS):
        vals = [float(next(r[col] for r in rows if r["kind"] == k and int(r["b"]) == bmax))
                for k in kinds]
        ys = [i + (oi - 1) * h for i in range(len(kinds))]
        ax.barh(ys, vals, height=h, color=colour, label=label)
    ax.set_yticks(range(len(kinds)))
    ax.set_yticklabels(kinds, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("relative error ||out - exact||_F / ||exact||_F (mean over replicates)")
    ax.set_title("every kind at b = %d (bf16 inputs, 16-bit products as an H100)" % bmax,
                 fontsize=9)
    ax.axvline(2.0 ** -9, color="grey", lw=0.6, ls=":")
    ax.text(2.0 ** -9, len(kinds) - 0.4, " bf16 unit roundoff", fontsize=7, color="grey")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax = axes[1]
    for k in kinds:
        pts = sorted((int(r["b"]), float(r["mse_w_grad_mean"])) for r in rows if r["kind"] == k)
        colour = FAMILY.get(k, None)
        style = "o-" if not k.startswith("masked") else "s--"
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], style, color=colour, label=k,
                  lw=1.2, ms=4)
    ref = sorted((int(r["b"]), float(r["mse_w_grad_mean"])) for r in rows
                 if r["kind"] == "llm-int8")
    if ref:
        b0, v0 = ref[0]
        xs = [p[0] for p in ref]
        ax.loglog(xs, [v0 * x / b0 for x in xs], color="grey", lw=0.8, ls=":",
                  label="slope 1 (variance ~ b)")
    ax.set_xlabel("inner dimension b of W_grad = G^T X (batch x sequence)")
    ax.set_ylabel("mean squared error of W_grad")
    ax.set_title("W_grad error vs inner dimension: int8 (LLM.int8) vs 16-bit (SwitchBack)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    common.save(fig, section_dir, "layers")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
