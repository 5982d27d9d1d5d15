#!/usr/bin/env python3
"""Diffs torch.optim.Adafactor captures against `exmy step --optimizer adafactor`, bit for bit
(docs/SEMANTICS.md 9.2.8): the step cases of bench/peers/torch_adafactor_capture.py (--caps DIR)
and the Adafactor cases of bench/peers/torch_optim2_capture.py (a capture directory of that
script: its capture.json has no "probes"). For every case the inputs are regenerated with the
capture's own inputs() and checked against the recorded sha256; exmy runs the case's options
under its profile (torch-cuda / torch-cuda-foreach) or --profile P (a dry run on a CPU capture:
--profile torch-cpu:avx512:t2 with a capture made by --device cpu), and p, row_var, col_var and
variance are compared in torch's shapes (NaNs as a class).

    torch_adafactor_diff.py --caps DIR --exmy build/cli/exmy --out RESULT_DIR [--profile P]

Writes RESULT_DIR/summary.json and summary.md; exit 0 when no bit differs, 1 when any does
(or exmy refuses a case), 2 on a harness error.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def f32_bits(codes, dname):
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
    ap.add_argument("--profile", default="", help="override every case's profile (dry runs)")
    args = ap.parse_args()
    meta = json.load(open(os.path.join(args.caps, "capture.json")))
    new = "probes" in meta
    cap = module("torch_adafactor_capture" if new else "torch_optim2_capture")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for c in meta["cases"]:
            if c.get("exmy_optimizer") != "adafactor":
                continue
            row = {k: c[k] for k in ("name", "config", "dtype", "shape", "form", "steps")}
            row["kind"] = c.get("kind", "t2")
            row["profile"] = args.profile or c["profile"]
            if "torch_error" in c:
                row["torch_refused"] = c["torch_error"]
                rows.append(row)
                continue
            shape = tuple(c["shape"])
            if new:
                p0, grads = cap.inputs(meta["seed"], shape, c["steps"], c["dtype"], c["kind"])
            else:
                p0, grads = cap.inputs(meta["seed"], shape, c["steps"], c["dtype"])
            if cap.sha(p0, grads) != c["inputs_sha256"]:
                raise RuntimeError(f"{c['name']}: regenerated inputs differ from the capture's")
            np.save(os.path.join(work, "p.npy"), p0)
            np.save(os.path.join(work, "g.npy"), grads)
            out = os.path.join(work, "s")
            shutil.rmtree(out, ignore_errors=True)
            # torch's foreach=True on the CPU: exmy's --variant foreach (SEMANTICS 9.2.8)
            variant = (" --variant foreach" if row["profile"].startswith("torch-cpu") and
                       c["form"] == "foreach" else "")
            cmd = (f"{args.exmy} step --optimizer adafactor --params {work}/p.npy "
                   f"--grads {work}/g.npy --steps {c['steps']} --param-dtype {c['dtype']} "
                   f"--compat {row['profile']} {c['exmy_options']}{variant} --quiet --out {out}")
            r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
            if r.returncode != 0:
                row["exmy_refused"] = (r.stderr.strip().splitlines() or ["?"])[-1][-300:]
                rows.append(row)
                continue
            t = np.load(os.path.join(args.caps, c["name"] + ".npz"))
            diff, first = {}, {}
            for key in t.files:
                name = "params" if key == "p" else key[len("state_"):]
                if name == "step":
                    continue
                f = os.path.join(out, name + ".npy")
                if not os.path.exists(f):
                    diff[name] = "missing in exmy"
                    continue
                ea = np.load(f).astype(np.float32)
                if tuple(ea.shape) != tuple(t[key].shape):
                    diff[name] = f"shape {ea.shape}, torch {t[key].shape}"
                    continue
                e = ea.reshape(-1).view(np.uint32)
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
    bad = lambda r: any(v != 0 for v in r.get("differing", {}).values())
    fails = [r for r in rows if bad(r)]
    refused = [r for r in rows if "exmy_refused" in r]
    arrays = sum(len(r.get("differing", {})) for r in rows)
    os.makedirs(args.out, exist_ok=True)
    summary = {"capture": {k: meta.get(k) for k in ("torch", "cuda", "device", "seed")},
               "rows": len(rows), "arrays": arrays, "differing_rows": len(fails),
               "exmy_refused": len(refused), "cases": rows}
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(f"# Adafactor capture ({meta['device']}, torch {meta['torch']}) vs exmy\n\n"
                f"{len(rows)} rows, {arrays} arrays, {len(fails)} rows with a differing bit, "
                f"{len(refused)} refused by exmy.\n\n| case | profile | differing |\n|---|---|---|\n")
        for r in rows:
            d = r.get("differing", r.get("exmy_refused", r.get("torch_refused", "")))
            f.write(f"| {r['name']} | {r['profile']} | {d} |\n")
    print(f"{len(rows)} rows, {arrays} arrays, {len(fails)} differing rows, {len(refused)} "
          f"refused; {args.out}/summary.md")
    return 1 if fails or refused else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:
        print(f"torch_adafactor_diff: {ex}", file=sys.stderr)
        sys.exit(2)
