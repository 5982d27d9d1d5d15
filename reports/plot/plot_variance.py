"""Figures of report section 1: Var(d) vs k, s_q^2 vs k, D.3 ratios (from the CSVs)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402


def plot(section_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(section_dir, "variance.csv"))
    dists = list(dict.fromkeys(r["dist"] for r in rows))
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    cmap = plt.get_cmap("tab20")
    colour = {s: cmap(i % 20) for i, s in enumerate(schemes)}

    def series(dist, scheme, key):
        pts = [(int(r["k"]), float(r[key])) for r in rows
               if r["dist"] == dist and r["scheme"] == scheme]
        pts.sort()
        return [p[0] for p in pts], [p[1] for p in pts]

    # Var(d) vs k for gaussian inputs, measured and predicted.
    fig, ax = plt.subplots(figsize=(9, 6))
    for s in schemes:
        k, v = series("gaussian", s, "var_d")
        _, p = series("gaussian", s, "predicted")
        ax.loglog(k, v, "o-", ms=3, lw=1, color=colour[s], label=s)
        ax.loglog(k, p, "--", lw=0.8, color=colour[s])
    ax.set_xlabel("inner dimension k")
    ax.set_ylabel("Var(<u^,v^> - <u,v>)")
    ax.set_title("gaussian inputs: measured (markers) vs k s_q^2 (s_u^2 + s_v^2 + s_q^2) (dashed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    common.save(fig, section_dir, "variance_vs_k")
    plt.close(fig)

    fig, axes = plt.subplots(1, len(dists), figsize=(6 * len(dists), 5), squeeze=False)
    for ax, d in zip(axes[0], dists):
        for s in schemes:
            k, v = series(d, s, "var_d")
            ax.loglog(k, v, "o-", ms=2, lw=1, color=colour[s], label=s)
        ax.set_title(d)
        ax.set_xlabel("k")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("Var(d)")
    axes[0][-1].legend(fontsize=6, ncol=2)
    common.save(fig, section_dir, "variance_vs_k_all")
    plt.close(fig)

    fig, axes = plt.subplots(1, len(dists), figsize=(6 * len(dists), 5), squeeze=False)
    for ax, d in zip(axes[0], dists):
        for s in schemes:
            k, qu = series(d, s, "sigma_qu2")
            _, qv = series(d, s, "sigma_qv2")
            ax.loglog(k, [(a + b) / 2 for a, b in zip(qu, qv)], "o-", ms=2, lw=1,
                      color=colour[s], label=s)
        ax.set_title(d)
        ax.set_xlabel("k")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("s_q^2 (mean squared element error)")
    axes[0][-1].legend(fontsize=6, ncol=2)
    common.save(fig, section_dir, "sigma_q_vs_k")
    plt.close(fig)

    d3 = common.read_csv(os.path.join(section_dir, "d3_measured.csv"))
    if d3:
        labels = list(dict.fromkeys(r["model"] + "\n" + r["matmul"] for r in d3))
        d3schemes = list(dict.fromkeys(r["scheme"] for r in d3))
        fig, ax = plt.subplots(figsize=(10, 5))
        width = 0.8 / (len(d3schemes) + 1)
        model_vals = {r["model"] + "\n" + r["matmul"]: float(r["model_wgrad_over_this"])
                      for r in d3}
        xs = range(len(labels))
        ax.bar([x - 0.4 + width / 2 for x in xs], [model_vals[l] for l in labels], width,
               color="black", label="model (k ratio)")
        for j, s in enumerate(d3schemes):
            vals = {r["model"] + "\n" + r["matmul"]: float(r["measured_wgrad_over_this"])
                    for r in d3 if r["scheme"] == s}
            ax.bar([x - 0.4 + width * (j + 1.5) for x in xs], [vals.get(l, 0) for l in labels],
                   width, color=colour.get(s, "grey"), label=s)
        ax.set_yscale("log")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("Var(d) weight grad / Var(d) this matmul")
        ax.legend(fontsize=7)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        common.save(fig, section_dir, "d3_ratios")
        plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
