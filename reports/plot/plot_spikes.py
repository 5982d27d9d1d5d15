"""Figure of the spike section: batch loss and input-layer RMS_t around the input shifts for each
optimizer (seed 0 of the reference setting; shared axes), and the lead-time histogram of every
loss spike of the runs without update clipping."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

RUNS = [("adamw", "AdamW"), ("stableadamw", "StableAdamW (update clipping)"),
        ("adamw_clip", "AdamW + gradient clipping (norm 1)")]


def plot(section_dir):
    plt = common.import_pyplot()
    runs = [(k, t) for k, t in RUNS if os.path.exists(os.path.join(section_dir, "trace_%s.csv" % k))]
    if not runs:
        return
    ncol = len(runs) + 1
    fig, axes = plt.subplots(2, ncol, figsize=(4.2 * ncol, 6.0), squeeze=False,
                             constrained_layout=True)
    lo_step = None
    data = []
    for key, _ in runs:
        rows = common.read_csv(os.path.join(section_dir, "trace_%s.csv" % key))
        ev_path = os.path.join(section_dir, "events_%s.csv" % key)
        ev = common.read_csv(ev_path) if os.path.exists(ev_path) else []
        onsets = [int(e["step"]) for e in ev if e["event"] == "onset"]
        if onsets:
            lo_step = min(onsets) - 60 if lo_step is None else min(lo_step, min(onsets) - 60)
        data.append((rows, ev, onsets))
    lo_step = lo_step or 0
    ymax_loss = 0.0
    ymax_rms = 0.0
    for rows, _, _ in data:
        for r in rows:
            if int(r["step"]) >= lo_step:
                ymax_loss = max(ymax_loss, float(r["loss"]))
                ymax_rms = max(ymax_rms, float(r["rms"]))
    for j, ((key, title), (rows, ev, onsets)) in enumerate(zip(runs, data)):
        step = [int(r["step"]) for r in rows if int(r["step"]) >= lo_step]
        loss = [float(r["loss"]) for r in rows if int(r["step"]) >= lo_step]
        rms = [float(r["rms"]) for r in rows if int(r["step"]) >= lo_step]
        at = {s: i for i, s in enumerate(step)}
        ls = [int(e["step"]) for e in ev if e["event"] == "loss_spike" and int(e["step"]) in at]
        pre = {int(e["step"]): e["preceded_by_rms_spike"] == "1" for e in ev
               if e["event"] == "loss_spike"}
        rs = [int(e["step"]) for e in ev if e["event"] == "rms_spike" and int(e["step"]) in at]
        ax = axes[0][j]
        ax.plot(step, loss, lw=0.6, color="black")
        for s in onsets:
            ax.axvline(s, color="grey", ls="--", lw=0.7)
            axes[1][j].axvline(s, color="grey", ls="--", lw=0.7)
        g = [s for s in ls if pre.get(s)]
        r = [s for s in ls if not pre.get(s)]
        ax.plot(g, [loss[at[s]] for s in g], "v", color="green", ms=6,
                label="loss spike after an RMS spike (%d)" % len(g))
        ax.plot(r, [loss[at[s]] for s in r], "v", color="red", ms=6,
                label="other loss spike (%d)" % len(r))
        ax.set_title(title, fontsize=9)
        ax.set_ylim(0, ymax_loss * 1.08)
        ax.set_xlim(lo_step, step[-1])
        ax.set_ylabel("batch loss (cross-entropy, nats)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        ax = axes[1][j]
        ax.plot(step, rms, lw=0.6, color="#1f77b4")
        ax.plot(rs, [rms[at[s]] for s in rs], "o", color="orange", ms=3,
                label="RMS spike start (%d)" % len(rs))
        ax.axhline(2.3, color="k", ls="--", lw=0.8)
        ax.set_ylabel("input-layer RMS_t (dimensionless)")
        ax.set_xlabel("step")
        ax.set_yscale("log")
        ax.set_ylim(0.1, ymax_rms * 1.5)
        ax.set_xlim(lo_step, step[-1])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    hist_path = os.path.join(section_dir, "lead_histogram.csv")
    ax = axes[0][ncol - 1]
    if os.path.exists(hist_path):
        h = common.read_csv(hist_path)
        lead = [int(r["lead_steps"]) for r in h]
        n = [int(r["loss_spikes"]) for r in h]
        ax.bar(lead, n, width=0.8, color=["grey" if v < 0 else
                                          ("green" if 1 <= v <= 8 else "red") for v in lead])
        ax.axvspan(0.5, 8.5, color="green", alpha=0.08)
        ax.set_xlabel("lead: steps since the last input-layer\nRMS spike start (-1: none in 50)")
        ax.set_ylabel("loss spikes (all seeds and settings)")
        ax.set_title("lead times (green band: 1-8 steps)", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[1][ncol - 1].axis("off")
    common.save(fig, section_dir, "spikes")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
