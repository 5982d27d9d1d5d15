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
    for ext in ("png", "svg"):
        final = os.path.join(out_dir, stem + "." + ext)
        tmp = final + ".tmp-%d.%s" % (os.getpid(), ext)
        try:
            meta = {"Date": None} if ext == "svg" else {"Software": None}
            fig.savefig(tmp, dpi=110, bbox_inches="tight", metadata=meta)
            os.replace(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def main_guard(fn):
    try:
        fn(sys.argv[1])
    except KeyboardInterrupt:
        sys.exit(130)
