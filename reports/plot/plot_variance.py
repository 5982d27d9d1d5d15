"""Figures of report section 1 (variance vs inner dimension), from the CSVs.

Small multiples by scheme family (rows: input distributions), at most five series per panel,
each with its 95% bootstrap interval. Var(d) is drawn divided by k, so that the k-law of eq. 12
(slope 1) is a flat line and a faster growth (absmax scaling) or a constant factor (masking,
stochastic rounding) is visible instead of hidden under six decades.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

FAMILIES = [
    ("int8 absmax (SwitchBack)", lambda s: s.startswith("int8")),
    ("fp8 absmax casts", lambda s: s.startswith("e4m3fn") or s.startswith("e5m2")),
    ("masking (no scaling)", lambda s: s.endswith("_mask")),
    ("elementwise rne / sr (no scaling)",
     lambda s: s.startswith("e8m") and not s.endswith("_mask")),
]
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]  # Okabe-Ito


def f(r, key):
    return float(r[key])


def pow2(k):
    """The k axis is logarithmic in 2: only powers of two are drawn as lines. The model shapes'
    k (1280, 5120, 32000: the D.3 rows) sit between them and, with their own sampling noise,
    turned the lines into a zig-zag; they stay in variance.csv."""
    return k > 0 and (k & (k - 1)) == 0


def dodge(k, i, n, width=0.12):
    """Series i of n shifted by a fraction of an octave so that their intervals do not overlap."""
    return [kk * 2.0 ** (width * (i - (n - 1) / 2.0)) for kk in k]


def plot(section_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(section_dir, "variance.csv"))
    dists = list(dict.fromkeys(r["dist"] for r in rows))
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    fams = [(name, [s for s in schemes if pred(s)]) for name, pred in FAMILIES]
    fams = [x for x in fams if x[1]]

    def series(dist, scheme):
        pts = sorted((int(r["k"]), r) for r in rows if r["dist"] == dist and r["scheme"] == scheme
                     and pow2(int(r["k"])))
        return [p[0] for p in pts], [p[1] for p in pts]

    def grid(stem, title, ylabel, draw, sharey=False):
        fig, axes = plt.subplots(len(dists), len(fams), figsize=(4.2 * len(fams), 3.3 * len(dists)),
                                 squeeze=False, constrained_layout=True,
                                 sharey="all" if sharey else False)
        for i, d in enumerate(dists):
            for j, (fname, members) in enumerate(fams):
                ax = axes[i][j]
                for c, s in enumerate(members):
                    k, rs = series(d, s)
                    if k:
                        draw(ax, dodge(k, c, len(members)), rs, COLOURS[c % len(COLOURS)], s)
                if sharey:
                    ax.tick_params(labelleft=True)
                ax.set_xscale("log", base=2)
                ax.grid(True, which="both", alpha=0.3)
                if i == 0:
                    ax.set_title(fname, fontsize=9)
                if j == 0:
                    ax.set_ylabel("%s\n%s" % (d, ylabel), fontsize=8)
                if i == len(dists) - 1:
                    ax.set_xlabel("inner dimension k", fontsize=8)
                ax.tick_params(labelsize=7)
                ax.legend(fontsize=6, loc="best")
        fig.suptitle(title, fontsize=10)
        common.save(fig, section_dir, stem)
        plt.close(fig)

    def var_over_k(ax, k, rs, col, s):
        kt = [f(r, "k") for r in rs]
        v = [f(r, "var_d") / kk for r, kk in zip(rs, kt)]
        lo = [max(0.0, (f(r, "var_d") - f(r, "var_d_lo")) / kk) for r, kk in zip(rs, kt)]
        hi = [max(0.0, (f(r, "var_d_hi") - f(r, "var_d")) / kk) for r, kk in zip(rs, kt)]
        ax.errorbar(k, v, yerr=[lo, hi], fmt="o-", ms=3, lw=1, capsize=2, color=col, label=s)
        ax.plot(k, [f(r, "predicted") / kk for r, kk in zip(rs, kt)], "--", lw=0.8, color=col)
        ax.set_yscale("log")

    grid("variance_vs_k",
         "Var(d)/k (inputs' units squared per term): measured with 95% intervals (markers), "
         "eq. 12 predicted (dashed); flat = linear in k; power-of-two k", "Var(d) / k",
         var_over_k)

    def paper_quantity(ax, k, rs, col, s):
        kt = [f(r, "k") for r in rs]
        v = [f(r, "delta_var") / kk for r, kk in zip(rs, kt)]
        lo = [max(0.0, (f(r, "delta_var") - f(r, "delta_var_lo")) / kk) for r, kk in zip(rs, kt)]
        hi = [max(0.0, (f(r, "delta_var_hi") - f(r, "delta_var")) / kk) for r, kk in zip(rs, kt)]
        ax.errorbar(k, v, yerr=[lo, hi], fmt="o", ms=3, capsize=2, color=col, label=s)
        ax.plot(k, [f(r, "predicted_delta") / kk for r, kk in zip(rs, kt)], "-", lw=1, color=col)
        ax.plot(k, [f(r, "predicted") / kk for r, kk in zip(rs, kt)], ":", lw=1, color=col)
        ax.axhline(0.0, color="grey", lw=0.6)

    grid("paper_quantity",
         "the paper's quantity [Var(<u^,v^>) - Var(<u,v>)] / k (inputs' units squared per term) "
         "with 95% intervals; solid: its expectation with the error-input covariance, dotted: "
         "eq. 12; power-of-two k", "delta / k",
         paper_quantity)

    def nts(ax, k, rs, col, s):
        v = [f(r, "noise_to_signal") for r in rs]
        lo = [max(0.0, a - f(r, "noise_to_signal_lo")) for a, r in zip(v, rs)]
        hi = [max(0.0, f(r, "noise_to_signal_hi") - a) for a, r in zip(v, rs)]
        ax.errorbar(k, v, yerr=[lo, hi], fmt="o-", ms=3, lw=1, capsize=2, color=col, label=s)
        # Reference: eq. 12 (with the measured s_q^2) over the measured signal variance.
        ax.plot(k, [f(r, "predicted") / f(r, "var_uv") for r in rs], "--", lw=0.8, color=col)
        ax.set_yscale("log")

    grid("noise_to_signal",
         "noise-to-signal Var(d) / Var(<u,v>) (dimensionless) vs k: measured with 95% intervals "
         "(markers), eq. 12 over Var(<u,v>) (dashed); flat = noise grows like the signal; one "
         "y-range for every panel; power-of-two k", "Var(d) / Var(<u,v>)", nts, sharey=True)

    def sq(ax, k, rs, col, s):
        q = [0.5 * (f(r, "sigma_qu2") + f(r, "sigma_qv2")) for r in rs]
        lo = [max(0.0, a - f(r, "sigma_q2_lo")) for a, r in zip(q, rs)]
        hi = [max(0.0, f(r, "sigma_q2_hi") - a) for a, r in zip(q, rs)]
        ax.errorbar(k, q, yerr=[lo, hi], fmt="o", ms=3, capsize=2, color=col, label=s)
        closed = [f(r, "sigma_q2_closed") for r in rs]
        if any(c > 0 for c in closed):
            ax.plot(k, closed, "-", lw=1, color=col, alpha=0.7)
        ax.set_yscale("log")

    grid("sigma_q_vs_k",
         "per-element error variance s_q^2 (inputs' units squared) with 95% intervals; lines: "
         "closed form E[M^2]/(12 127^2) (sr: /6) for the int8 absmax schemes; power-of-two k",
         "s_q^2", sq)

    # Closed forms: sr/rne = 2 and the masking factor.
    cf = common.read_csv(os.path.join(section_dir, "closed_forms.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), constrained_layout=True)
    ax = axes[0]
    pairs = list(dict.fromkeys(r["scheme"] for r in cf if r["check"] == "sr_over_rne_var_d"))
    c = 0
    for d in dists:
        for p in pairs:
            pts = sorted((int(r["k"]), r) for r in cf if r["check"] == "sr_over_rne_var_d"
                         and r["dist"] == d and r["scheme"] == p and pow2(int(r["k"])))
            if not pts or d != "gaussian":
                continue
            k = dodge([x[0] for x in pts], c, len(pairs), 0.2)
            m = [f(x[1], "measured") for x in pts]
            ax.errorbar(k, m, yerr=[[max(0.0, a - f(x[1], "lo")) for a, x in zip(m, pts)],
                                    [max(0.0, f(x[1], "hi") - a) for a, x in zip(m, pts)]],
                        fmt="o-", ms=3, lw=1, capsize=2, color=COLOURS[c % len(COLOURS)],
                        label="%s (%s)" % (p, d))
            c += 1
    ax.axhline(2.0, color="black", lw=1, ls="--", label="closed form 2")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("inner dimension k")
    ax.set_ylabel("Var(d) sr / Var(d) rne (ratio)")
    ax.set_title("stochastic rounding vs round to nearest, gaussian\n(paired 95% intervals; "
                 "series shifted apart at each power-of-two k)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    ax = axes[1]
    masks = list(dict.fromkeys(r["scheme"] for r in cf if r["check"].startswith("mask_ratio")))
    for c, s in enumerate(masks):
        pts = sorted((int(r["k"]), r) for r in cf if r["check"].startswith("mask_ratio")
                     and r["dist"] == "gaussian" and r["scheme"] == s and pow2(int(r["k"])))
        if not pts:
            continue
        k = dodge([x[0] for x in pts], c, len(masks), 0.2)
        m = [f(x[1], "measured") for x in pts]
        col = COLOURS[c % len(COLOURS)]
        ax.errorbar(k, m, yerr=[[max(0.0, a - f(x[1], "lo")) for a, x in zip(m, pts)],
                                [max(0.0, f(x[1], "hi") - a) for a, x in zip(m, pts)]],
                    fmt="o", ms=3, capsize=2, color=col, label=s)
        ax.plot(k, [f(x[1], "closed_form") for x in pts], "-", lw=1, color=col)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="eq. 12 (no correlation)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("inner dimension k")
    ax.set_ylabel("Var(d) / eq. 12 predicted (ratio)")
    ax.set_title("masking, gaussian: measured (markers, 95% intervals) vs 1 + E[rho]^2/E[rho^2] "
                 "(lines)\nseries shifted apart at each power-of-two k",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    common.save(fig, section_dir, "closed_forms")
    plt.close(fig)

    # Both panels compare the same ratios: one y-range and one colour per scheme for both.
    fig, axes = plt.subplots(2, 1, figsize=(11, 9), sharey=True, constrained_layout=True)
    d3_colour = {}
    for csv_name in ("d3_measured.csv", "d3_shapes.csv"):
        path = os.path.join(section_dir, csv_name)
        for r in common.read_csv(path) if os.path.exists(path) else []:
            d3_colour.setdefault(r["scheme"], COLOURS[len(d3_colour) % len(COLOURS)])
    for ax, (csv_name, what) in zip(axes, (("d3_measured.csv", "i.i.d. rows x k operands"),
                                           ("d3_shapes.csv", "operands of the paper's shapes "
                                            "(tensor-wise absmax over the whole tensor)"))):
        path = os.path.join(section_dir, csv_name)
        d3 = common.read_csv(path) if os.path.exists(path) else []
        if not d3:
            ax.set_visible(False)
            continue
        labels = list(dict.fromkeys(r["model"] + "\n" + r["matmul"] for r in d3))
        d3schemes = list(dict.fromkeys(r["scheme"] for r in d3))
        width = 0.8 / (len(d3schemes) + 1)
        model_vals = {r["model"] + "\n" + r["matmul"]: f(r, "model_wgrad_over_this") for r in d3}
        xs = list(range(len(labels)))
        ax.bar([x - 0.4 + width / 2 for x in xs], [model_vals[l] for l in labels], width,
               color="black", label="k ratio (arithmetic)")
        for j, s in enumerate(d3schemes):
            sel = {r["model"] + "\n" + r["matmul"]: r for r in d3 if r["scheme"] == s}
            vals = [f(sel[l], "measured_wgrad_over_this") if l in sel else 0 for l in labels]
            lo = [max(0.0, v - f(sel[l], "lo")) if l in sel else 0 for v, l in zip(vals, labels)]
            hi = [max(0.0, f(sel[l], "hi") - v) if l in sel else 0 for v, l in zip(vals, labels)]
            ax.bar([x - 0.4 + width * (j + 1.5) for x in xs], vals, width, yerr=[lo, hi],
                   capsize=2, color=d3_colour[s], label=s)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("Var(d) weight grad / Var(d) this matmul (ratio)")
        ax.tick_params(labelleft=True)
        ax.set_title("Appendix D.3: weight-gradient noise over this matmul's (>1: the weight "
                     "gradient is noisier); %s, gaussian, 95%% intervals" % what, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    common.save(fig, section_dir, "d3_ratios")
    plt.close(fig)

if __name__ == "__main__":
    common.main_guard(plot)
