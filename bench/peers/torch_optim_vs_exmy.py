#!/usr/bin/env python3
"""torch.optim against `exmy step`, bit for bit (docs/SEMANTICS.md 9.2, 9.2.1, 9.2.2, 9.3): every
case of CASES on the same inputs, torch on the CPU under each ATen capability asked for
(ATEN_CPU_CAPABILITY=avx512|avx2, one child process each: torch reads the variable once) against
`--compat torch-cpu:CAP:tT` (T = torch.get_num_threads() there), and on CUDA (foreach=False,
foreach=True and fused=True where torch 2.11 has them) against torch-cuda / torch-cuda-foreach /
torch-cuda-fused, exmy on its CPU engine or (--exmy-device cuda) its GPU kernels; fp32/bf16/fp16
parameters; 3 steps of heavy-tailed gradients (Student t, 2 degrees of freedom, 10% exact zeros);
sizes 1,000, 50,003 and 100,003 (odd: the kernels' scalar tails; over 32,768: ATen's parallel
chunks, each with its own tail). Every bit of params and of each state array (NaNs as a class),
the first differing element with its operands.

MKL: torch computes an fp32 CPU sqrt with MKL's vsSqrt (VML_HA), whose AVX-512 code path is not
correctly rounded (SEMANTICS 9.2.2); the CPU children run with MKL_ENABLE_INSTRUCTIONS=AVX2, the
path exmy models, unless --mkl-native (then fp32 rows whose step takes a sqrt may differ: they are
reported, marked mkl-native).

usage: torch_optim_vs_exmy.py --exmy build/cli/exmy --out DIR [--exmy-device cpu|cuda]
       [--capabilities avx512,avx2] [--only SUBSTR] [--no-cuda] [--quick] [--mkl-native]
Writes DIR/summary.json and DIR/summary.md; exit 0 when no bit differs, 1 when any does, 2 on a
harness error. Needs torch 2.11 (a CUDA build for the CUDA rows) and numpy.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# (family, config): torch class, kwargs, exmy optimizer, exmy args, [(torch state, exmy file)],
# the CUDA forms torch 2.11 has ("single", "foreach", "fused").
RMS_STATES = [("square_avg", "square_avg"), ("momentum_buffer", "momentum_buffer"),
              ("grad_avg", "grad_avg")]
ADAM_STATES = [("exp_avg", "state1"), ("exp_avg_sq", "state2"), ("max_exp_avg_sq", "state3")]
SGD_STATES = [("momentum_buffer", "state1")]
ADAGRAD_STATES = [("sum", "sum")]
NADAM_STATES = [("exp_avg", "exp_avg"), ("exp_avg_sq", "exp_avg_sq")]
ALL = ("single", "foreach", "fused")
NOFUSED = ("single", "foreach")
CASES = [
    ("rmsprop", "defaults", "RMSprop", dict(lr=1e-2, alpha=0.99, eps=1e-8), "rmsprop",
     "--lr 1e-2 --alpha 0.99 --eps 1e-8", RMS_STATES, NOFUSED),
    ("rmsprop", "centered", "RMSprop", dict(lr=1e-2, alpha=0.99, eps=1e-8, centered=True),
     "rmsprop", "--lr 1e-2 --alpha 0.99 --eps 1e-8 --centered", RMS_STATES, NOFUSED),
    ("rmsprop", "mom-wd", "RMSprop",
     dict(lr=0.05, alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.9), "rmsprop",
     "--lr 0.05 --alpha 0.9 --eps 1e-6 --wd 0.01 --momentum 0.9", RMS_STATES, NOFUSED),
    ("rmsprop", "centered-mom-a0.3", "RMSprop",
     dict(lr=0.1, alpha=0.3, eps=1e-8, momentum=0.5, centered=True), "rmsprop",
     "--lr 0.1 --alpha 0.3 --eps 1e-8 --momentum 0.5 --centered", RMS_STATES, NOFUSED),
    ("adam", "l2-wd", "Adam", dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
     "adam", "--lr 1e-2 --beta1 0.9 --beta2 0.999 --eps 1e-8 --wd 0.01", ADAM_STATES, ALL),
    ("adamw", "defaults", "AdamW", dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
     "adamw", "--lr 1e-3 --beta1 0.9 --beta2 0.999 --eps 1e-8 --wd 0.01", ADAM_STATES, ALL),
    ("sgd", "mom-wd", "SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01), "sgd",
     "--lr 0.05 --momentum 0.9 --wd 0.01", SGD_STATES, ALL),
    ("sgd", "nesterov-damp0", "SGD", dict(lr=0.1, momentum=0.5, nesterov=True, weight_decay=1e-3),
     "sgd", "--lr 0.1 --momentum 0.5 --nesterov --wd 1e-3", SGD_STATES, ALL),
    ("sgd", "mom-damp0.3", "SGD", dict(lr=1e-2, momentum=0.5, dampening=0.3), "sgd",
     "--lr 1e-2 --momentum 0.5 --dampening 0.3", SGD_STATES, ALL),
    # issue 33 item 4's second batch (SEMANTICS 9.2.3-9.2.6): a ninth field is the step count
    ("rmsprop", "maximize-centered-mom-wd", "RMSprop",
     dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.01, momentum=0.9, centered=True,
          maximize=True), "rmsprop",
     "--lr 1e-2 --alpha 0.99 --eps 1e-8 --wd 0.01 --momentum 0.9 --centered --maximize",
     RMS_STATES, NOFUSED),
    ("sgd", "maximize-nesterov-wd", "SGD",
     dict(lr=1e-2, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True), "sgd",
     "--lr 1e-2 --momentum 0.9 --nesterov --wd 0.01 --maximize", SGD_STATES, ALL),
    ("adam", "amsgrad-l2", "Adam", dict(lr=1e-2, weight_decay=0.01, amsgrad=True), "adam",
     "--lr 1e-2 --wd 0.01 --amsgrad", ADAM_STATES, ALL, 4),
    ("adamw", "amsgrad", "AdamW", dict(lr=1e-3, weight_decay=0.01, amsgrad=True), "adamw",
     "--lr 1e-3 --wd 0.01 --amsgrad", ADAM_STATES, ALL, 4),
    ("adamw", "maximize", "AdamW", dict(lr=1e-3, weight_decay=0.01, maximize=True), "adamw",
     "--lr 1e-3 --wd 0.01 --maximize", ADAM_STATES, ALL),
    ("adam", "amsgrad-maximize", "Adam", dict(lr=1e-2, amsgrad=True, maximize=True), "adam",
     "--lr 1e-2 --amsgrad --maximize", ADAM_STATES, ALL, 4),
    ("adagrad", "defaults", "Adagrad", dict(lr=1e-2), "adagrad", "--lr 1e-2", ADAGRAD_STATES,
     NOFUSED),
    ("adagrad", "lrdecay-wd-init", "Adagrad",
     dict(lr=5e-2, lr_decay=0.1, weight_decay=0.01, initial_accumulator_value=0.1, eps=1e-6),
     "adagrad", "--lr 5e-2 --lr-decay 0.1 --wd 0.01 --initial-accumulator-value 0.1 --eps 1e-6",
     ADAGRAD_STATES, NOFUSED),
    ("adagrad", "maximize-wd", "Adagrad", dict(lr=0.1, weight_decay=0.1, maximize=True),
     "adagrad", "--lr 0.1 --wd 0.1 --maximize", ADAGRAD_STATES, NOFUSED),
    ("nadam", "defaults", "NAdam", dict(lr=2e-3), "nadam", "--lr 2e-3", NADAM_STATES, NOFUSED),
    ("nadam", "l2-wd", "NAdam", dict(lr=1e-2, weight_decay=0.01), "nadam", "--lr 1e-2 --wd 0.01",
     NADAM_STATES, NOFUSED),
    ("nadam", "decoupled-psi", "NAdam",
     dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.1,
          decoupled_weight_decay=True), "nadam",
     "--lr 1e-2 --beta1 0.8 --beta2 0.99 --wd 0.1 --momentum-decay 0.1 --decoupled-wd",
     NADAM_STATES, NOFUSED),
    ("nadam", "maximize", "NAdam", dict(lr=5e-2, betas=(0.3, 0.6), maximize=True), "nadam",
     "--lr 5e-2 --beta1 0.3 --beta2 0.6 --maximize", NADAM_STATES, NOFUSED),
    ("radam", "defaults-8steps", "RAdam", dict(lr=1e-3), "radam", "--lr 1e-3", NADAM_STATES,
     NOFUSED, 8),
    ("radam", "l2-wd-b2=0.9", "RAdam", dict(lr=1e-2, betas=(0.9, 0.9), weight_decay=0.01),
     "radam", "--lr 1e-2 --beta2 0.9 --wd 0.01", NADAM_STATES, NOFUSED, 8),
    ("radam", "decoupled-maximize", "RAdam",
     dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, decoupled_weight_decay=True,
          maximize=True), "radam",
     "--lr 1e-2 --beta1 0.8 --beta2 0.99 --wd 0.1 --decoupled-wd --maximize", NADAM_STATES,
     NOFUSED, 8),
]
SIZES = [1000, 50003, 100003]
# torch.optim.Adafactor (SEMANTICS 9.2.8): a step that reduces over the parameters' shape, so its
# cases run on shapes (>= 2-d: row_var/col_var; 1-d: variance) and on the gradient kinds of
# bench/peers/torch_adafactor_capture.py (t2: the heavy-tailed gradients with 10% zeros above;
# zrc: whole zero rows and columns and an all-zero second step; cauchy: t with 1 degree of
# freedom, squares beyond fp16's range). Fields: as CASES, then steps, shapes, kinds.
AF_STATES = [("row_var", "row_var"), ("col_var", "col_var"), ("variance", "variance")]
AF_SHAPES = [(64, 127), (129, 77), (3, 16, 33), (1, 777), (777, 1), (5, 1, 9), (2, 3, 5, 7),
             (2, 4099), (300, 200), (1000,), (4099,), (7,)]
AF_BIG = [(181, 183), (50003,)]  # over 32,768 elements: ATen's parallel chunks (the tails)
AF_CASES = [
    ("adafactor", "defaults", "Adafactor", dict(lr=1e-2), "adafactor", "--lr 1e-2", AF_STATES,
     NOFUSED, 4, AF_SHAPES + AF_BIG, ("t2", "zrc", "cauchy")),
    ("adafactor", "wd-d-decay-eps1", "Adafactor",
     dict(lr=5e-3, beta2_decay=-0.5, d=2.0, weight_decay=0.1, eps=(1e-30, 1e-3)), "adafactor",
     "--lr 5e-3 --beta2-decay -0.5 --d 2 --wd 0.1 --eps1 1e-30 --eps2 1e-3", AF_STATES, NOFUSED,
     4, AF_SHAPES, ("t2", "zrc")),
    ("adafactor", "maximize-10steps", "Adafactor",
     dict(lr=0.1, maximize=True, eps=(None, 0.5), d=1.5, weight_decay=0.5), "adafactor",
     "--lr 0.1 --maximize --eps2 0.5 --d 1.5 --wd 0.5", AF_STATES, NOFUSED, 10, AF_SHAPES,
     ("t2",)),
    ("adafactor", "eps1-1e-3-lr0", "Adafactor", dict(lr=0.0, eps=(1e-3, 1e-3)), "adafactor",
     "--lr 0 --eps1 1e-3", AF_STATES, NOFUSED, 2, [(33, 131), (7,)], ("t2",)),
]


def af_inputs(seed, shape, steps, dname, kind):
    """bench/peers/torch_adafactor_capture.py's inputs (the same seeds give the same arrays)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "afcap", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "torch_adafactor_capture.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    p, g = m.inputs(seed, shape, steps, dname, kind)
    return p, list(g)


