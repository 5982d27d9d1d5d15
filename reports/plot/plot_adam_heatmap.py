"""Figures of report section 2: (code m, code v) heatmaps per method and blocking.

Every panel of a figure shares one logarithmic colour range, clipped at the 1st and 99th
percentiles of the cells that hold at least MIN_COUNT elements (colours beyond it saturate and
the colour bar says so), so panels compare directly; cells with fewer elements are drawn grey
(their means rest on too few samples); the axes read the normalised state values of the codes
(the quantity seed 002 plots), not code indices. heatmap_overlap draws the usage contours over
the error and states, per panel, what share of the total error lies in the cells that hold 90%
of the elements (usage and error overlapping is the paper's point).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

METHODS = ["linear", "dynamic_tree", "dynamic"]
BLOCKINGS = ["tensor", "block2048", "block256"]
MIN_COUNT = 5
NICE = [0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]


def grids(rows, key):
    import numpy as np
    g = np.full((256, 256), np.nan)
    n = np.zeros((256, 256))
    mv, vv = {}, {}
    for r in rows:
        m, v = int(r["code_m"]), int(r["code_v"])
        n[m, v] = float(r["count"])
        mv[m] = float(r["m_value"])
        vv[v] = float(r["v_value"])
        if key != "count":
            g[m, v] = float(r[key])
        else:
            g[m, v] = float(r["count"])
    return g, n, mv, vv


def value_ticks(values):
    """Tick positions (codes) and labels (their state values) near the NICE magnitudes."""
    ticks, labels = [], []
    if not values:
        return ticks, labels
    codes = sorted(values)
    for sign in (-1, 1):
        for t in NICE:
            target = sign * t
            c = min(codes, key=lambda k: abs(values[k] - target))
            if c not in ticks and abs(values[c] - target) <= max(0.5 * t, 1e-7):
                ticks.append(c)
                labels.append("%.0e" % values[c] if values[c] and abs(values[c]) < 0.1
                              else "%.2g" % values[c])
    order = sorted(range(len(ticks)), key=lambda i: ticks[i])
    # Keep ticks at least 12 codes apart (near zero the dynamic maps pack several decades into
    # a few codes), preferring the larger magnitudes.
    kept_t, kept_l = [], []
    for i in sorted(order, key=lambda i: -abs(values[ticks[i]])):
        if all(abs(ticks[i] - t) >= 12 for t in kept_t):
            kept_t.append(ticks[i])
            kept_l.append(labels[i])
    pairs = sorted(zip(kept_t, kept_l))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def shared_norm(panels, key):
    import numpy as np
    from matplotlib.colors import LogNorm
    vals = []
    for g, n, _, _ in panels.values():
        ok = (n >= MIN_COUNT) & (g > 0) & ~np.isnan(g)
        vals.append(g[ok])
    vals = np.concatenate(vals) if vals else np.array([])
    if vals.size == 0:
        return None
    lo, hi = np.percentile(vals, 1), np.percentile(vals, 99)
    if key == "count":
        lo, hi = max(1.0, vals.min()), vals.max()
    return LogNorm(vmin=lo, vmax=max(hi, lo * 1.0001), clip=False)


def draw(fig, ax, g, n, mv, vv, norm, cmap, title):
    import numpy as np
    masked = np.where((n >= MIN_COUNT) & (g > 0), g, np.nan)
    low = np.where((n > 0) & (n < MIN_COUNT), 1.0, np.nan)
    ax.imshow(low.T, origin="lower", cmap="Greys", vmin=0, vmax=2.5, aspect="auto",
              interpolation="nearest")
    im = ax.imshow(masked.T, origin="lower", cmap=cmap, norm=norm, aspect="auto",
                   interpolation="nearest")
    xt, xl = value_ticks(mv)
    yt, yl = value_ticks(vv)
    ax.set_xticks(xt)
    ax.set_xticklabels(xl, fontsize=6, rotation=60)
    ax.set_yticks(yt)
    ax.set_yticklabels(yl, fontsize=6)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("normalised m (code value)", fontsize=7)
    ax.set_ylabel("normalised v (code value)", fontsize=7)
    return im


def plot(section_dir):
    import numpy as np
    plt = common.import_pyplot()
    rows = {}
    for m in METHODS:
        for b in BLOCKINGS:
            path = os.path.join(section_dir, "grid_%s_%s.csv" % (m, b))
            if os.path.exists(path):
                rows[(m, b)] = common.read_csv(path)
    for key, stem, label in (("count", "heatmap_usage", "elements per cell"),
                             ("mean_abs_err", "heatmap_abs", "mean |u32 - u8| per cell"),
                             ("mean_rel_err", "heatmap_rel", "mean |u32 - u8| / |u32| per cell")):
        panels = {k: grids(r, key) for k, r in rows.items()}
        norm = shared_norm(panels, key)
        cmap = plt.get_cmap("viridis").copy()
        cmap.set_over("#ff00ff")
        cmap.set_under("#000000")
        fig, axes = plt.subplots(len(METHODS), len(BLOCKINGS), figsize=(14, 12), squeeze=False,
                                 constrained_layout=True)
        im = None
        for i, m in enumerate(METHODS):
            for j, b in enumerate(BLOCKINGS):
                if (m, b) in panels and norm is not None:
                    im = draw(fig, axes[i][j], *panels[(m, b)], norm, cmap, "%s / %s" % (m, b))
        if im is not None:
            fig.colorbar(im, ax=axes, fraction=0.02, extend="both" if key != "count" else "neither")
        clip = "" if key == "count" else (
            "; one log colour range for all panels, 1st-99th percentile (black below, magenta above)")
        fig.suptitle("%s%s; grey: cells with < %d elements; white: unused" % (label, clip, MIN_COUNT))
        common.save(fig, section_dir, stem)
        plt.close(fig)
    # Usage over error: contours of the element count on the error heatmap, and the share of the
    # total error carried by the cells that hold 90% of the elements.
    panels = {k: grids(r, "mean_abs_err") for k, r in rows.items()}
    norm = shared_norm(panels, "mean_abs_err")
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_over("#ff00ff")
    cmap.set_under("#000000")
    fig, axes = plt.subplots(len(METHODS), len(BLOCKINGS), figsize=(14, 12), squeeze=False,
                             constrained_layout=True)
    im = None
    for i, m in enumerate(METHODS):
        for j, b in enumerate(BLOCKINGS):
            if (m, b) not in panels or norm is None:
                continue
            g, n, mv, vv = panels[(m, b)]
            ax = axes[i][j]
            im = draw(fig, ax, g, n, mv, vv, norm, cmap, "%s / %s" % (m, b))
            counts = n[n > 0]
            total_err = np.nansum(np.where(n > 0, g * n, 0.0))
            order = np.sort(counts)[::-1]
            cut = order[np.searchsorted(np.cumsum(order), 0.9 * counts.sum())]
            hot = n >= cut
            share = np.nansum(np.where(hot, g * n, 0.0)) / total_err if total_err > 0 else 0.0
            with np.errstate(divide="ignore"):
                lc = np.log10(np.where(n > 0, n, np.nan)).T
            lvls = [x for x in (1, 2, 3, 4, 5) if np.nanmax(lc) > x]
            if lvls:
                ax.contour(np.nan_to_num(lc, nan=0.0), levels=lvls, colors="white", linewidths=0.5)
            ax.text(0.02, 0.97, "90%% of elements in %d cells carry %.1f%% of the error"
                    % (int(hot.sum()), 100 * share), transform=ax.transAxes, fontsize=7,
                    va="top", color="white", bbox=dict(facecolor="black", alpha=0.5, lw=0))
    if im is not None:
        fig.colorbar(im, ax=axes, fraction=0.02, extend="both")
    fig.suptitle("mean |u32 - u8| (shared log colour, 1st-99th pct) with contours of the element "
                 "count (white: 10, 100, 1000, ... elements per cell)")
    common.save(fig, section_dir, "heatmap_overlap")
    plt.close(fig)
    all_train = common.read_csv(os.path.join(section_dir, "train.csv"))
    fair = [r for r in all_train if r["optimizer"].startswith("dense_")]
    train = [r for r in all_train if not r["optimizer"].startswith("dense_")]
    opts = list(dict.fromkeys(r["optimizer"] for r in train))
    colours = ["black", "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
               "#a6761d"]
    fig, axes3 = plt.subplots(1, 3, figsize=(19, 4.5), constrained_layout=True)
    axes = axes3[:2]
    for c, o in enumerate(opts):
        sh = {}
        for r in train:
            if r["optimizer"] == o and r.get("logit_sharpness") not in (None, ""):
                sh.setdefault(int(r["step"]), []).append(float(r["logit_sharpness"]))
        st = sorted(s for s in sh if s <= 60)
        if st:
            axes3[2].plot(st, [sum(sh[s]) / len(sh[s]) for s in st], lw=1,
                          color=colours[c % len(colours)], label=o)
        by_step = {}
        for r in train:
            if r["optimizer"] == o:
                by_step.setdefault(int(r["step"]), []).append(float(r["loss"]))
        steps = sorted(by_step)
        mean = [sum(by_step[s]) / len(by_step[s]) for s in steps]
        lo = [min(by_step[s]) for s in steps]
        hi = [max(by_step[s]) for s in steps]
        col = colours[c % len(colours)]
        for ax in axes:
            ax.plot(steps, mean, lw=1.2 if o == "fp32" else 1, color=col, label=o)
            ax.fill_between(steps, lo, hi, color=col, alpha=0.15, lw=0)
    axes[0].set_title("batch loss, mean over seeds (band: min-max of the seeds), log scale",
                      fontsize=9)
    last = max(int(r["step"]) for r in train)
    axes[1].set_xlim(last * 0.5, last)
    # The zoom follows the fp32 run (diverged 8-bit runs would stretch it to 1e30).
    tail = [float(r["loss"]) for r in train
            if int(r["step"]) >= last * 0.5 and r["optimizer"] == "fp32"]
    if tail:
        axes[1].set_ylim(min(tail) * 0.9, max(tail) * 1.3)
    axes[0].set_yscale("log")
    axes[1].set_title("second half of training, zoomed", fontsize=9)
    for ax in axes:
        ax.set_xlabel("step")
        ax.set_ylabel("batch cross-entropy")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes3[2].set_yscale("log")
    axes3[2].set_xlabel("step")
    axes3[2].set_ylabel("mean logit sharpness (eps 5e-4)")
    axes3[2].set_title("logit sharpness, first 60 steps (where the 8-bit runs diverge)",
                       fontsize=9)
    axes3[2].grid(True, alpha=0.3)
    axes3[2].legend(fontsize=6)
    common.save(fig, section_dir, "train_loss")
    plt.close(fig)
    if fair:
        fig, ax = plt.subplots(1, 1, figsize=(8, 4.5), constrained_layout=True)
        for c, o in enumerate(dict.fromkeys(r["optimizer"] for r in fair)):
            by_step = {}
            for r in fair:
                if r["optimizer"] == o:
                    by_step.setdefault(int(r["step"]), []).append(float(r["loss"]))
            steps = sorted(by_step)
            col = colours[c % len(colours)]
            ax.plot(steps, [sum(by_step[s]) / len(by_step[s]) for s in steps], lw=1, color=col,
                    label=o)
            ax.fill_between(steps, [min(by_step[s]) for s in steps],
                            [max(by_step[s]) for s in steps], color=col, alpha=0.15, lw=0)
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("batch cross-entropy")
        ax.set_title("fair task (every feature active, leaky ReLU): 8-bit vs 32-bit Adam, mean "
                     "over seeds (band: min-max)", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        common.save(fig, section_dir, "train_loss_fair")
        plt.close(fig)

if __name__ == "__main__":
    common.main_guard(plot)
