#!/usr/bin/env python3
"""Diffs a capture of torchao_optim_capture.py (CUDA, or a CPU run with --device cpu) against
`exmy step --optimizer torchao-adamw8bit|torchao-adamw4bit|torchao-adamwfp8`, bit for bit
(docs/SEMANTICS.md 9.2.7): for every case the inputs are regenerated (the capture's inputs(),
checked against the recorded sha256), exmy runs one step at a time (resuming its state
directory; a bf16_stochastic_round case passes each step's recorded Inductor seed as --seed)
under the profile of the capture's device (torchao-cuda for CUDA, torchao-cpu for a CPU capture;
--profile overrides), and after every saved step the parameters and each state array torchao
keeps are compared: exp_avg / exp_avg_sq / max_exp_avg_sq `.codes` (uint8, exact) and `.scale`
(fp32 bits), or the plain state (the dtype's bits); NaNs as a class. Eager cases (op by op, no
torch.compile) are compared against the same model and reported apart: exmy models the compiled
step.

    torchao_optim_vs_exmy.py --caps DIR --exmy build/cli/exmy --out RESULT_DIR [--profile P]

Writes RESULT_DIR/summary.json and summary.md; exit 0 when no compiled case differs, 1 when one
does, 2 on a harness error.
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


def capture_module():
    spec = importlib.util.spec_from_file_location("cap", os.path.join(HERE,
                                                                      "torchao_optim_capture.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def f32_bits_of(codes, dname):
    """The capture's dtype bit patterns as the fp32 bits of the same values."""
    if dname == "fp32":
        return codes.astype(np.uint32)
    if dname == "bf16":
        return codes.astype(np.uint32) << 16
    return codes.view(np.float16).astype(np.float32).view(np.uint32)


def differ(a, b, floats):
    if not floats:
        return np.nonzero(a != b)[0]
    na = (a & 0x7FFFFFFF) > 0x7F800000
    nb = (b & 0x7FFFFFFF) > 0x7F800000
    return np.nonzero((a != b) & ~(na & nb))[0]