def bits(t):
    return t.detach().float().cpu().numpy().astype(np.float32).view(np.uint32)


def differ(a, b):
    """Indices where fp32 bit patterns differ (any two NaNs agree)."""
    na = (a & 0x7FFFFFFF) > 0x7F800000
    nb = (b & 0x7FFFFFFF) > 0x7F800000
    return np.nonzero((a != b) & ~(na & nb))[0]


def inputs(seed, n, steps, dname):
    rng = np.random.default_rng([seed, n, list(DT).index(dname)])
    p = (rng.standard_normal(n) * 0.5).astype(np.float32)
    gs = []
    for _ in range(steps):
        g = (rng.standard_t(2, n) * 1e-2).astype(np.float32)
        g[rng.random(n) < 0.1] = 0.0
        gs.append(g)
    # values of the dtype, as the CLI requires and torch holds them; copies, never views of the
    # arrays exmy reads (torch.from_numpy(...).to(cpu, float32) is the same memory)
    cast = lambda a: torch.from_numpy(a.copy()).to(DT[dname]).float().numpy().copy()
    return cast(p), [cast(g) for g in gs]


def torch_run(case, p0, grads, dname, device, form):
    cls, kw, states = case[2], case[3], case[6]
    p = torch.nn.Parameter(torch.tensor(p0, dtype=torch.float32).to(device=device, dtype=DT[dname]))
    extra = {"foreach": form == "foreach"}
    if form == "fused":
        extra = {"fused": True}
    opt = getattr(torch.optim, cls)([p], **kw, **extra)
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float32).to(device=device, dtype=DT[dname])
        opt.step()
    st = opt.state[p]
    out = {"p": bits(p).ravel()}
    for tname, efile in states:
        # every tensor state but the 0-d step counters (Adafactor's row_var/col_var are smaller)
        if tname in st and torch.is_tensor(st[tname]) and st[tname].dim() > 0:
            out[efile] = bits(st[tname]).ravel()
    return out


