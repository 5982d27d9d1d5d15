#!/usr/bin/env python3
"""torchao 0.18 float8 training against exmy, bit for bit: `exmy layer --recipe torchao-NAME`
on the inputs torchao_float8_capture.py saved, and each piece separately — every cast (`exmy
quantize --variant torchao`, codes and scales) and every torch._scaled_mm / bf16 torch.mm
(`exmy gemm` on the very codes and scales torchao passed).

    bench/peers/torchao_float8_vs_exmy.py --exmy PATH --caps DIR [--json OUT.json] [--device cpu|cuda]
    bench/peers/torchao_float8_vs_exmy.py --exmy PATH --seed S --out DIR [...]   (captures first;
        needs CUDA, torch and torchao; runs torchao_float8_capture.py --no-compile --seed S)

Prints one line per case and check (differing outputs / elements, of how many) and a summary;
exit 0 when nothing differs, 1 otherwise. `--device cuda` runs the GEMM checks on exmy's CUDA
emulation kernel (the same bits, faster); the layer itself runs on the CPU reference.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPE = {"tensorwise": "torchao-tensorwise", "rowwise": "torchao-rowwise",
          "rowwise_with_gw_hp": "torchao-rowwise-gw-hp"}
FMT = {"torch.float8_e4m3fn": "e4m3fn", "torch.float8_e5m2": "e5m2"}
# exmy layer --recipe's state names for torchao's casts, by (role, axiswise_dim, granularity).
FAST = "hw:k=32,frac=13,inter=13"  # fast accumulation: cublas-sm90 without the promotion
# --fit: candidate models of a product that differs (run on the rows the capture kept).
FIT = ["hw:k=32,frac=13,inter=13", "hw:k=32,frac=13,inter=13,chunk=128",
       "hw:k=32,frac=13,inter=13,chunk=256", "hw:k=32,frac=13,inter=13,chunk=512",
       "hw:k=32,frac=13,inter=13,rne", "hw:k=32,frac=13,inter=23", "hw:k=32,frac=25",
       "hw:k=16,frac=13,inter=13", "hw:k=64,frac=13,inter=13", "fp32-seq", "pairwise"]


def bf16_rne(v):
    """The capture's fp32 -> bf16 (torchao_float8_capture.py bf16_rne; the same function)."""
    b = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def make_inputs(M, K, N, seed):
    """The capture's inputs (torchao_float8_capture.py make_inputs; the same function)."""
    rng = np.random.default_rng(seed)

    def mat(r, c, base):
        a = rng.normal(0.0, 1.0, size=(r, c))
        a *= np.exp2(rng.uniform(-4, 4, size=(r, 1))) * np.exp2(rng.uniform(-4, 4, size=(1, c)))
        return (a * base).astype(np.float32)

    x = mat(M, K, 1.0)
    w = mat(N, K, 2.0 ** -5)
    g = mat(M, N, 2.0 ** -12)
    x[M // 3] = 0.0
    g[M // 5] = 0.0
    x[M // 7] *= np.float32(2.0 ** -100)
    return [bf16_rne(v) for v in (x, w, g)]


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


class Stored:
    """One captured array: whole, or its sha256 and first rows."""

    def __init__(self, z, meta, key):
        self.meta = meta.get(key)
        self.whole = z[key] if key in z.files else None
        self.head = z[key + "_head"] if key + "_head" in z.files else None

    def compare(self, got):
        """(differing elements, of how many, note): counted on the whole array where it was
        kept; else 0 or 'sha256 differs' over all of it, counted on the first rows."""
        got = np.ascontiguousarray(got)
        if self.whole is not None:
            d, n = diff(got, self.whole)
            return d, n, None
        n = int(np.prod(self.meta["shape"]))
        if list(got.shape) != self.meta["shape"]:
            return f"shape {list(got.shape)} vs {self.meta['shape']}", n, None
        if sha(got.astype(self.meta["dtype"])) == self.meta["sha256"]:
            return 0, n, "sha256 equal"
        hd, hn = diff(got[: self.head.shape[0]], self.head)
        return "sha256 differs", n, f"first rows: {hd} of {hn} differ"


import hashlib  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {p.returncode}: {p.stderr.strip()[-600:]}")
    return p


def diff(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}", a.size
    return int((a.ravel() != b.ravel()).sum()), int(a.size)


def f32bits(v):
    return np.ascontiguousarray(np.asarray(v, dtype=np.float32)).view(np.uint32)


class Checker:
    def __init__(self, exmy, device, tmp):
        self.exmy, self.device, self.tmp = exmy, device, tmp
        self.rows, self.bad, self.fits, self.fit, self.casts_only = [], 0, [], False, False

    def record(self, case, check, d, n, extra=None, note=None):
        if note:
            extra = dict(extra or {}, note=note)
        row = {"case": case, "check": check, "differ": d, "of": n}
        if extra:
            row.update(extra)
        self.rows.append(row)
        if d != 0:
            self.bad += 1
        print(f"{case:24s} {check:28s} differ {d} of {n}" + (f"  {extra}" if extra else ""),
              flush=True)

    def path(self, name, arr):
        p = os.path.join(self.tmp, name)
        np.save(p, np.ascontiguousarray(arr))
        return p

    def quantize(self, hp_bits, scheme, fmt, pow2):
        q, s = os.path.join(self.tmp, "q.npy"), os.path.join(self.tmp, "s.npy")
        for f in (q, s):
            if os.path.exists(f):
                os.remove(f)
        cmd = [self.exmy, "quantize", "--scheme", scheme, "--to", fmt, "--variant", "torchao",
               "--in", self.path("hp.npy", hp_bits), "--in-format", "bf16", "--out", q,
               "--state-out", s]
        if pow2:
            cmd.append("--pow2-scale")
        run(cmd)
        return np.load(q), np.load(s)

    def gemm(self, a, af, b, bf, out_fmt, accum, scales):
        c = os.path.join(self.tmp, "c.npy")
        if os.path.exists(c):
            os.remove(c)
        cmd = [self.exmy, "gemm", "--a", self.path("a.npy", a), "--b", self.path("b.npy", b),
               "--a-format", af, "--b-format", bf, "--out-format", out_fmt, "--accum", accum,
               "--out", c, "--device", self.device]
        cmd += scales
        run(cmd)
        return np.load(c)


def hp_of(ev, x, w, g):
    """The high-precision tensor a cast read, as laid out logically (torchao's hp_shape)."""
    role = ev["role"].split(".")[-1]
    t = {"INPUT": x, "WEIGHT": w.T, "GRAD_OUTPUT": g}[role]
    if list(t.shape) != ev["hp_shape"]:
        raise RuntimeError(f"cast {ev['index']}: hp shape {ev['hp_shape']} vs {t.shape}")
    return np.ascontiguousarray(t)


def scheme_of(ev):
    if "TENSORWISE" in ev["granularity"]:
        return "tensor"
    return "rowwise" if ev["axiswise_dim"] == -1 else "colwise"


def check_case(ck, caps, meta, case, layer_dir):
    name, recipe = case["name"], case["recipe"]
    im = meta["inputs"][case["inputs"]]
    x, w, g = make_inputs(im["M"], im["K"], im["N"], im["seed"])
    for k, v in zip(("x", "w", "g"), (x, w, g)):
        if sha(v) != im["sha256"][k]:
            raise RuntimeError(f"regenerated input {k} differs from the capture's (sha256)")
    z = np.load(os.path.join(caps, name + ".npz"))
    arrays = case["arrays"]
    S = lambda key: Stored(z, arrays, key)  # noqa: E731
    casts = {}
    # 1. The casts: codes and scales.
    for ev in case["events"]:
        if ev["op"] != "cast":
            continue
        j = ev["index"]
        if ev.get("same_as") is not None:
            casts[j] = (casts[ev["same_as"]][0], casts[ev["same_as"]][1], ev)
            continue
        scale = z[f"cast{j}_scale"]
        codes, state = ck.quantize(hp_of(ev, x, w, g), scheme_of(ev), FMT[ev["dtype"]], ev["pow2"])
        # The GEMM checks below multiply exmy's codes: equal to torchao's where this says 0.
        casts[j] = (codes.view(np.uint8), scale, ev)
        d, n, note = S(f"cast{j}_data").compare(codes.view(np.uint8))
        ck.record(name, f"cast{j} {ev['role'].split('.')[-1].lower()} {scheme_of(ev)} codes", d, n,
                  note=note)
        ck.record(name, f"cast{j} scale", *diff(f32bits(state.ravel()), f32bits(scale.ravel())))
    if ck.casts_only:
        return
    # 2. The GEMMs on torchao's own operands.
    for ev in case["events"]:
        j = ev["index"]
        if ev["op"] == "scaled_mm":
            def operand(src, key, transpose_logical):
                if src is None:
                    return None, None
                k, t = int(src.split(".")[0][4:]), src.endswith(".T")
                data, _, cev = casts[k]
                logical = data.T if t else data
                return (logical.T if transpose_logical else logical), FMT[cev["dtype"]]
            a, af = operand(ev["a_src"], f"mm{j}_a", False)
            b, bf = operand(ev["b_src"], f"mm{j}_b", True)  # exmy's B = b^T (N x K)
            if af is None or bf is None:
                ck.record(name, f"mm{j}", "operand not from a cast", 0)
                continue
            sa, sb = z[f"mm{j}_sa"], z[f"mm{j}_sb"]
            if sa.size == 1 and sb.size == 1:
                scales = ["--scale-a", repr(float(sa.ravel()[0])), "--scale-b",
                          repr(float(sb.ravel()[0]))]
            else:
                scales = ["--scale-a-rows", ck.path("sa.npy", np.broadcast_to(
                    sa.reshape(-1), (a.shape[0],)).astype(np.float32)),
                          "--scale-b-rows", ck.path("sb.npy", np.broadcast_to(
                              sb.reshape(-1), (b.shape[0],)).astype(np.float32)),
                          "--scale-order", "product"]
            out_fmt = "bf16" if "bfloat16" in ev["out_dtype"] else "fp32"
            want = S(f"mm{j}_out")
            models = ([ck.fast, ck.accum] if ev["use_fast_accum"] else [ck.accum, ck.fast])
            res = {}
            for mdl in models:
                got = ck.gemm(a, af, b, bf, out_fmt, mdl, scales)
                res[mdl] = want.compare(got)
            d, n, note = res[models[0]]
            if ck.fit and d != 0:
                # Candidate models on the rows kept (every output row is its own dot products).
                rows = want.whole if want.whole is not None else want.head
                h = rows.shape[0]
                sc = scales
                if "--scale-a-rows" in scales:
                    sc = ["--scale-a-rows", ck.path("sa.npy", np.broadcast_to(
                        sa.reshape(-1), (a.shape[0],)).astype(np.float32)[:h]),
                          "--scale-b-rows", scales[3], "--scale-order", "product"]
                fits = {}
                for mdl in FIT:
                    got = ck.gemm(np.ascontiguousarray(a[:h]), af, b, bf, out_fmt, mdl, sc)
                    fits[mdl] = diff(got, rows)[0]
                print(f"{name:24s} mm{j} fit on {h} rows: {fits}", flush=True)
                ck.fits.append({"case": name, "mm": j, "rows": h, "fits": fits})
            ck.record(name, f"mm{j} {'fast' if ev['use_fast_accum'] else 'acc'} "
                      f"{a.shape[0]}x{b.shape[0]}x{a.shape[1]}", d, n,
                      {"model": models[0], "other_model": models[1],
                       "other_differ": res[models[1]][0], "other_note": res[models[1]][2]},
                      note=note)
        elif ev["op"] == "hp_mm":
            # rowwise_with_gw_hp's W_grad: torch.mm(G^T, X) in bf16 = exmy C = A B^T with A = G^T,
            # B = X^T.
            got = ck.gemm(np.ascontiguousarray(g.T), "bf16", np.ascontiguousarray(x.T), "bf16",
                          "bf16", ck.accum, [])
            d, n, note = S(f"hp{j}_out").compare(got)
            ck.record(name, f"hp_mm{j} bf16 {g.shape[1]}x{x.shape[1]}x{g.shape[0]}", d, n,
                      note=note)
    # 3. The layer.
    out = os.path.join(layer_dir, name)
    run([ck.exmy, "layer", "--recipe", RECIPE[recipe], "--x", ck.path("x.npy", x), "--w",
         ck.path("w.npy", w), "--g", ck.path("g.npy", g), "--out", out, "--quiet", "--accum",
         ck.accum, "--accum-fast", ck.fast])
    for k in ("y", "x_grad", "w_grad"):
        d, n, note = S(k).compare(np.load(os.path.join(out, k + ".npy")))
        ck.record(name, f"layer {k}", d, n, note=note)
    cast_scale = {}
    for ev in case["events"]:
        if ev["op"] == "cast":
            cast_scale.setdefault(_state_name(ev), casts[ev["index"]][1])
    for st, want in cast_scale.items():
        p = os.path.join(out, st + ".npy")
        if os.path.exists(p):
            ck.record(name, f"layer state {st}",
                      *diff(f32bits(np.load(p).ravel()), f32bits(want.ravel())))
    for c in meta.get("compiled", []):
        if c["name"] != name or c.get("status") != "ok":
            continue
        for k in ("y", "x_grad", "w_grad"):
            got = np.load(os.path.join(out, k + ".npy"))
            same = sha(got) == c["arrays"][k]["sha256"]
            ck.record(name, f"compiled {k} vs layer", 0 if same else "sha256 differs", got.size,
                      {"compiled_vs_eager_differ": c["diff_vs_eager"][k]})


def _state_name(ev):
    """exmy layer --recipe's state file for a torchao cast (sim/layer/recipe.cpp)."""
    role = ev["role"].split(".")[-1]
    tw = "TENSORWISE" in ev["granularity"]
    ax = ev["axiswise_dim"]
    if role == "INPUT":
        return "scale_x" if tw or ax == -1 else "scale_x_wgrad"
    if role == "WEIGHT":
        return "scale_w" if (tw and ev["index"] < 2) or ax == 0 else "scale_w_dgrad"
    return "scale_g" if tw or ax == -1 else "scale_g_wgrad"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--caps", help="a capture directory (torchao_float8_capture.py --out)")
    ap.add_argument("--capture-args", default="--no-compile",
                    help="with --seed: extra arguments of the capture script")
    ap.add_argument("--seed", type=int, help="capture anew with this seed first (CUDA)")
    ap.add_argument("--out", help="with --seed: where the capture goes")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--device", default="cpu", help="exmy gemm's device for the GEMM checks")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--accum", default="cublas-sm90",
                    help="exmy's model of the products without fast accumulation and bf16 ones")
    ap.add_argument("--accum-fast", default=FAST, help="exmy's model of the fast-accumulation ones")
    ap.add_argument("--casts-only", action="store_true", help="check the casts only")
    ap.add_argument("--fit", action="store_true",
                    help="for a GEMM that differs: try the FIT models on the kept rows")
    a = ap.parse_args()
    if a.seed is not None:
        if not a.out:
            ap.error("--seed needs --out")
        subprocess.run([sys.executable, os.path.join(HERE, "torchao_float8_capture.py"), "--out",
                        a.out, "--seed", str(a.seed)] + a.capture_args.split(), check=True)
        a.caps = a.out
    if not a.caps:
        ap.error("give --caps DIR or --seed S --out DIR")
    meta = json.load(open(os.path.join(a.caps, "case.json")))
    want = set(filter(None, a.cases.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        ck = Checker(a.exmy, a.device, tmp)
        ck.fit, ck.accum, ck.fast, ck.casts_only = a.fit, a.accum, a.accum_fast, a.casts_only
        layer_dir = os.path.join(tmp, "layers")
        os.makedirs(layer_dir)
        for case in meta["cases"]:
            if case.get("status") != "ok" or (want and case["name"] not in want):
                continue
            try:
                check_case(ck, a.caps, meta, case, layer_dir)
            except Exception as e:  # one case's failure is reported, the others still run
                ck.record(case["name"], "error", str(e)[:300], 0)
    total = sum(r["of"] for r in ck.rows if isinstance(r["differ"], int))
    nd = sum(r["differ"] for r in ck.rows if isinstance(r["differ"], int))
    print(f"summary: {len(ck.rows)} checks, {ck.bad} with differences; {nd} of {total} "
          f"elements differ; capture {meta.get('versions', {})}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"caps": a.caps, "versions": meta.get("versions"), "rows": ck.rows,
                       "fits": ck.fits}, f, indent=1)
    sys.exit(0 if ck.bad == 0 else 1)


if __name__ == "__main__":
    main()
