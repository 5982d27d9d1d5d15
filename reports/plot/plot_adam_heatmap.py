"""Figures of report section 2: (code m, code v) heatmaps per method and blocking; training.

Every panel of a figure shares one logarithmic colour range, clipped at the 1st and 99th
percentiles of the cells that hold at least MIN_COUNT elements (colours beyond it saturate and
the colour bar says so), so panels compare directly; cells with fewer elements are drawn grey
(their means rest on too few samples). The v^ = 0 cells (v quantized to 0, so u8 = m^/eps) lie
orders of magnitude above every other cell and carry most of the error: they are left out of that
range and drawn on top as squares on their own red scale, minimum to maximum, whatever their
count, with their share of the error stated per panel; the axes read the normalised state
values of the codes (the quantity seed 002 plots), not code indices. heatmap_overlap draws the
usage contours over the error and states, per panel, what share of the total error lies in the
cells that hold 90% of the elements (usage and error overlapping is the paper's point).

train_loss / train_loss_fair: linear loss axes (nats), medians over the runs that did not
diverge with their band; diverged runs drawn apart, never averaged (a mean over runs at 1e33 is
no loss curve).
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


def vzero_rows(vv):
    """The codes of v whose value is 0: there v^ = 0 and u8 = m^ / eps."""
    return sorted(c for c, x in vv.items() if x == 0.0)


def shared_norm(panels, key, vzero=False):
    """One log colour range over all panels: for the v^ != 0 cells with >= MIN_COUNT elements,
    their 1st to 99th percentile (colours beyond saturate: black below, magenta above, and the
    colour bar's ends say so); for the v^ = 0 cells (vzero=True, every count), their minimum to
    their maximum (nothing clipped: they carry most of the error)."""
    import numpy as np
    from matplotlib.colors import LogNorm
    vals = []
    for g, n, _, vv in panels.values():
        z = np.zeros(g.shape, dtype=bool)
        z[:, vzero_rows(vv)] = True
        ok = (g > 0) & ~np.isnan(g) & (n > 0)
        ok &= z if vzero else (~z & (n >= MIN_COUNT))
        vals.append(g[ok])
    vals = np.concatenate(vals) if vals else np.array([])
    if vals.size == 0:
        return None
    if key == "count":
        lo, hi = max(1.0, vals.min()), vals.max()
    elif vzero:
        lo, hi = vals.min(), vals.max()
    else:
        lo, hi = np.percentile(vals, 1), np.percentile(vals, 99)
    return LogNorm(vmin=lo, vmax=max(hi, lo * 1.0001), clip=False)


def draw(fig, ax, g, n, mv, vv, norm, cmap, title, znorm=None, zcmap=None):
    """The heatmap; with znorm, the v^ = 0 cells are left out of it and drawn on top as squares
    in their own colour scale (whatever their count: they carry the error)."""
    import numpy as np
    z = np.zeros(g.shape, dtype=bool)
    if znorm is not None:
        z[:, vzero_rows(vv)] = True
    masked = np.where((n >= MIN_COUNT) & (g > 0) & ~z, g, np.nan)
    low = np.where((n > 0) & (n < MIN_COUNT) & ~z, 1.0, np.nan)
    ax.imshow(low.T, origin="lower", cmap="Greys", vmin=0, vmax=2.5, aspect="auto",
              interpolation="nearest")
    im = ax.imshow(masked.T, origin="lower", cmap=cmap, norm=norm, aspect="auto",
                   interpolation="nearest")
    zim = None
    if znorm is not None:
        cm, cv = np.nonzero(z & (n > 0) & (g > 0))
        if cm.size:
            zim = ax.scatter(cm, cv, c=g[cm, cv], cmap=zcmap, norm=znorm, marker="s", s=14,
                             edgecolors="black", linewidths=0.4, zorder=3)
    xt, xl = value_ticks(mv)
    yt, yl = value_ticks(vv)
    ax.set_xticks(xt)
    ax.set_xticklabels(xl, fontsize=6, rotation=60)
    ax.set_yticks(yt)
    ax.set_yticklabels(yl, fontsize=6)
    ax.set_xlim(-0.5, 255.5)
    ax.set_ylim(-0.5, 255.5)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("normalised m (code value)", fontsize=7)
    ax.set_ylabel("normalised v (code value)", fontsize=7)
    return im, zim


def vzero_note(g, n, vv):
    """Per panel: elements in v^ = 0 cells and their share of the total error."""
    import numpy as np
    z = np.zeros(g.shape, dtype=bool)
    z[:, vzero_rows(vv)] = True
    tot = np.nansum(np.where(n > 0, g * n, 0.0))
    zt = np.nansum(np.where(z & (n > 0), g * n, 0.0))
    return "v^=0: %d elements, %.3g%% of the error" % (int(n[z].sum()),
                                                       100 * zt / tot if tot > 0 else 0.0)


UNIT = "Adam update m/(sqrt(v)+eps), in units of the learning rate"


def plot(section_dir):
    import numpy as np
    plt = common.import_pyplot()
    if os.environ.get("EXMY_PLOT_ONLY") == "training":
        plot_training(plt, section_dir)
        return
    rows = {}
    for m in METHODS:
        for b in BLOCKINGS:
            path = os.path.join(section_dir, "grid_%s_%s.csv" % (m, b))
            if os.path.exists(path):
                rows[(m, b)] = common.read_csv(path)
    from matplotlib.colors import LinearSegmentedColormap
    reds = plt.get_cmap("Reds")
    zcmap = LinearSegmentedColormap.from_list("vzero",
                                              [reds(0.3 + 0.7 * i / 15) for i in range(16)])
    for key, stem, label, cbar in (
            ("count", "heatmap_usage", "elements per cell", "elements per cell (count), log"),
            ("mean_abs_err", "heatmap_abs", "mean |u32 - u8| per cell",
             "mean |u32 - u8| per cell (lr units), log"),
            ("mean_rel_err", "heatmap_rel", "mean |u32 - u8| / |u32| per cell",
             "mean |u32 - u8| / |u32| per cell (dimensionless), log")):
        panels = {k: grids(r, key) for k, r in rows.items()}
        vz = key != "count"
        norm = shared_norm(panels, key)
        znorm = shared_norm(panels, key, vzero=True) if vz else None
        cmap = plt.get_cmap("viridis").copy()
        cmap.set_under("#000000")
        cmap.set_over("#ff00ff")
        fig, axes = plt.subplots(len(METHODS), len(BLOCKINGS), figsize=(14, 12), squeeze=False,
                                 constrained_layout=True)
        im = zim = None
        for i, m in enumerate(METHODS):
            for j, b in enumerate(BLOCKINGS):
                if (m, b) in panels and norm is not None:
                    a, zb = draw(fig, axes[i][j], *panels[(m, b)], norm, cmap,
                                 "%s / %s" % (m, b), znorm, zcmap)
                    im = a
                    zim = zb or zim
                    if vz:
                        g, n, _, vv = panels[(m, b)]
                        axes[i][j].text(0.02, 0.97, vzero_note(g, n, vv),
                                        transform=axes[i][j].transAxes, fontsize=7, va="top",
                                        bbox=dict(facecolor="white", alpha=0.7, lw=0))
        if im is not None:
            cb = fig.colorbar(im, ax=axes, fraction=0.02, extend="both" if vz else "neither")
            cb.set_label(cbar + ("; cells with v^ != 0" if vz else ""), fontsize=8)
        if zim is not None:
            cb = fig.colorbar(zim, ax=axes, fraction=0.02, pad=0.01)
            cb.set_label("v^ = 0 cells (squares, any count), log", fontsize=8)
        clip = "" if key == "count" else (
            "\none log colour range for all panels, 1st-99th percentile of the v^ != 0 cells "
            "(black below, magenta above); the v^ = 0 cells (u8 = m^/eps) as squares on their "
            "own red scale, min to max")
        unit = "" if key == "count" else "\nu = %s" % UNIT
        fig.suptitle("%s; grey: cells with < %d elements; white: unused%s%s" % (
            label, MIN_COUNT, clip, unit), fontsize=10)
        common.save(fig, section_dir, stem)
        plt.close(fig)
    # Usage over error: contours of the element count on the error heatmap, and the share of the
    # total error carried by the cells that hold 90% of the elements.
    panels = {k: grids(r, "mean_abs_err") for k, r in rows.items()}
    norm = shared_norm(panels, "mean_abs_err")
    znorm = shared_norm(panels, "mean_abs_err", vzero=True)
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_under("#000000")
    cmap.set_over("#ff00ff")
    fig, axes = plt.subplots(len(METHODS), len(BLOCKINGS), figsize=(14, 12), squeeze=False,
                             constrained_layout=True)
    im = zim = None
    for i, m in enumerate(METHODS):
        for j, b in enumerate(BLOCKINGS):
            if (m, b) not in panels or norm is None:
                continue
            g, n, mv, vv = panels[(m, b)]
            ax = axes[i][j]
            im, zb = draw(fig, ax, g, n, mv, vv, norm, cmap, "%s / %s" % (m, b), znorm, zcmap)
            zim = zb or zim
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
            ax.text(0.02, 0.97, "90%% of elements in %d cells carry %.1f%% of the error\n%s"
                    % (int(hot.sum()), 100 * share, vzero_note(g, n, vv)),
                    transform=ax.transAxes, fontsize=7, va="top", color="white",
                    bbox=dict(facecolor="black", alpha=0.5, lw=0))
    if im is not None:
        cb = fig.colorbar(im, ax=axes, fraction=0.02, extend="both")
        cb.set_label("mean |u32 - u8| per cell (lr units), log; cells with v^ != 0", fontsize=8)
    if zim is not None:
        cb = fig.colorbar(zim, ax=axes, fraction=0.02, pad=0.01)
        cb.set_label("v^ = 0 cells (squares, any count), log", fontsize=8)
    fig.suptitle("mean |u32 - u8| (shared log colour, 1st-99th percentile of the v^ != 0 cells; "
                 "v^ = 0 cells as red squares, min to max) with contours of the element count "
                 "(white: 10, 100, 1000, ... elements per cell)\nu = %s" % UNIT, fontsize=10)
    common.save(fig, section_dir, "heatmap_overlap")
    plt.close(fig)
    plot_training(plt, section_dir)


# A run has diverged when its final loss is not finite or at least DIVERGED_LOSS: the rule of
# train_summary.csv's diverged_runs (reports/adam_heatmap_section.cpp). Diverged runs are drawn
# apart (thin dotted lines, a cross where each leaves the axis), never averaged with the others.
DIVERGED_LOSS = 100.0
COLOURS = ["#000000", "#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7",
           "#999999"]  # Okabe-Ito (colour-blind safe)


def runs_of(rows, key="loss"):
    """{optimizer: {seed: (steps, values)}} in first-appearance order."""
    import numpy as np
    out = {}
    for r in rows:
        v = r.get(key)
        out.setdefault(r["optimizer"], {}).setdefault(r["seed"], []).append(
            (int(r["step"]), float(v) if v not in (None, "") else float("nan")))
    res = {}
    for o, seeds in out.items():
        res[o] = {}
        for sd, pts in seeds.items():
            pts.sort()
            res[o][sd] = (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    return res


def diverged(values):
    import numpy as np
    last = values[-1] if len(values) else float("nan")
    return not (np.isfinite(last) and last < DIVERGED_LOSS)


def band(stack):
    """Median and band over runs (axis 0): the range for <= 4 runs, else the 10-90% quantiles."""
    import warnings
    import numpy as np
    warnings.filterwarnings("ignore", message="All-NaN slice")  # steps where every run is NaN
    med = np.nanmedian(stack, axis=0)
    if stack.shape[0] <= 4:
        return med, np.nanmin(stack, axis=0), np.nanmax(stack, axis=0), "range"
    return (med, np.nanpercentile(stack, 10, axis=0), np.nanpercentile(stack, 90, axis=0),
            "10-90% quantiles")


def loss_panel(ax, runs, opts, colour, cap, xmax=None, crosses=True):
    """Medians of the runs that did not diverge with their band; diverged runs apart."""
    import numpy as np
    notes = []
    for o in opts:
        col = colour[o]
        ok = [v for v in runs[o].values() if not diverged(v[1])]
        bad = [v for v in runs[o].values() if diverged(v[1])]
        n = len(runs[o])
        if ok:
            steps = ok[0][0]
            stack = np.vstack([v[1][:len(steps)] for v in ok])
            med, lo, hi, what = band(stack)
            ax.plot(steps, np.minimum(med, cap), lw=1.4 if o.endswith("fp32") else 1.0,
                    color=col, label="%s: median of %d/%d runs" % (o, len(ok), n))
            ax.fill_between(steps, np.minimum(lo, cap), np.minimum(hi, cap), color=col,
                            alpha=0.18, lw=0)
            notes.append(what)
        for i, (st, v) in enumerate(bad):
            shown = np.where(np.isfinite(v), np.minimum(v, cap), np.nan)
            ax.plot(st, shown, ls=":", lw=0.7, color=col,
                    label=("%s: %d/%d runs diverged (dotted)" % (o, len(bad), n)) if i == 0
                    else None)
            off = np.nonzero(~np.isfinite(v) | (v > cap))[0]
            if off.size and crosses:
                ax.plot([st[off[0]]], [cap], "x", ms=7, mew=1.5, color=col, clip_on=False)
    ax.set_ylim(0.0, cap)
    if xmax is not None:
        ax.set_xlim(0, xmax)
    return sorted(set(notes))


def plot_training(plt, section_dir):
    import numpy as np
    all_train = common.read_csv(os.path.join(section_dir, "train.csv"))
    fair = [r for r in all_train if r["optimizer"].startswith("dense_")]
    train = [r for r in all_train if not r["optimizer"].startswith("dense_")]
    for rows, stem in ((train, "train_loss"), (fair, "train_loss_fair")):
        if not rows:
            continue
        runs = runs_of(rows)
        opts = list(runs)
        colour = {o: COLOURS[c % len(COLOURS)] for c, o in enumerate(opts)}
        base = next((o for o in opts if o.endswith("fp32")), opts[0])
        first = [v[1][0] for o in opts for v in runs[o].values() if len(v[1])]
        # The linear axis ends a little above the largest initial loss: every run starts in it,
        # and a loss beyond it is a divergence (drawn at the edge), not a scale to compress.
        cap = 1.15 * max(x for x in first if np.isfinite(x))
        last = max(int(r["step"]) for r in rows)
        fair_task = stem == "train_loss_fair"
        fig, axes = plt.subplots(1, 3, figsize=(19, 4.8), constrained_layout=True)
        notes = loss_panel(axes[0], runs, opts, colour, cap, last)
        axes[0].set_title("batch cross-entropy (nats), linear axis: median over seeds "
                          "(band: %s); x: a diverged run leaves the axis" % ", ".join(notes),
                          fontsize=8)
        # Zoom on the second half, following the medians of the runs that did not diverge (a
        # single spiking run would stretch it) and the band of the fp32 baseline.
        loss_panel(axes[1], runs, opts, colour, cap, crosses=False)
        tail = []
        for o in opts:
            ok = [v for v in runs[o].values() if not diverged(v[1])]
            if not ok:
                continue
            steps = ok[0][0]
            med, lo, hi, _ = band(np.vstack([v[1][:len(steps)] for v in ok]))
            sel = steps >= last * 0.5
            tail += list(med[sel]) + (list(lo[sel]) + list(hi[sel]) if o == base else [])
        tail = [min(x, cap) for x in tail if np.isfinite(x)]
        lo_z, hi_z = (np.percentile(tail, 1), np.percentile(tail, 99)) if tail else (0.0, cap)
        pad = 0.1 * (hi_z - lo_z) + 1e-3
        axes[1].set_xlim(last * 0.5, last)
        axes[1].set_ylim(lo_z - pad, hi_z + pad)
        axes[1].set_title("second half of training, zoomed to the medians of the runs that did "
                          "not diverge", fontsize=8)
        for ax in axes[:2]:
            ax.set_xlabel("step")
            ax.set_ylabel("batch cross-entropy (nats)")
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=6, loc="upper right")
        ax = axes[2]
        if fair_task:
            # Paired differences: each 8-bit run minus the fp32 run of the same seed (same data
            # order and initialisation), median and band over the seeds.
            for o in opts:
                if o == base:
                    continue
                pairs = [(runs[o][sd][1], runs[base][sd][1]) for sd in runs[o]
                         if sd in runs[base] and not diverged(runs[o][sd][1])]
                if not pairs:
                    continue
                steps = runs[base][next(iter(runs[base]))][0]
                stack = np.vstack([a[:len(steps)] - b[:len(steps)] for a, b in pairs])
                med, lo, hi, what = band(stack)
                ax.plot(steps, med, lw=1, color=colour[o],
                        label="%s - %s (%d seeds; band: %s)" % (o, base, len(pairs), what))
                ax.fill_between(steps, lo, hi, color=colour[o], alpha=0.18, lw=0)
            ax.axhline(0.0, color="black", lw=0.8)
            ax.set_ylabel("loss difference to %s, same seed (nats)" % base)
            ax.set_title("paired difference to %s (runs that did not diverge)" % base, fontsize=8)
            ax.set_xlabel("step")
        else:
            sh = runs_of(rows, "logit_sharpness")
            for o in opts:
                st0 = next(iter(sh[o].values()))[0]
                keep = st0 <= 60
                if not keep.any():
                    continue
                stack = np.vstack([v[1][:len(st0)][keep] for v in sh[o].values()])
                stack = np.where(np.isfinite(stack) & (stack > 0), stack, np.nan)
                med, lo, hi, what = band(stack)
                ax.plot(st0[keep], med, lw=1, color=colour[o], label=o)
                ax.fill_between(st0[keep], lo, hi, color=colour[o], alpha=0.12, lw=0)
            ax.set_yscale("log")
            ax.set_xlabel("step")
            ax.set_ylabel("logit sharpness (eps 5e-4; dimensionless)")
            ax.set_title("logit sharpness, first 60 steps: median over seeds (band: range), log "
                         "axis", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
        title = ("fair task (every feature active, leaky ReLU): 8-bit vs 32-bit Adam"
                 if fair_task else "8-bit Adam variants vs fp32 Adam")
        fig.suptitle(title, fontsize=10)
        common.save(fig, section_dir, stem)
        plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
