"""AFTER/BEFORE time ratios of Google Benchmark runs written by bench/gpu_before_after.sh.

    python3 bench/compare_gbench.py DIR [--limit 1.05]

Per benchmark: the median aggregate of each round's run, then the median over rounds, for each
side; prints the ratio after/before (above 1: slower), marks those above --limit, and exits 1 if
any is, or if nothing was compared. Benchmarks present on one side only are listed, not compared.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys


def medians(paths):
    per = {}
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        for b in data.get("benchmarks", []):
            if b.get("aggregate_name") != "median":
                continue
            name = re.sub(r"_median$", "", b["name"])
            per.setdefault(name, []).append(b["real_time"])
    return {k: statistics.median(v) for k, v in per.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--limit", type=float, default=1.05)
    a = ap.parse_args()
    worst = []
    compared = 0
    for bench in sorted({re.sub(r"^(before|after)-(.*)-r\d+\.json$", r"\2", os.path.basename(p))
                         for p in glob.glob(os.path.join(a.dir, "*-r*.json"))}):
        b = medians(glob.glob(os.path.join(a.dir, "before-%s-r*.json" % bench)))
        f = medians(glob.glob(os.path.join(a.dir, "after-%s-r*.json" % bench)))
        print("## %s" % bench)
        for name in sorted(set(b) | set(f)):
            if name not in b or name not in f:
                print("  %-60s only %s" % (name, "before" if name in b else "after"))
                continue
            r = f[name] / b[name]
            compared += 1
            flag = "  SLOWER" if r > a.limit else ""
            print("  %-60s %10.2f %10.2f  %.3f%s" % (name, b[name], f[name], r, flag))
            if r > a.limit:
                worst.append((r, bench, name))
    if compared == 0:
        # A comparison of nothing must not read as "no slowdown".
        print("nothing compared: no benchmark ran on both sides")
        return 1
    if worst:
        print("%d benchmarks more than %.0f%% slower" % (len(worst), (a.limit - 1) * 100))
        return 1
    print("%d benchmarks compared, none more than %.0f%% slower" % (compared, (a.limit - 1) * 100))
    return 0


if __name__ == "__main__":
    sys.exit(main())
