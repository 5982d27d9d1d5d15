#!/usr/bin/env python3
"""bitsandbytes' matmul_4bit (captured by bench/peers/qlora_matmul_capture.py) against
`exmy gemm --b-format nf4|fp4 --compat bnb-cuda` (docs/SEMANTICS.md 7.17), bit for bit.

    python3 bench/peers/qlora_matmul_vs_exmy.py --exmy build/cli/exmy --caps CAPDIR --out OUT
    python3 bench/peers/qlora_matmul_vs_exmy.py --exmy build/cli/exmy --fresh --seed S --out OUT
        [--quick] [--only SUBSTR] [--sms N --sm MAJMIN]

--caps: a capture directory (manifest.json, weights/, cases/). The inputs are regenerated from the
capture's seed (qlora_matmul_capture.gen_weight / gen_case, checked against its sha256), W is
quantized by `exmy quantize --compat bnb-cuda` (checked against bitsandbytes' codes, absmax,
state2 and offset checksums) and those files feed exmy gemm. Needs torch (CPU is enough). --fresh: run the capture now (needs
CUDA and bitsandbytes) into OUT/capture with the given seed, then compare. For every case exmy runs
with --path auto (bitsandbytes' dispatch as exmy models it for --sms/--sm, default H200: 132 SMs,
sm_90) and the path exmy took is checked against the kernels the profiler saw. Y_linear (F.linear
on bitsandbytes' own dequantized weight, M in 1, 8, 64) is checked against exmy's
--path dequant-linear (the dequantization and exmy's cuBLAS model). Cases whose path exmy does not
model (the MMA kernel) are counted, not compared.

--linear-only: only the dequantize + F.linear outputs (Y on that path, Y_linear), the cuBLAS
half. Their outputs wider than 16384 elements (stored: the first 256 columns) run on those rows
of W under the model of the whole GEMM: `exmy gemm --plan` names the model of the full
M x N x K (its launch record, or the rule, announced) and that model string runs the slice
(--path dequant-linear --accum MODEL; a column of F.linear reads only its row of W), so every
case is checked on the CPU in seconds. Each row records the model and whether exmy called the
shape verified. --profile P.json runs exmy with EXMY_GEMM_PROFILE=P.json (launch records of
your own, e.g. bench/peers/qlora_linear_launch_capture.py's converted by tools/gemm_launch.py
--from ... --out P.json); --accum passes exmy gemm's --accum (default: exmy's cublas-sm90).

Writes OUT/summary.md and OUT/summary.json: differing elements per case, counts by path and dtype;
exit 0 when every compared element is equal, 1 when one differs, 2 on a script error.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import hashlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qlora_matmul_capture as C  # noqa: E402  (the inputs' generators and checksums)
KERNEL_PATH = {"simt": "simt", "mma_sm80": "mma_sm80", "mma_sm75": "mma_sm75",
               "dequant+linear": "dequant_linear"}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--caps")
    g.add_argument("--fresh", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--max-linear-gmac", type=float, default=0.0,
                    help="skip dequant-linear runs above this many 1e9 multiply-adds (0: none; "
                         "exmy's CPU GEMM model takes ~10-40 s per 1e9 on one core)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="exmy gemm --device: where the mma / dequant-linear GEMM model runs")
    ap.add_argument("--linear-only", action="store_true",
                    help="only the dequantize + F.linear outputs (Y on that path, Y_linear)")
    ap.add_argument("--profile", default="",
                    help="EXMY_GEMM_PROFILE for the exmy runs (launch records of your own)")
    ap.add_argument("--accum", default="", help="exmy gemm --accum for dequant-linear")
    ap.add_argument("--sms", default="132")
    ap.add_argument("--sm", default="90")
    return ap.parse_args()


def save(path, arr):
    np.save(path, np.ascontiguousarray(arr))
    return path


def sha_file_data(path):
    return hashlib.sha256(np.ascontiguousarray(np.load(path)).tobytes()).hexdigest()


def in_args(t, path):
    """A CPU tensor saved as exmy reads it: bf16 bits as <u2 (--in-format bf16), <f2, <f4."""
    b = C.np_bits(t)
    save(path, b.reshape(-1))
    return ["--in-format", "bf16"] if t.dtype == torch.bfloat16 else []


def weight_files(exmy, tmp, seed, wname, wrec, wz):
    """Regenerate W, quantize it with exmy, check the bytes against bitsandbytes' checksums;
    return (gemm arguments, list of mismatching arrays)."""
    d = os.path.join(tmp, wname)
    os.makedirs(d, exist_ok=True)
    N, K, bs, qt = wrec["N"], wrec["K"], wrec["blocksize"], wrec["quant_type"]
    w = C.gen_weight(seed, wrec["index"], N, K, wrec["quantized_from"])
    bad = []
    if C.sha(w) != wrec["w_sha256"]:
        bad.append("W (regenerated input)")
    q, s, s2, o = (os.path.join(d, f) for f in ("q.npy", "s.npy", "s2.npy", "o.npy"))
    cmd = [exmy, "quantize", "--scheme", f"block:{bs}", "--to", qt, "--compat", "bnb-cuda",
           "--in", os.path.join(d, "w.npy"), "--out", q, "--state-out", s]
    cmd[cmd.index("--in") + 2:cmd.index("--in") + 2] = in_args(w, os.path.join(d, "w.npy"))
    if wrec["compress_statistics"]:
        cmd += ["--double-quant", "--state2-out", s2, "--offset-out", o]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"exmy quantize failed for {wname}: {r.stderr.strip()}")
    checks = [("packed", q), ("absmax", s)]
    if wrec["compress_statistics"]:
        checks += [("state2_absmax", s2), ("offset", o)]
    for key, path in checks:
        if sha_file_data(path) != wrec[key + "_sha256"]:
            bad.append(key)
    args = ["--b", q, "--b-format", qt, "--b-shape", f"{N}x{K}", "--block", str(bs),
            "--block-scale-b", s]
    if wrec["compress_statistics"]:
        args += ["--double-quant", "--state2", s2, "--offset", o]
    return args, bad


def capture_linear_weight(exmy, tmp, wname, wrec, wargs, dt, cache):
    """The weight the capture's Y_linear multiplied: `F.dequantize_4bit(packed, state).to(dt)`,
    i.e. dequantized to the dtype W was quantized from (quant_state.dtype), then torch's cast
    to dt (RNE; a second rounding where that dtype is neither dt nor fp32). bitsandbytes'
    fallback dequantizes to X's dtype directly (exmy gemm --path dequant-linear). Returns (path
    of its <u2 bits, N x K; its sha256 as the capture's deq_sha256 computes it)."""
    if (wname, dt) in cache:
        return cache[(wname, dt)]
    get = {wargs[i]: wargs[i + 1] for i in range(len(wargs) - 1) if wargs[i].startswith("--")}
    src = wrec["quantized_from"]
    d = os.path.join(tmp, wname)
    w0 = os.path.join(d, f"wdq_{src}.npy")
    if not os.path.exists(w0):
        cmd = [exmy, "dequantize", "--scheme", f"block:{wrec['blocksize']}", "--from",
               wrec["quant_type"], "--compat", "bnb-cuda", "--in", get["--b"], "--state",
               get["--block-scale-b"], "--shape", f"{wrec['N']},{wrec['K']}", "--out-format", src,
               "--out", w0]
        if "--state2" in get:
            cmd += ["--double-quant", "--state2", get["--state2"], "--offset", get["--offset"]]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"exmy dequantize failed for {wname}: {r.stderr.strip()}")
    a = np.load(w0)
    t = (torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if src == "bf16"
         else torch.from_numpy(a))
    t = t.to(C.DT[dt])
    path = save(os.path.join(d, f"wlin_{dt}.npy"), bits(C.np_bits(t)).reshape(wrec["N"], wrec["K"]))
    cache[(wname, dt)] = (path, C.sha(t))
    return cache[(wname, dt)]