def exmy_run(args, work, case, p0, grads, dname, profile, extra=""):
    np.save(os.path.join(work, "p.npy"), p0)
    np.save(os.path.join(work, "g.npy"), np.stack(grads))
    out = os.path.join(work, "s")
    shutil.rmtree(out, ignore_errors=True)  # no file of an earlier case may be read as this one's
    cmd = (f"{args.exmy} step --optimizer {case[4]} --params {work}/p.npy --grads {work}/g.npy "
           f"--steps {len(grads)} --param-dtype {dname} --compat {profile} {case[5]}{extra} "
           f"--device {args.exmy_device} --quiet --out {out}")
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {r.returncode}: {r.stderr.strip()}")
    res = {"p": np.load(os.path.join(out, "params.npy")).astype(np.float32).view(np.uint32).ravel()}
    for _, efile in case[6]:
        f = os.path.join(out, efile + ".npy")
        if os.path.exists(f):
            res[efile] = np.load(f).astype(np.float32).view(np.uint32).ravel()
    return res, cmd


def compare(t, e, p0, grads):
    diff, first = {}, {}
    for k, tb in t.items():
        if k not in e:
            diff[k] = "missing in exmy"
            continue
        d = differ(tb, e[k])
        diff[k] = int(d.size)
        if d.size:
            i = int(d[0])
            first[k] = {"index": i, "torch": f"0x{tb[i]:08x}", "exmy": f"0x{e[k][i]:08x}",
                        "p0": f"0x{p0.ravel().view(np.uint32)[i]:08x}" if k == "p" else "",
                        "g": [f"0x{g.ravel().view(np.uint32)[i]:08x}" for g in grads]
                        if k == "p" else []}
    for k in e:
        if k not in t:
            diff[k] = "missing in torch"
    return diff, first


