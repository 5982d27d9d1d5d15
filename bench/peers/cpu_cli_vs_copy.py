"""Whole-process CLI cast against copying the file (issue 15's CLI row).

Makes a 2^26-element fp32 .npy (normal(0, 100)), warms the page cache by reading it, then times
whole processes, round-robin, median of --reps (>= 5):
  cp X Z                                          the copy the target is measured against
  exmy cast e4m3fn --in X --out Y                 build-cpu/cli/exmy (its default threads)
  exmy cast ... with OMP_NUM_THREADS=1            the same on one thread
  exmy cast ... with OMP_WAIT_POLICY=passive      default threads, idle threads sleep (on a
                                                  loaded 2-core machine spinning waits cost ~3x)
  python -c 'np.load; astype(ml_dtypes.float8_e4m3fn); np.save'   a new user's numpy route
Outputs are removed before every run (outside the timing), so each run creates its file; writes
land in the page cache (no fsync), as for cp. Reports each speed as input elements per second and
exmy's speed over cp's (target >= 0.5), and checks exmy's codes against ml_dtypes' bit for bit.
Usage: python3 bench/peers/cpu_cli_vs_copy.py [--log2n 26] [--reps 5] [--exmy PATH] [--dir DIR]
       [--json OUT.json]
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]

NUMPY_ROUTE = ("import sys, numpy as np, ml_dtypes; "
               "np.save(sys.argv[2], np.load(sys.argv[1]).astype(ml_dtypes.float8_e4m3fn))")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log2n", type=int, default=26)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--exmy", default=str(ROOT / "build-cpu" / "cli" / "exmy"))
    ap.add_argument("--dir", default="/tmp/exmy-cli-bench")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.reps < 5:
        ap.error("--reps: at least 5")
    d = pathlib.Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    n = 1 << a.log2n
    x = d / "x.npy"
    if not x.exists() or x.stat().st_size < 4 * n:
        rng = np.random.default_rng(20261126)
        np.save(x, (rng.standard_normal(n, dtype=np.float32) * 100).astype(np.float32))
    with open(x, "rb") as f:  # warm the page cache
        while f.read(1 << 24):
            pass
    outs = {"cp": d / "z.npy", "exmy": d / "y.npy", "exmy_1thread": d / "y1.npy",
            "exmy_passive": d / "yp.npy", "numpy_ml_dtypes": d / "m.npy"}
    env1 = dict(os.environ, OMP_NUM_THREADS="1")
    envp = dict(os.environ, OMP_WAIT_POLICY="passive")
    cmds = {
        "cp": (["cp", str(x), str(outs["cp"])], None),
        "exmy": ([a.exmy, "cast", "e4m3fn", "--in", str(x), "--out", str(outs["exmy"])], None),
        "exmy_1thread": ([a.exmy, "cast", "e4m3fn", "--in", str(x), "--out",
                          str(outs["exmy_1thread"])], env1),
        "exmy_passive": ([a.exmy, "cast", "e4m3fn", "--in", str(x), "--out",
                          str(outs["exmy_passive"])], envp),
        "numpy_ml_dtypes": ([sys.executable, "-c", NUMPY_ROUTE, str(x), str(outs["numpy_ml_dtypes"])],
                            None),
    }
    ts = {k: [] for k in cmds}
    for rep in range(a.reps + 1):  # the first round is a warm-up
        for k, (cmd, env) in cmds.items():
            outs[k].unlink(missing_ok=True)
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            dt = time.perf_counter() - t0
            if rep:
                ts[k].append(dt)
    med = {k: statistics.median(v) for k, v in ts.items()}
    ours = np.load(outs["exmy"]).view(np.uint8)
    # ml_dtypes' .npy stores float8 as an opaque 1-byte type: its payload is the last n bytes.
    theirs = np.frombuffer(outs["numpy_ml_dtypes"].read_bytes()[-n:], np.uint8)
    differ = int(np.count_nonzero(ours.ravel() != theirs)) if theirs.size == n else -1
    one_thread = int(np.count_nonzero(np.load(outs["exmy_1thread"]).view(np.uint8) != ours))
    res = {"n": n, "file_bytes": x.stat().st_size, "reps": a.reps, "cpu_count": os.cpu_count(),
           "median_s": med, "Melem_per_s": {k: n / v / 1e6 for k, v in med.items()},
           "exmy_over_copy": med["cp"] / med["exmy"],
           "exmy_1thread_over_copy": med["cp"] / med["exmy_1thread"],
           "exmy_passive_over_copy": med["cp"] / med["exmy_passive"],
           "exmy_over_numpy_ml_dtypes": med["numpy_ml_dtypes"] / med["exmy"],
           "codes_differ_from_ml_dtypes": differ, "codes_differ_1thread": one_thread,
           "all_s": ts}
    for k in cmds:
        print(f"{k:16s} median {med[k]:.3f} s  ({n / med[k] / 1e6:.0f} M elem/s)  all "
              + " ".join(f"{t:.3f}" for t in ts[k]))
    print(f"exmy / cp speed: {res['exmy_over_copy']:.3f} (target >= 0.5: "
          f"{'met' if res['exmy_over_copy'] >= 0.5 else 'not met'}); 1 thread "
          f"{res['exmy_1thread_over_copy']:.3f}; passive wait {res['exmy_passive_over_copy']:.3f}; exmy / numpy+ml_dtypes "
          f"{res['exmy_over_numpy_ml_dtypes']:.2f}x; codes differing from ml_dtypes: {differ}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    for p in outs.values():
        p.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
