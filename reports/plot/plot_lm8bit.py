"""Figure of the lm-8bit section: training loss of the small language model, fp32 against 8-bit
block-wise AdamW states, standard and stable embedding side by side on shared axes."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plot_common as common  # noqa: E402

COLOURS = {"fp32": "#000000", "8bit_block2048": "#d62728", "8bit_block256": "#1f77b4"}


def plot(section_dir):
    plt = common.import_pyplot()
    rows = common.read_csv(os.path.join(section_dir, "curves.csv"))
    floors = {r["quantity"].split(" ")[0]: float(r["nats_per_token"])
              for r in common.read_csv(os.path.join(section_dir, "floors.csv"))}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True, sharey=True,
                             constrained_layout=True)
    for ax, emb in zip(axes, ("standard", "stable")):
        for opt, colour in COLOURS.items():
            by_step = {}
            for r in rows:
                if r["embedding"] != emb or r["optimizer"] != opt:
                    continue
                by_step.setdefault(int(r["step"]), []).append(float(r["train_loss"]))
            if not by_step:
                continue
            steps = sorted(by_step)
            med, lo, hi = [], [], []
            for s in steps:
                v = sorted(x for x in by_step[s] if x == x)
                if not v:
                    v = [float("nan")]
                med.append(v[len(v) // 2])
                lo.append(v[0])
                hi.append(v[-1])
            n = max(len(by_step[s]) for s in steps)
            ax.plot(steps, med, color=colour, lw=1.2, label="%s (median of %d seeds)" % (opt, n))
            ax.fill_between(steps, lo, hi, color=colour, alpha=0.18, lw=0)
        for key, style, name in (("unigram", "--", "unigram floor"),
                                 ("process", ":", "process floor")):
            if key in floors:
                ax.axhline(floors[key], color="grey", ls=style, lw=0.9, label=name)
        ax.set_title("%s embedding" % emb, fontsize=10)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("training loss (nats/token, 10-step window mean)")
    axes[0].legend(fontsize=7, loc="upper right")
    common.save(fig, section_dir, "lm8bit_loss")
    plt.close(fig)


if __name__ == "__main__":
    common.main_guard(plot)