def run_rows(args, device, cap):
    """The rows of one torch device: cpu (under the capability this process runs) or cuda."""
    rows = []
    threads = torch.get_num_threads()
    forms = ["single"] if device == "cpu" else ["single", "foreach", "fused"]
    with tempfile.TemporaryDirectory() as work:
        for case in AF_CASES if args.adafactor else []:
            label = f"{case[0]} {case[1]}"
            if args.only and not any(o in label for o in args.only.split(",")):
                continue
            for shape in (case[9][:3] if args.quick else case[9]):
                for kind in case[10]:
                    if kind == "zrc" and len(shape) < 2:
                        continue
                    for dname in DT:
                        p0, grads = af_inputs(args.seed, shape, case[8], dname, kind)
                        # on the CPU torch's foreach=True too: exmy's --variant foreach
                        for form in (["single", "foreach"] if device == "cpu" else forms):
                            if form not in case[7]:
                                continue
                            variant = " --variant foreach" if (device == "cpu" and
                                                               form == "foreach") else ""
                            profile = (f"torch-cpu:{cap}:t{threads}" if device == "cpu" else
                                       {"single": "torch-cuda",
                                        "foreach": "torch-cuda-foreach"}[form])
                            row = {"family": case[0], "config": f"{case[1]} {kind}",
                                   "n": "x".join(map(str, shape)), "dtype": dname,
                                   "torch": device, "form": form, "profile": profile,
                                   "exmy_device": args.exmy_device, "steps": case[8]}
                            t = torch_run(case, p0, grads, dname, device, form)
                            try:
                                e, cmd = exmy_run(args, work, case, p0, grads, dname, profile,
                                                  variant)
                            except RuntimeError as ex:
                                row["exmy_refused"] = str(ex).splitlines()[-1][-300:]
                                rows.append(row)
                                continue
                            row["differing"], first = compare(t, e, p0, grads)
                            if first:
                                row["first"] = first
                            row["command"] = cmd
                            rows.append(row)
        for case in CASES if not args.adafactor else []:
            label = f"{case[0]} {case[1]}"
            if args.only and not any(o in label for o in args.only.split(",")):
                continue
            for n in ([1000] if args.quick else SIZES):
                for dname in DT:
                    p0, grads = inputs(args.seed, n, case[8] if len(case) > 8 else 3, dname)
                    for form in forms:
                        if form not in case[7]:
                            continue
                        if form == "fused" and dname != "fp32" and case[0] in ("adam", "adamw"):
                            pass  # torch's fused Adam takes bf16/fp16 too; exmy refuses: reported
                        if device == "cpu":
                            profile = f"torch-cpu:{cap}:t{threads}"
                        else:
                            profile = {"single": "torch-cuda", "foreach": "torch-cuda-foreach",
                                       "fused": "torch-cuda-fused"}[form]
                        row = {"family": case[0], "config": case[1], "n": n, "dtype": dname,
                               "torch": device, "form": form, "profile": profile,
                               "exmy_device": args.exmy_device}
                        if device == "cpu":
                            row["capability"] = cap
                            row["mkl"] = os.environ.get("MKL_ENABLE_INSTRUCTIONS", "native")
                        t = torch_run(case, p0, grads, dname, device, form)
                        try:
                            e, cmd = exmy_run(args, work, case, p0, grads, dname, profile)
                        except RuntimeError as ex:
                            row["exmy_refused"] = str(ex).splitlines()[-1][-300:]
                            rows.append(row)
                            continue
                        row["differing"], first = compare(t, e, p0, grads)
                        if first:
                            row["first"] = first
                        row["command"] = cmd
                        rows.append(row)
    return rows


