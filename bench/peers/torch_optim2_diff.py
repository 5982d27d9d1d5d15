#!/usr/bin/env python3
"""Diffs a capture of torch_optim2_capture.py against `exmy step`, bit for bit: for every case the
inputs are regenerated (the capture's own inputs(), checked against the recorded sha256), exmy runs
the case's optimizer and options under its profile (torch-cuda, torch-cuda-foreach,
torch-cuda-fused) on its CPU engine or (--exmy-device cuda) its GPU kernels, and the parameters and
each state array torch keeps are compared (NaNs as a class; exp_avg/exp_avg_sq/max_exp_avg_sq are
exmy's state1/state2/state3 for Adam; 0-dim states such as step and mu_product are not compared).
Cases exmy has no model for (Adafactor) are reported as refused.

    torch_optim2_diff.py --caps DIR --exmy build/cli/exmy --out RESULT_DIR [--exmy-device cpu]
        [--profile P]   (a dry run on a CPU capture: every case under P, e.g. torch-cpu:avx512:t2)

Writes RESULT_DIR/summary.json and summary.md; exit 0 when no bit differs, 1 when any does, 2 on a
harness error.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ADAM_FILES = {"exp_avg": "state1", "exp_avg_sq": "state2", "max_exp_avg_sq": "state3"}


def capture_module():
    spec = importlib.util.spec_from_file_location("cap", os.path.join(HERE,
                                                                      "torch_optim2_capture.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def f32_bits(codes, dname):
    """torch's stored bit patterns as the fp32 bits of the same values."""
    if dname == "fp32":
        return codes.astype(np.uint32)
    if dname == "bf16":
        return codes.astype(np.uint32) << 16
    return codes.view(np.float16).astype(np.float32).view(np.uint32)


def differ(a, b):
    na = (a & 0x7FFFFFFF) > 0x7F800000
    nb = (b & 0x7FFFFFFF) > 0x7F800000
    return np.nonzero((a != b) & ~(na & nb))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--caps", required=True)
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--exmy-device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--profile", default="", help="override every case's profile (dry runs)")
    args = ap.parse_args()
    cap = capture_module()
    meta = json.load(open(os.path.join(args.caps, "capture.json")))
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for c in meta["cases"]:
            row = {k: c[k] for k in ("name", "family", "config", "dtype", "shape", "form")}
            row["profile"] = args.profile or c["profile"]
            if "torch_error" in c:
                row["torch_refused"] = c["torch_error"]
                rows.append(row)
                continue
            p0, grads = cap.inputs(meta["seed"], tuple(c["shape"]), c["steps"], c["dtype"])
            if cap.sha(p0, grads) != c["inputs_sha256"]:
                raise RuntimeError(f"{c['name']}: regenerated inputs differ from the capture's")
            np.save(os.path.join(work, "p.npy"), p0)
            np.save(os.path.join(work, "g.npy"), grads)
            out = os.path.join(work, "s")
            shutil.rmtree(out, ignore_errors=True)
            cmd = (f"{args.exmy} step --optimizer {c['exmy_optimizer']} --params {work}/p.npy "
                   f"--grads {work}/g.npy --steps {c['steps']} --param-dtype {c['dtype']} "
                   f"--compat {row['profile']} {c['exmy_options']} "
                   f"--device {args.exmy_device} --quiet --out {out}")
            r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
            if r.returncode != 0:
                row["exmy_refused"] = (r.stderr.strip().splitlines() or ["?"])[-1][-300:]
                rows.append(row)
                continue
            t = np.load(os.path.join(args.caps, c["name"] + ".npz"))
            diff, first = {}, {}
            for key in t.files:
                if key != "p" and t[key].size != p0.size:
                    continue  # 0-dim states (step, mu_product)
                name = "params" if key == "p" else key[len("state_"):]
                if c["exmy_optimizer"] in ("adam", "adamw") and name in ADAM_FILES:
                    name = ADAM_FILES[name]
                f = os.path.join(out, name + ".npy")
                if not os.path.exists(f):
                    diff[name] = "missing in exmy"
                    continue
                e = np.load(f).astype(np.float32).reshape(-1).view(np.uint32)
                tb = f32_bits(t[key].reshape(-1), c["dtype"])
                d = differ(tb, e)
                diff[name] = int(d.size)
                if d.size:
                    i = int(d[0])
                    first[name] = {"index": i, "torch": f"0x{tb[i]:08x}", "exmy": f"0x{e[i]:08x}"}
            row["differing"] = diff
            if first:
                row["first"] = first
            rows.append(row)
    fails = [r for r in rows if any(v != 0 for v in r.get("differing", {}).values())]
    refused = [r for r in rows if "exmy_refused" in r]
    arrays = sum(len(r.get("differing", {})) for r in rows)
    os.makedirs(args.out, exist_ok=True)
    summary = {"capture": {k: meta[k] for k in ("torch", "cuda", "device", "seed")},
               "rows": len(rows), "arrays": arrays, "differing_rows": len(fails),
               "exmy_refused": len(refused), "cases": rows}
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(f"# torch_optim2 capture ({meta['device']}, torch {meta['torch']}) vs exmy "
                f"({args.exmy_device})\n\n{len(rows)} rows, {arrays} arrays, {len(fails)} rows "
                f"with a differing bit, {len(refused)} refused by exmy.\n\n"
                "| case | profile | differing |\n|---|---|---|\n")
        for r in rows:
            d = r.get("differing", r.get("exmy_refused", r.get("torch_refused", "")))
            f.write(f"| {r['name']} | {r['profile']} | {d} |\n")
    print(f"{len(rows)} rows, {arrays} arrays, {len(fails)} differing rows, {len(refused)} "
          f"refused; {args.out}/summary.md")
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:
        print(f"torch_optim2_diff: {ex}", file=sys.stderr)
        sys.exit(2)