def run_plain_gemm(exmy, x, wpath, n, dtype, tmp, accum):
    """exmy gemm on X and the first n rows of a 16-bit weight file under the model `accum`."""
    xp = save(os.path.join(tmp, "lx.npy"), bits(x).reshape(-1, x.shape[-1]))
    w = np.load(wpath)
    wp = save(os.path.join(tmp, "lw.npy"), w[:n]) if n < w.shape[0] else wpath
    yp = os.path.join(tmp, "ly.npy")
    r = subprocess.run([exmy, "gemm", "--a", xp, "--a-format", dtype, "--b", wp, "--b-format", dtype,
                        "--out-format", dtype, "--accum", accum, "--out", yp],
                       capture_output=True, text=True, env=EXMY_ENV)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return np.load(yp).reshape(tuple(x.shape[:-1]) + (-1,)), None


def sliced_weight(tmp, wname, wrec, wargs, n):
    """The first n rows of the weight (its codes, absmax, nested codes and state2), as gemm args:
    an output column of the SIMT and MMA kernels reads only its own row of W."""
    d = os.path.join(tmp, wname + f"_rows{n}")
    os.makedirs(d, exist_ok=True)
    K, bs = wrec["K"], wrec["blocksize"]
    get = {wargs[i]: wargs[i + 1] for i in range(len(wargs) - 1) if wargs[i].startswith("--")}
    blocks = n * K // bs
    out = ["--b", save(os.path.join(d, "q.npy"), np.load(get["--b"])[: n * K // 2]),
           "--b-format", get["--b-format"], "--b-shape", f"{n}x{K}", "--block", str(bs),
           "--block-scale-b", save(os.path.join(d, "s.npy"), np.load(get["--block-scale-b"])[:blocks])]
    if "--state2" in get:
        out += ["--double-quant",
                "--state2", save(os.path.join(d, "s2.npy"), np.load(get["--state2"])[: (blocks + 255) // 256]),
                "--offset", get["--offset"]]
    return out


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16).reshape(-1)


def compare(y, rec, key, cz):
    """(status, differing, compared): sha256 of the whole output, and the stored part."""
    b = y  # exmy's file: bf16 bits as <u2, <f2, <f4 (the capture's np_bits layout)
    full_equal = hashlib.sha256(np.ascontiguousarray(b).tobytes()).hexdigest() == rec[key + "_sha256"]
    if key not in cz:
        return ("equal" if full_equal else "differs (sha256; no stored part)"), None, 0
    want = cz[key]
    got = np.ascontiguousarray(b).reshape(-1, b.shape[-1])[:, :want.shape[1]]
    d = int(np.count_nonzero(bits(got) != bits(want)))
    if full_equal:
        return "equal", d, int(want.size)
    return "differs", d, int(want.size)


EXMY_ENV = dict(os.environ)


def run_exmy(exmy, wargs, x, dtype, tmp, name, bias=None, path="auto", sm=("132", "90"), device="cpu",
             accum="", plan=False, info_out=None):
    """exmy gemm on these inputs: (Y, exmy's path, error). plan: `--plan` (Y None); info_out
    (a dict) receives exmy's --json line (accum_model, verified, rule on dequant-linear)."""
    xp = save(os.path.join(tmp, name + "_x.npy"), x)
    yp = os.path.join(tmp, name + "_y.npy")
    cmd = [exmy, "gemm", "--a", xp, "--a-format", dtype, *wargs, "--compat", "bnb-cuda",
           "--out-format", dtype, "--out", yp, "--path", path, "--json", "--sms", sm[0], "--sm", sm[1]]
    if path != "gemv" and path != "simt":
        cmd += ["--device", device]
    if accum:
        cmd += ["--accum", accum]
    if plan:
        cmd += ["--plan"]
    if bias is not None:
        cmd += ["--bias", save(os.path.join(tmp, name + "_b.npy"), bias)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=EXMY_ENV)
    if r.returncode != 0:
        return None, None, (r.stderr.strip().splitlines() or ["?"])[-1]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    if info_out is not None:
        info_out.update(info)
        info_out["stderr"] = r.stderr.strip()
    return (None if plan else np.load(yp)), info["path"], None


def main():
    a = parse_args()
    if a.profile:
        EXMY_ENV["EXMY_GEMM_PROFILE"] = os.path.abspath(a.profile)
    os.makedirs(a.out, exist_ok=True)
    caps = a.caps
    if a.fresh:
        caps = os.path.join(a.out, "capture")
        cmd = [sys.executable, os.path.join(HERE, "qlora_matmul_capture.py"), "--out", caps,
               "--seed", str(a.seed)] + (["--quick"] if a.quick else [])
        print(" ".join(cmd), flush=True)
        if subprocess.run(cmd).returncode != 0:
            print("qlora_matmul_vs_exmy: the capture failed", file=sys.stderr)
            return 2
    man = json.load(open(os.path.join(caps, "manifest.json")))
    if man.get("dry_run"):
        print("note: a --cpu-dry-run capture (no bitsandbytes output): plumbing only", flush=True)
    rows, wbad = [], {}
    counts = collections.Counter()
    diff_counts = collections.Counter()
    sm = (a.sms, a.sm)
    with tempfile.TemporaryDirectory() as tmp:
        wargs, lin_cache = {}, {}
        for c in man["cases"]:
            if a.only and a.only not in c["case"]:
                continue
            wn = c["weight"]
            wrec = man["weights"][wn]
            if wn not in wargs:
                wz = np.load(os.path.join(caps, "weights", wn + ".npz"))
                wargs[wn], wbad[wn] = weight_files(a.exmy, tmp, man["seed"], wn, wrec, wz)
                print(f"{wn}: exmy's quantization {'equals' if not wbad[wn] else 'DIFFERS from'} "
                      f"bitsandbytes' {' '.join(wbad[wn])}", flush=True)
            cz = np.load(os.path.join(caps, "cases", c["case"] + ".npz"))
            x, b = C.gen_case(man["seed"], wrec["index"], c["index"], tuple(c["x_shape"]), wrec["N"],
                              c["dtype"], c["bias"])
            inputs_ok = C.sha(x) == c["x_sha256"] and (b is None or C.sha(b) == c["bias_sha256"])
            xb = C.np_bits(x)
            bb = C.np_bits(b) if b is not None else None
            want_path = KERNEL_PATH.get(c["path"], c["path"])
            for key, lib_path, path in (("Y", want_path, "auto"), ("Y_linear", "linear", "dequant-linear"),
                                        ("Y_gemv", "gemv_naive", "gemv")):
                if key + "_sha256" not in c:
                    continue
                wa, bk = wargs[wn], (bb if key == "Y" else None)
                if key == "Y_gemv" and not c.get("gemv_path"):
                    continue
                linear = path == "dequant-linear" or (path == "auto" and want_path == "dequant_linear")
                if a.linear_only and not linear:
                    continue
                head = c.get(key + "_stored", "").startswith("head")
                sliced = key == "Y" and head and want_path in ("simt", "mma_sm80")
                accum, plan_info, run_info = a.accum, {}, {}
                if sliced:  # only the stored columns: their rows of W, on bitsandbytes' path
                    n = cz[key].shape[1]
                    wa = sliced_weight(tmp, wn, wrec, wargs[wn], n)
                    path = {"simt": "simt", "mma_sm80": "mma"}[want_path]
                    bk = bb[:n] if bb is not None else None
                elif linear and head and key in cz:
                    # the stored columns under the whole GEMM's model (its launch record)
                    _, _, perr = run_exmy(a.exmy, wa, xb, c["dtype"], tmp, "p", bk, path=path, sm=sm,
                                          device=a.device, accum=a.accum, plan=True,
                                          info_out=plan_info)
                    if perr is None and "accum_model" in plan_info:
                        n = cz[key].shape[1]
                        wa = sliced_weight(tmp, wn, wrec, wargs[wn], n)
                        bk = bk[:n] if bk is not None else None
                        path, accum, sliced = "dequant-linear", plan_info["accum_model"], True
                gmac = c["M"] * wrec["N"] * wrec["K"] / 1e9
                if a.max_linear_gmac and linear and not sliced and gmac > a.max_linear_gmac:
                    counts[((lib_path, c["dtype"]), "skipped (size)")] += 1
                    continue
                deq_ok = None
                if key == "Y_linear":
                    # F.linear on the capture's own weight (capture_linear_weight), under the
                    # model exmy names for that GEMM (--plan: its launch record)
                    if not plan_info:
                        _, _, perr = run_exmy(a.exmy, wargs[wn], xb, c["dtype"], tmp, "p", None,
                                              path="dequant-linear", sm=sm, device=a.device,
                                              accum=a.accum, plan=True, info_out=plan_info)
                    wl, wl_sha = capture_linear_weight(a.exmy, tmp, wn, wrec, wargs[wn], c["dtype"],
                                                       lin_cache)
                    deq_ok = wl_sha == c.get("deq_sha256")
                    n = cz[key].shape[1] if head and key in cz else wrec["N"]
                    sliced = n < wrec["N"]
                    if "accum_model" in plan_info:
                        y, err = run_plain_gemm(a.exmy, xb, wl, n, c["dtype"], tmp,
                                                plan_info["accum_model"])
                    else:
                        y, err = None, "exmy gemm --plan: no model"
                    got_path = "dequant_linear"
                else:
                    y, got_path, err = run_exmy(a.exmy, wa, xb, c["dtype"], tmp, "c", bk, path=path,
                                                sm=sm, device=a.device, accum=accum,
                                                info_out=run_info)
                if sliced and err is None:
                    got_path = want_path if got_path in ("simt", "mma_sm80") else got_path
                    if plan_info and key == "Y":  # the path exmy's dispatch chose for the call
                        got_path = plan_info["path"]
                name = c["case"] + {"Y": "", "Y_linear": " [F.linear on dequantize_4bit]",
                                    "Y_gemv": " [F.gemv_4bit]"}[key]
                row = {"case": name, "dtype": c["dtype"], "M": c["M"], "lib_path": lib_path,
                       "exmy_path": got_path, "error": err, "inputs_ok": inputs_ok,
                       "weight_ok": not wbad[wn]}
                if deq_ok is not None:
                    row["weight_dequant_equal"] = deq_ok  # the capture's deq_sha256
                gi = plan_info or run_info
                if linear and "accum_model" in gi:  # the GEMM model of the whole shape
                    row.update(N=wrec["N"], K=wrec["K"], bias=bool(bk is not None),
                               accum_model=gi["accum_model"], verified=gi["verified"],
                               rule=gi["rule"], sliced=bool(plan_info))
                lib_k = c.get("kernels" if key == "Y" else "linear_kernels") or []
                gk = [k for k in lib_k if "gemm" in k.lower() or "nvjet" in k or "gemv" in k
                      or "dot_kernel" in k]
                if linear and gk:
                    row["lib_gemm_kernel"] = gk[0][:160]
                if err is not None:
                    row["status"] = "not-modelled" if "does not model" in err else "exmy-error"
                else:
                    if sliced:
                        want = cz[key]
                        d = int(np.count_nonzero(bits(y.reshape(-1, y.shape[-1])) != bits(want)))
                        row["status"] = "equal (stored columns)" if d == 0 else "differs"
                        row["differ"], row["compared"] = d, int(want.size)
                    else:
                        row["status"], row["differ"], row["compared"] = compare(y, c, key, cz)
                    if key != "Y_linear" and got_path != lib_path and not man.get("dry_run"):
                        row["status"] += " (path mismatch)"
                    diff_counts[(lib_path, c["dtype"])] += row["differ"] or 0
                if not inputs_ok or wbad[wn]:
                    row["status"] += " (inputs differ)"
                counts[((lib_path, c["dtype"]), row["status"])] += 1
                rows.append(row)
                print(f"{name}: {row['status']}"
                      + (f" {row.get('differ')}/{row.get('compared')} stored elements differ"
                         if err is None else f" ({err})"), flush=True)
    bad = [r for r in rows if r["status"] not in ("equal", "equal (stored columns)", "not-modelled")]
    lines = ["# bitsandbytes matmul_4bit vs exmy gemm --b-format nf4|fp4 --compat bnb-cuda", "",
             f"capture: {caps} (bitsandbytes {man.get('bitsandbytes', '-')}, torch {man['torch']}, "
             f"device {man.get('device', '-')}, seed {man['seed']})", "",
             "equal = the sha256 of exmy's whole output equals bitsandbytes'; equal (stored columns): "
             "the SIMT/MMA outputs wider than 16384 elements are run on the rows of W of the stored "
             "columns (a column reads only its row) and compared there; the last column counts "
             "differing elements in the stored parts (whole outputs up to 16384 elements, else the "
             "first 256 columns).", "",
             "| path | dtype | status | cases | differing stored elements |", "|---|---|---|---|---|"]
    for ((p, dt), st), n in sorted(counts.items()):
        lines.append(f"| {p} | {dt} | {st} | {n} | {diff_counts[(p, dt)]} |")
    wrong_w = [w for w, v in wbad.items() if v]
    lines += ["", f"{len(rows)} comparisons, {len(bad)} not equal; weights re-quantized by exmy: "
              f"{len(wbad) - len(wrong_w)} of {len(wbad)} byte-identical to bitsandbytes'"
              + (f" (differ: {', '.join(wrong_w)})" if wrong_w else "") + "."]
    for r in bad[:60]:
        lines.append(f"- {r['case']}: {r['status']} {r.get('differ', '')}/{r.get('compared', '')} "
                     f"lib {r['lib_path']} exmy {r['exmy_path']} {r['error'] or ''}")
    lin = [r for r in rows if "accum_model" in r]
    if lin:
        nv = sum(1 for r in lin if r["verified"])
        lines += ["", "dequantize + F.linear GEMMs (%d; exmy verified %d, announced %d):" %
                  (len(lin), nv, len(lin) - nv), "",
                  "| case | M×N×K | bitsandbytes' GEMM kernel | exmy's model | verified | differ / compared |",
                  "|---|---|---|---|---|---|"]
        for r in lin:
            lines.append("| %s | %d×%d×%d%s | %s | `%s` | %s | %s / %s |" % (
                r["case"], r["M"], r["N"], r["K"], " +bias" if r["bias"] else "",
                (r.get("lib_gemm_kernel") or "-")[:70], r["accum_model"],
                "yes" if r["verified"] else "no", r.get("differ"), r.get("compared")))
    tmpf = os.path.join(a.out, "summary.md.tmp")
    open(tmpf, "w").write("\n".join(lines) + "\n")
    os.replace(tmpf, os.path.join(a.out, "summary.md"))
    tmpf = os.path.join(a.out, "summary.json.tmp")
    json.dump({"rows": rows, "weights_differ": wbad}, open(tmpf, "w"), indent=1)
    os.replace(tmpf, os.path.join(a.out, "summary.json"))
    print("\n".join(lines[6:]), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