def failing(r):
    return any(v != 0 for v in r.get("differing", {}).values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--exmy-device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--capabilities", default="avx512,avx2")
    ap.add_argument("--only", default="", help="cases whose 'family config' contains this (or any of a comma-separated list)")
    ap.add_argument("--no-cuda", action="store_true", help="CPU rows only")
    ap.add_argument("--quick", action="store_true", help="size 1,000 only")
    ap.add_argument("--mkl-native", action="store_true",
                    help="leave MKL's instruction set to MKL (fp32 sqrt may differ)")
    ap.add_argument("--adafactor", action="store_true",
                    help="the Adafactor cases (AF_CASES, on shapes) instead of CASES")
    ap.add_argument("--child-cpu", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.exmy = os.path.abspath(args.exmy)
    if args.child_cpu:  # one capability's CPU rows, written as JSON on stdout's last line
        got = torch.backends.cpu.get_cpu_capability().lower()
        if got != args.child_cpu:
            print(json.dumps({"unavailable": f"asked {args.child_cpu}, torch runs {got}"}))
            return 0
        print(json.dumps({"rows": run_rows(args, "cpu", args.child_cpu)}))
        return 0
    os.makedirs(args.out, exist_ok=True)
    rows, notes = [], []
    for cap in [c for c in args.capabilities.split(",") if c]:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=cap)
        if not args.mkl_native:
            env["MKL_ENABLE_INSTRUCTIONS"] = "AVX2"
        cmd = [sys.executable, os.path.abspath(__file__), "--exmy", args.exmy, "--out", args.out,
               "--exmy-device", args.exmy_device, "--seed", str(args.seed), "--only", args.only,
               "--child-cpu", cap] + (["--quick"] if args.quick else []) + \
              (["--adafactor"] if args.adafactor else [])
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"capability {cap}: exit {r.returncode}: {r.stderr.strip()[-2000:]}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        if "unavailable" in res:
            notes.append(f"capability {cap}: {res['unavailable']} (no rows)")
        rows += res.get("rows", [])
    cuda = torch.cuda.is_available() and not args.no_cuda
    if cuda:
        rows += run_rows(args, "cuda", None)
    elif not args.no_cuda:
        notes.append("no GPU: the CUDA rows did not run")
    fails = sum(1 for r in rows if failing(r))
    refused = sum(1 for r in rows if "exmy_refused" in r)
    arrays = sum(len(r.get("differing", {})) for r in rows)
    summary = {"torch": torch.__version__, "cuda": cuda, "seed": args.seed,
               "threads": torch.get_num_threads(), "rows": len(rows), "arrays": arrays,
               "differing_rows": fails, "exmy_refused": refused, "notes": notes, "cases": rows}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(f"# torch.optim vs exmy (torch {torch.__version__}, CUDA {cuda}, seed {args.seed})"
                f"\n\n{len(rows)} rows, {arrays} arrays compared, {fails} rows with a differing "
                f"bit, {refused} refused by exmy.\n\n")
        for nline in notes:
            f.write(f"- {nline}\n")
        f.write("\n| family | config | n | dtype | torch | form | profile | differing |\n"
                "|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            d = r.get("differing", r.get("exmy_refused", ""))
            f.write(f"| {r['family']} | {r['config']} | {r['n']} | {r['dtype']} | {r['torch']} | "
                    f"{r['form']} | {r['profile']} | {d} |\n")
    print(f"{len(rows)} rows, {arrays} arrays, {fails} differing rows, {refused} refused; "
          f"{args.out}/summary.md")
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:  # a harness error is not a result
        print(f"torch_optim_vs_exmy: {ex}", file=sys.stderr)
        sys.exit(2)