def exmy_options(c, cap):
    kw = cap.CONFIGS[c["config"]]
    b1, b2 = kw.get("betas", (0.9, 0.999))
    opts = (f"--lr {kw.get('lr', 1e-3)!r} --beta1 {b1!r} --beta2 {b2!r} "
            f"--eps {kw.get('eps', 1e-8)!r} --wd {kw.get('weight_decay', 1e-2)!r}")
    if kw.get("amsgrad"):
        opts += " --amsgrad"
    return opts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--caps", required=True)
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--profile", default="", help="torchao-cpu|torchao-cuda (default: by device)")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    args = ap.parse_args()
    cap = capture_module()
    meta = json.load(open(os.path.join(args.caps, "capture.json")))
    profile = args.profile or ("torchao-cpu" if meta["device"] == "cpu" else "torchao-cuda")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for c in meta["cases"]:
            if args.only and not any(k in c["name"] for k in args.only.split(",")):
                continue
            row = {k: c[k] for k in ("name", "optimizer", "config", "dtype", "shape", "mode",
                                     "bf16_stochastic_round")}
            row["profile"] = profile
            if "arrays" not in c:
                row["not_captured"] = c.get("skipped") or c.get("error", "?")
                rows.append(row)
                continue
            shape = tuple(c["shape"])
            p0, grads = cap.inputs(meta["seed"], shape, c["dtype"])
            h = hashlib.sha256(p0.tobytes() + grads.tobytes()).hexdigest()
            if h != c["inputs_sha256"]:
                raise RuntimeError(f"{c['name']}: regenerated inputs differ from the capture's")
            t = np.load(os.path.join(args.caps, c["name"] + ".npz"))
            steps = len(grads)
            np.save(os.path.join(work, "p.npy"), p0)
            prev = None
            diff, first = {}, {}
            refused = None
            for s in range(1, steps + 1):
                np.save(os.path.join(work, "g.npy"), grads[s - 1])
                out = os.path.join(work, f"s{s}")
                shutil.rmtree(out, ignore_errors=True)
                seed = ""
                if c["bf16_stochastic_round"]:
                    sd = int(t[f"sr_seed_{s}"].reshape(-1)[0])
                    seed = f" --bf16-stochastic-round --seed {sd & (2**64 - 1)}"
                params = os.path.join(work, "p.npy") if prev is None else \
                    os.path.join(prev, "params.npy")
                cmd = (f"{args.exmy} step --optimizer torchao-{c['optimizer']} --params {params} "
                       f"--grads {work}/g.npy --steps 1 --param-dtype {c['dtype']} "
                       f"--compat {profile} {exmy_options(c, cap)}{seed} --quiet --out {out}"
                       + ("" if prev is None else f" --state {prev}"))
                r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
                if r.returncode != 0:
                    refused = (r.stderr.strip().splitlines() or ["?"])[-1][-300:]
                    break
                prev = out
                if f"p_{s}" not in t.files:
                    continue
                for key in t.files:
                    if not key.endswith(f"_{s}") or key.startswith("sr_seed"):
                        continue
                    base = key[: -len(f"_{s}")]
                    if base == "p":
                        name, floats, conv = "params", True, True
                    elif base.endswith("_codes"):
                        name, floats, conv = base[:-6] + ".codes", False, False
                    elif base.endswith("_scale"):
                        name, floats, conv = base[:-6] + ".scale", True, False
                    else:
                        name, floats, conv = base, True, True
                    f = os.path.join(out, name + ".npy")
                    label = f"{name}@{s}"
                    if not os.path.exists(f):
                        diff[label] = "missing in exmy"
                        continue
                    e = np.load(f).reshape(-1)
                    e = e.astype(np.float32).view(np.uint32) if floats else e.astype(np.uint8)
                    tb = t[key].reshape(-1)
                    tb = f32_bits_of(tb, c["dtype"]) if conv else tb
                    d = differ(tb, e, floats)
                    diff[label] = int(d.size)
                    if d.size and name not in first:
                        i = int(d[0])
                        first[name] = {"step": s, "index": i, "torchao": f"0x{int(tb[i]):x}",
                                       "exmy": f"0x{int(e[i]):x}"}
            if refused:
                row["exmy_refused"] = refused
            row["differing"] = diff
            row["differing_total"] = sum(v for v in diff.values() if isinstance(v, int))
            row["compared"] = len(diff)
            if first:
                row["first"] = first
            rows.append(row)
            print(row["name"], row["differing_total"], "differing of", row["compared"], "arrays",
                  row.get("exmy_refused", ""), flush=True)
    comp = [r for r in rows if r.get("mode") == "compiled" and "differing" in r]
    fails = [r for r in comp if r["differing_total"] or "exmy_refused" in r]
    eager = [r for r in rows if r.get("mode") == "eager" and "differing" in r]
    os.makedirs(args.out, exist_ok=True)
    summary = {"capture": {k: meta.get(k) for k in ("torch", "torchao", "triton", "cuda",
                                                     "device", "seed")},
               "profile": profile, "rows": len(rows), "compiled_rows": len(comp),
               "compiled_arrays": sum(r["compared"] for r in comp),
               "compiled_differing_rows": len(fails),
               "eager_rows": len(eager),
               "eager_differing_rows": sum(1 for r in eager if r["differing_total"]),
               "cases": rows}
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(f"# torchao_optim capture ({meta['device']}, torch {meta['torch']}, torchao "
                f"{meta.get('torchao')}) vs exmy --compat {profile}\n\n"
                f"{len(comp)} compiled cases, {summary['compiled_arrays']} arrays compared, "
                f"{len(fails)} with a differing bit; {len(eager)} eager cases, "
                f"{summary['eager_differing_rows']} differing from the compiled model.\n\n"
                "| case | mode | differing elements | arrays |\n|---|---|---|---|\n")
        for r in rows:
            d = r.get("differing_total", r.get("not_captured", ""))
            f.write(f"| {r['name']} | {r.get('mode')} | {d}"
                    f"{' (exmy refused: ' + r['exmy_refused'] + ')' if 'exmy_refused' in r else ''}"
                    f" | {r.get('compared', 0)} |\n")
    print(f"{len(comp)} compiled cases, {summary['compiled_arrays']} arrays, {len(fails)} "
          f"differing; eager {len(eager)} ({summary['eager_differing_rows']} differ); "
          f"{args.out}/summary.md")
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:
        print(f"torchao_optim_vs_exmy: {ex}", file=sys.stderr)
        sys.exit(2)
