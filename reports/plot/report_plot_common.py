"""Shared helpers for the exmy report figures: CSV loading, deterministic SVG/PNG output.

Every script is run as `python3 SCRIPT SECTION_DIR` by `exmy report`; it reads the CSVs there
and writes NAME.png and NAME.svg next to them, each through a temporary file and os.replace so
that an interrupted run never leaves a partial figure. Exit status 3 means matplotlib is missing.
"""
import csv
import os
import sys


def import_pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "exmy-report"  # stable SVG ids
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        sys.stderr.write("matplotlib is not importable by %s\n" % sys.executable)
        sys.exit(3)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def save(fig, out_dir, stem):
    """NAME.png, then NAME.svg from the same layout.

    The PNG is saved as it always was (bbox_inches="tight": a layout pass, the tight box, the
    drawing), so its bytes are unchanged. Saved the same way, the SVG repeated the layout pass
    (constrained layout) and the tight-box pass at 72 dpi before its own drawing, about a fifth
    of the quick report's figure time (bench/results/2026-12-04-report-speed.md), for a layout a
    few points off the PNG's (text extents measured at 72 instead of 110 dpi). The SVG now
    reuses the PNG's layout and box: the layout engine is switched off (the axes keep the
    positions the PNG's pass gave them) and the box, in inches, is passed explicitly, so that
    matplotlib only draws; the SVG is the PNG's figure to the point, the same elements and texts.
    Where the box could not be captured (a matplotlib whose print_figure asks for it other than
    once), the SVG is saved as before.
    """
    from matplotlib import rcParams
    boxes = []
    tight = fig.get_tightbbox

    def capture(*args, **kwargs):  # print_figure's call for bbox_inches="tight"
        box = tight(*args, **kwargs)
        boxes.append(box)
        return box

    fig.get_tightbbox = capture  # an instance attribute: shadows the method for this save only
    try:
        _save_one(fig, out_dir, stem, "png", "tight")
    finally:
        del fig.get_tightbbox
    if len(boxes) != 1:
        _save_one(fig, out_dir, stem, "svg", "tight")
        return
    engine = fig.get_layout_engine()
    fig.set_layout_engine(None)  # with the default rcParams: no engine, no layout pass
    try:
        _save_one(fig, out_dir, stem, "svg", boxes[0].padded(rcParams["savefig.pad_inches"]))
    finally:
        if engine is not None:
            fig.set_layout_engine(engine)


def _save_one(fig, out_dir, stem, ext, bbox):
    final = os.path.join(out_dir, stem + "." + ext)
    tmp = final + ".tmp-%d.%s" % (os.getpid(), ext)
    try:
        meta = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(tmp, dpi=110, bbox_inches=bbox, metadata=meta)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def main_guard(fn):
    try:
        fn(sys.argv[1])
    except KeyboardInterrupt:
        sys.exit(130)
