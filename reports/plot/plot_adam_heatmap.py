"""Figures of report section 2: 256x256 (code m, code v) heatmaps per method and blocking."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

METHODS = ["linear", "dynamic_tree", "dynamic"]
BLOCKINGS = ["tensor", "block2048", "block256"]


def grid(rows, key):
    import numpy as np
    g = np.full((256, 256), np.nan)
    for r in rows:
        val = float(r[key])
        if val > 0:
            g[int(r["code_m"]), int(r["code_v"])] = val
    return g


def plot(section_dir):
    plt = common.import_pyplot()
    from matplotlib.colors import LogNorm
    data = {}
    for m in METHODS:
        for b in BLOCKINGS:
            path = os.path.join(section_dir, "grid_%s_%s.csv" % (m, b))
            if os.path.exists(path):
                data[(m, b)] = common.read_csv(path)
    for key, stem, label in (("count", "heatmap_usage", "usage count"),
                             ("mean_abs_err", "heatmap_abs", "mean |u32 - u8|"),
                             ("mean_rel_err", "heatmap_rel", "mean |u32 - u8| / |u32|")):
        fig, axes = plt.subplots(len(METHODS), len(BLOCKINGS), figsize=(14, 12), squeeze=False,
                                 constrained_layout=True)
        for i, m in enumerate(METHODS):
            for j, b in enumerate(BLOCKINGS):
                ax = axes[i][j]
                rows = data.get((m, b), [])
                g = grid(rows, key)
                vals = g[~(g != g)]
                if vals.size:
                    im = ax.imshow(g.T, origin="lower", cmap="viridis", aspect="auto",
                                   norm=LogNorm(vmin=vals.min(), vmax=vals.max()),
                                   interpolation="nearest")
                    fig.colorbar(im, ax=ax, fraction=0.046)
                ax.set_title("%s / %s" % (m, b), fontsize=9)
                ax.set_xlabel("code of m", fontsize=8)
                ax.set_ylabel("code of v", fontsize=8)
        fig.suptitle(label + " per (code m, code v), log colour; empty = unused")
        common.save(fig, section_dir, stem)
        plt.close(fig)
    train = common.read_csv(os.path.join(section_dir, "train.csv"))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([int(r["step"]) for r in train], [float(r["loss"]) for r in train])
    ax.set_xlabel("step")
    ax.set_ylabel("batch cross-entropy")
    ax.grid(True, alpha=0.3)
    common.save(fig, section_dir, "train_loss")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
