"""Figures of the spike section: loss and input-layer RMS_t per run with the detected events.

The runs are compared, so each row shares its y-axis across them.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402


def plot(section_dir):
    plt = common.import_pyplot()
    traces = sorted(glob.glob(os.path.join(section_dir, "trace_*.csv")))
    if not traces:
        return
    fig, axes = plt.subplots(2, len(traces), figsize=(5.5 * len(traces), 6.5), squeeze=False,
                             sharex="col", sharey="row", constrained_layout=True)
    for j, path in enumerate(traces):
        run = os.path.basename(path)[len("trace_"):-len(".csv")]
        rows = common.read_csv(path)
        step = [int(r["step"]) for r in rows]
        loss = [float(r["loss"]) for r in rows]
        rms = [float(r["rms"]) for r in rows]
        ev_path = os.path.join(section_dir, "events_%s.csv" % run)
        ev = common.read_csv(ev_path) if os.path.exists(ev_path) else []
        at = {s: i for i, s in enumerate(step)}
        ax = axes[0][j]
        ax.plot(step, loss, lw=0.6, color="black")
        ls = [int(e["step"]) for e in ev if e["event"] == "loss_spike"]
        ax.plot(ls, [loss[at[s]] for s in ls if s in at], "v", color="red", ms=6,
                label="loss spike (%d)" % len(ls))
        ax.set_title(run, fontsize=9)
        ax.set_ylabel("batch cross-entropy (nats), log")
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        ax = axes[1][j]
        ax.plot(step, rms, lw=0.6, color="#1f77b4")
        rs = [int(e["step"]) for e in ev if e["event"] == "rms_spike"]
        ax.plot(rs, [rms[at[s]] for s in rs if s in at], "o", color="orange", ms=4,
                label="RMS spike (%d)" % len(rs))
        ax.axhline(2.3, color="k", ls="--", lw=0.8, label="RMS spike threshold 2.3")
        ax.set_ylabel("input-layer RMS_t (dimensionless), log")
        ax.set_xlabel("step")
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    common.save(fig, section_dir, "spikes")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
