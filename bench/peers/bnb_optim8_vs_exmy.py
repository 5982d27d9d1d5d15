#!/usr/bin/env python3
"""bitsandbytes 0.50.2's RMSprop/Adagrad/Lion/AdEMAMix 8-bit optimizers (and their 32-bit and
paged forms) on CUDA against `exmy step --compat bnb-cuda`, bit for bit (docs/SEMANTICS.md
9.4.1, 9.4.2).

    python3 bench/peers/bnb_optim8_vs_exmy.py --exmy build/cli/exmy --out OUTDIR
        [--exmy-device cpu|cuda|both] [--steps 5] [--only NAME[,NAME...]] [--dtypes fp32,...]
        [--sizes 1001,...] [--hyper SUBSTR] [--no-notes] [--golden DIR]

The filters select cases without changing any case's seed (a re-run of the failing cases
reproduces their inputs).

--golden DIR also writes golden-size cases (4501 elements, AdEMAMix 4608, and 301; 3 steps) in
the layout of golden/peers/bnb-cuda (case.json with the hyperparameters, params0.npy, grads.npy,
and bitsandbytes' params.npy, state1.npy, ...), which tests/optim/test_peer_golden.cpp replays.

For each case (optimizer x parameter dtype x size x hyperparameter set) the script runs the
bitsandbytes optimizer for several steps on heavy-tailed gradients (Student-t with 2 degrees of
freedom times 1e-2, with exact zeros, huge x1e4 and tiny x1e-30 entries: the last flushed by the
kernels' FTZ arithmetic), then `exmy step` on the same inputs, and compares the parameters and
every state array (state1, absmax1, and AdEMAMix's state2, absmax2 — uint8 codes and fp32
absmax, or fp32 states for the 32-bit kernels; AdEMAMix's state1 (2, n) and absmax1 (2, blocks))
byte for byte. Sizes: 20001 elements (8-bit states, the last block of 256 partial; AdEMAMix:
20224 = 79·256, see below) and 1001 (below min_8bit_size 4096: the 32-bit kernels).
AdEMAMix8bit at a size that is not a multiple of 256 indexes m2's absmax at absmax1[(n+i)/256],
overlapping m1's last block (SEMANTICS 9.4.2): exmy refuses it under bnb-cuda; the script runs
bitsandbytes twice on the same 20001-element input and records whether the two runs agree and
whether absmax1's last entry stayed 0 (the evidence), without comparing it to exmy. The paged optimizers run the same kernels
on managed memory: their cases check that exmy accepts the names and gives the same bytes.
LAMB8bit / LARS8bit: bitsandbytes 0.50.2 has no 8-bit kernel for them; the script records what
the library does at 8192 elements (SEMANTICS 9.4.1) and does not compare them.

Writes OUTDIR/summary.json and OUTDIR/summary.md (one row per case: elements differing per
file); exit 0 when every compared file is identical, 1 otherwise. Needs torch with CUDA and
bitsandbytes==0.50.2 on an sm_90 GPU (H100/H200) for --compat bnb-cuda's MUFU models.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import bitsandbytes as bnb

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def gradients(rng, steps, n, dtype):
    g = (rng.standard_t(2.0, size=(steps, n)) * 1e-2).astype(np.float32)
    for t in range(steps):
        idx = rng.choice(n, size=min(n, 60), replace=False)
        g[t, idx[:20]] = 0.0
        g[t, idx[20:40]] *= 1e4
        g[t, idx[40:60]] *= 1e-30
        g[t, ::97] = 0.0
    # the values the parameters' dtype holds (bitsandbytes' gradient has the parameters' dtype)
    return torch.from_numpy(g).to(DT[dtype]).float().numpy()


# exmy name -> (constructor, hyperparameter sets as (label, bnb kwargs, exmy flags))
def cases():
    rms = [("defaults", {}, []),
           ("lr0.1 alpha0.9 eps1e-6 wd0.01",
            dict(lr=0.1, alpha=0.9, eps=1e-6, weight_decay=0.01),
            ["--lr", "0.1", "--alpha", "0.9", "--eps", "1e-6", "--wd", "0.01"])]
    ada = [("defaults", {}, []),
           ("lr0.5 eps1e-6 wd1e-3", dict(lr=0.5, eps=1e-6, weight_decay=1e-3),
            ["--lr", "0.5", "--eps", "1e-6", "--wd", "1e-3"])]
    lion = [("defaults", {}, []),
            ("lr0.01 b0.5,0.9 wd0.1", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1),
             ["--lr", "0.01", "--beta1", "0.5", "--beta2", "0.9", "--wd", "0.1"])]
    adm = [("defaults", {}, []),
           ("lr0.01 b0.5,0.9,0.99 alpha2 eps1e-6 wd0.1",
            dict(lr=0.01, betas=(0.5, 0.9, 0.99), alpha=2.0, eps=1e-6, weight_decay=0.1),
            ["--lr", "0.01", "--beta1", "0.5", "--beta2", "0.9", "--beta3", "0.99", "--alpha", "2",
             "--eps", "1e-6", "--wd", "0.1"])]
    o = bnb.optim
    # bitsandbytes 0.50.2's AdEMAMix32bit / PagedAdEMAMix32bit subclass Optimizer2State, not
    # AdEMAMix: state1 gets the parameters' shape while the kernel keeps m2 at state1[n + i]
    # (issue #2075; SEMANTICS 9.4.2). exmy refuses those names under bnb-cuda; its
    # `--variant double-buffer` is AdEMAMix(optim_bits=32), compared here. ademamix32bit_evidence()
    # records what AdEMAMix32bit itself does.
    dbl = ["--variant", "double-buffer"]
    return {
        "ademamix8bit": (o.AdEMAMix8bit, adm),
        "ademamix32bit": (lambda ps, **kw: o.AdEMAMix(ps, optim_bits=32, **kw), adm, dbl),
        "paged_ademamix8bit": (o.PagedAdEMAMix8bit, adm),
        "paged_ademamix32bit": (lambda ps, **kw: o.PagedAdEMAMix(ps, optim_bits=32, **kw), adm,
                                dbl),
        "rmsprop8bit": (o.RMSprop8bit, rms),
        "rmsprop32bit": (o.RMSprop32bit, rms),
        "adagrad8bit": (o.Adagrad8bit, ada),
        "adagrad32bit": (o.Adagrad32bit, ada),
        "lion8bit": (o.Lion8bit, lion),
        "lion32bit": (o.Lion32bit, lion),
        "paged_lion8bit": (o.PagedLion8bit, lion),
        "paged_lion32bit": (o.PagedLion32bit, lion),
    }


def run_bnb(cls, kwargs, p0, g, dtype):
    p = torch.nn.Parameter(torch.from_numpy(p0).to(DT[dtype]).cuda())
    opt = cls([p], **kwargs)
    for t in range(g.shape[0]):
        p.grad = torch.from_numpy(g[t]).to(DT[dtype]).cuda()
        opt.step()
    torch.cuda.synchronize()
    st = opt.state[p]
    out = {"params": p.detach().float().cpu().numpy()}
    for k in ("state1", "state2", "absmax1", "absmax2"):
        if k in st:
            v = st[k].detach().cpu().numpy()
            out[k] = v
    return out


def bit_diff(a, b):
    """Elements whose bytes differ (NaNs included: exmy writes the GPU's NaN under bnb-cuda)."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/dtype exmy {a.shape} {a.dtype} vs bitsandbytes {b.shape} {b.dtype}"
    ea = a.view(np.uint8).reshape(max(a.size, 1), -1)
    eb = b.view(np.uint8).reshape(max(b.size, 1), -1)
    return int(np.count_nonzero((ea != eb).any(axis=1)))


def hyper_of(name, flags):
    """case.json's hyper from the exmy flags (the keys test_peer_golden.cpp passes back)."""
    h = {"lr": None, "wd": None, "beta1": None, "beta2": None, "eps": None}
    defaults = {"rmsprop": (1e-2, 0.0, 0.99, 0.0, 1e-8), "adagrad": (1e-2, 0.0, 0.0, 0.0, 1e-10),
                "lion": (1e-4, 0.0, 0.9, 0.99, 0.0), "ademamix": (1e-3, 1e-2, 0.9, 0.999, 1e-8)}
    base = next(v for k, v in defaults.items() if k in name)
    h.update(lr=base[0], wd=base[1], beta1=base[2], beta2=base[3], eps=base[4])
    if "ademamix" in name:
        h.update(beta3=0.9999, alpha=5.0)
    for k, v in zip(flags[::2], flags[1::2]):
        h[k.lstrip("-")] = float(v)
    if "alpha" in h and "rmsprop" in name:
        h["beta1"] = h.pop("alpha")
    return h


def write_golden(root, only, info):
    seed = 1000
    for name, (cls, hypers, *extra) in cases().items():
        if (only and name not in only) or name.startswith("paged_"):
            continue
        for dtype in ("fp32", "bf16", "fp16"):
            for n in ((4608, 301) if "ademamix" in name else (4501, 301)):
                label, kwargs, flags = hypers[-1]  # the set with weight decay
                seed += 1
                rng = np.random.default_rng(seed)
                p0 = torch.from_numpy(rng.normal(0.0, 1.0, size=n).astype(np.float32)).to(
                    DT[dtype]).float().numpy()
                g = gradients(rng, 3, n, dtype)
                try:
                    ref = run_bnb(cls, kwargs, p0, g, dtype)
                except Exception:  # a combination bitsandbytes refuses: no golden case
                    continue
                d = os.path.join(root, f"{name}-{dtype}" + ("-small" if n == 301 else "") + "-wd")
                os.makedirs(d, exist_ok=True)
                np.save(os.path.join(d, "params0.npy"), p0)
                np.save(os.path.join(d, "grads.npy"), g)
                for k, v in ref.items():
                    np.save(os.path.join(d, k + ".npy"), v.astype(np.float32) if k == "params" else v)
                case = {"optimizer": name, "dtype": dtype, "n": n, "steps": 3,
                        "exmy_flags": " ".join(extra[0]) if extra else "",
                        "hyper": hyper_of(name, flags), "specials": False, "seed": seed,
                        "bitsandbytes": bnb.__version__, "torch": torch.__version__,
                        "device": info["device"],
                        "command": "bench/peers/bnb_optim8_vs_exmy.py --golden DIR"}
                with open(os.path.join(d, "case.json"), "w") as f:
                    json.dump(case, f, indent=1)


def ademamix32bit_evidence(a, work):
    """bitsandbytes' AdEMAMix32bit (state1 of p's shape, m2 at state1[n + i]: SEMANTICS 9.4.2).

    Records the state shapes, whether exmy refuses the name under bnb-cuda (exit 2), and the
    aliasing hypothesis: m1 and m2 depend on the gradients only, so bitsandbytes' state1 should
    equal m1 (row 0 of exmy's --variant double-buffer state1) and, where m2 overwrote state2
    (the allocation after state1's 512-byte-rounded block), state2[j] = m2[j + pad] with
    pad = (512-byte round-up of 4n - 4n) / 4 -- the hypothesis, not a model exmy offers."""
    out = {}
    for n in (20224, 1001):
        rng = np.random.default_rng(777 + n)
        p0 = rng.normal(0.0, 1.0, size=n).astype(np.float32)
        g = gradients(rng, a.steps, n, "fp32")
        try:
            ref = run_bnb(bnb.optim.AdEMAMix32bit, {}, p0, g, "fp32")
        except Exception as e:  # the library's own error, recorded verbatim
            out[str(n)] = f"{type(e).__name__}: {e}"
            continue
        d = os.path.join(work, f"ademamix32bit-evidence-{n}")
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "params0.npy"), p0)
        np.save(os.path.join(d, "grads.npy"), g)
        base = [a.exmy, "step", "--optimizer", "ademamix32bit", "--params",
                os.path.join(d, "params0.npy"), "--grads", os.path.join(d, "grads.npy"),
                "--steps", str(a.steps), "--param-dtype", "fp32", "--compat", "bnb-cuda",
                "--quiet"]
        refused = subprocess.run(base + ["--out", os.path.join(d, "plain")],
                                 capture_output=True, text=True).returncode
        r = subprocess.run(base + ["--variant", "double-buffer", "--out", os.path.join(d, "dbl")],
                           capture_output=True, text=True)
        row = {"state1_shape": list(ref["state1"].shape), "state2_shape": list(ref["state2"].shape),
               "exmy_rc_without_variant": refused}
        if r.returncode == 0:
            s1 = np.load(os.path.join(d, "dbl", "state1.npy"))
            pad = (-(4 * n) % 512) // 4
            m1, m2 = s1[0], s1[1]
            st2 = ref["state2"].reshape(-1)
            row["state1_vs_exmy_m1"] = bit_diff(m1, ref["state1"].reshape(-1))
            row["pad_floats"] = pad
            row["state2_vs_exmy_m2_shifted"] = bit_diff(m2[pad:], st2[:n - pad])
        else:
            row["exmy_error"] = r.stderr.strip()[-300:]
        out[str(n)] = row
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--exmy-device", default="cpu", choices=["cpu", "cuda", "both"])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--only", default="", help="optimizer names, comma-separated")
    ap.add_argument("--dtypes", default="", help="fp32,bf16,fp16 (default all)")
    ap.add_argument("--sizes", default="", help="e.g. 1001,20224 (default all)")
    ap.add_argument("--hyper", default="",
                    help="substring of the hyperparameter label (defaults | lr0.01...)")
    ap.add_argument("--no-notes", action="store_true",
                    help="skip the AdEMAMix8bit race, AdEMAMix32bit and LAMB/LARS notes")
    ap.add_argument("--golden", default="")
    a = ap.parse_args()
    dtypes = set(x for x in a.dtypes.split(",") if x)
    sizes = set(int(x) for x in a.sizes.split(",") if x)
    os.makedirs(a.out, exist_ok=True)
    devices = ["cpu", "cuda"] if a.exmy_device == "both" else [a.exmy_device]
    only = set(x for x in a.only.split(",") if x)
    rows, total_bad = [], 0
    info = {"torch": torch.__version__, "bitsandbytes": bnb.__version__,
            "device": torch.cuda.get_device_name(), "capability": torch.cuda.get_device_capability()}
    work = tempfile.mkdtemp(prefix="bnb_optim8_")
    seed = 0
    for name, (cls, hypers, *extra) in cases().items():
        for dtype in ("fp32", "bf16", "fp16"):
            for n in ((20224, 1001) if "ademamix" in name else (20001, 1001)):
                for label, kwargs, flags in hypers:
                    seed += 1  # every case keeps its seed whatever the filters select
                    if ((only and name not in only) or (dtypes and dtype not in dtypes)
                            or (sizes and n not in sizes)
                            or (a.hyper and a.hyper not in label.replace(" ", "_"))):
                        continue
                    flags = flags + (extra[0] if extra else [])
                    rng = np.random.default_rng(seed)
                    p0 = torch.from_numpy(rng.normal(0.0, 1.0, size=n).astype(np.float32)).to(
                        DT[dtype]).float().numpy()
                    g = gradients(rng, a.steps, n, dtype)
                    case = f"{name}-{dtype}-{n}-{label.replace(' ', '_')}"
                    try:
                        ref = run_bnb(cls, kwargs, p0, g, dtype)
                    except Exception as e:  # e.g. no bf16 32-bit RMSprop/Adagrad in 0.50.2
                        ref = None
                        bnb_error = f"{type(e).__name__}: {e}"
                    d = os.path.join(work, case)
                    os.makedirs(d, exist_ok=True)
                    np.save(os.path.join(d, "params0.npy"), p0)
                    np.save(os.path.join(d, "grads.npy"), g)
                    for dev in devices:
                        out = os.path.join(d, "exmy-" + dev)
                        cmd = [a.exmy, "step", "--optimizer", name, "--params",
                               os.path.join(d, "params0.npy"), "--grads",
                               os.path.join(d, "grads.npy"), "--steps", str(a.steps),
                               "--param-dtype", dtype, "--compat", "bnb-cuda", "--device", dev,
                               "--out", out, "--quiet"] + flags
                        r = subprocess.run(cmd, capture_output=True, text=True)
                        row = {"case": case, "exmy_device": dev, "seed": seed}
                        if ref is None:  # the library refused: exmy must refuse too (exit 2)
                            row["bitsandbytes"] = bnb_error[:200]
                            row["exmy_rc"] = r.returncode
                            if r.returncode != 2:
                                total_bad += 1
                            rows.append(row)
                            continue
                        if r.returncode != 0:
                            row["error"] = r.stderr.strip()[-300:]
                            total_bad += 1
                            rows.append(row)
                            continue
                        for k, v in ref.items():
                            f = os.path.join(out, k + ".npy")
                            if not os.path.exists(f):
                                row[k] = "missing"
                                total_bad += 1
                                continue
                            mine = np.load(f)
                            want = v.astype(np.float32) if k == "params" else v
                            dif = bit_diff(mine, want)
                            row[k] = dif
                            if dif != 0:
                                total_bad += 1
                        rows.append(row)
                        print(json.dumps(row), flush=True)
    if a.golden:
        write_golden(a.golden, only, info)
    # AdEMAMix8bit at 20001 elements (not a multiple of 256): two identical bitsandbytes runs.
    notes = {}
    if not a.no_notes and (not only or only & {"ademamix32bit", "paged_ademamix32bit"}):
        notes["ademamix32bit"] = ademamix32bit_evidence(a, work)
    if not a.no_notes and (not only or "ademamix8bit" in only):
        rng = np.random.default_rng(12345)
        p0 = rng.normal(0.0, 1.0, size=20001).astype(np.float32)
        g = gradients(rng, a.steps, 20001, "fp32")
        r1 = run_bnb(bnb.optim.AdEMAMix8bit, {}, p0, g, "fp32")
        r2 = run_bnb(bnb.optim.AdEMAMix8bit, {}, p0, g, "fp32")
        notes["ademamix8bit_20001"] = {
            "runs_differ_in": {k: bit_diff(r1[k], r2[k]) for k in r1},
            "absmax1_last_entry": float(r1["absmax1"].reshape(-1)[-1]),
            "exmy": "refused under --compat bnb-cuda (SEMANTICS 9.4.2)"}
    # LAMB8bit / LARS8bit at 8192 elements: what bitsandbytes 0.50.2 does (no 8-bit kernel).
    for cname, kw in (() if a.no_notes else (("LAMB8bit", {}), ("LARS8bit", {"momentum": 0.9}))):
        p = torch.nn.Parameter(torch.randn(8192, device="cuda"))
        try:
            opt = getattr(bnb.optim, cname)([p], lr=1e-3, **kw)
            p.grad = torch.randn_like(p)
            opt.step()
            notes[cname] = "stepped"
        except Exception as e:  # the library's own error, recorded verbatim
            notes[cname] = f"{type(e).__name__}: {e}"
    summary = {"info": info, "steps": a.steps, "cases": rows, "differing_files": total_bad,
               "lamb_lars_8192": notes}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(f"# bitsandbytes one-state optimizers vs exmy --compat bnb-cuda\n\n{info}\n\n")
        f.write("| case | exmy engine | params | state1 | absmax1 | state2 | absmax2 | error |\n"
                "|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['case']} | {r['exmy_device']} | {r.get('params', '')} | "
                    f"{r.get('state1', '')} | {r.get('absmax1', '')} | {r.get('state2', '')} | "
                    f"{r.get('absmax2', '')} | {r.get('error', '')} |\n")
        f.write(f"\nfiles differing: {total_bad}\n\nnotes (AdEMAMix8bit race, LAMB8bit/LARS8bit at "
                f"8192 elements): {notes}\n")
    print(f"files differing: {total_bad} ({len(rows)} case runs)")
    return 0 if total_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
