"""Single-thread CPU casts: exmy against torch, ml_dtypes and CPFloat in ONE process (issue 15).

Rows (fp32 inputs are normal(0, 100), clamped to +-448 for the e4m3fn targets because torch's
cast does not saturate; the 16-bit inputs are those values rounded to bf16 / fp16):
  fp32 -> e4m3fn rne    exmy.cast | torch .to(float8_e4m3fn) | ml_dtypes astype | CPFloat E4M3 rne
  fp32 -> e4m3fn sr:8   exmy.cast(round="sr:8")              | CPFloat E4M3 SR (mode 5, pcg32)
  fp32 -> bf16 rne      exmy.cast | torch .to(bfloat16)      | ml_dtypes astype | CPFloat bf16 rne
  fp32 -> fp16 rne      exmy.cast | torch .to(float16)       | numpy astype(float16)
  bf16 -> e4m3fn rne    exmy.cast | torch bf16 .to(float8_e4m3fn) | ml_dtypes astype
  fp16 -> e4m3fn rne    exmy.cast | torch fp16 .to(float8_e4m3fn) | ml_dtypes astype
at 2^20, 2^22 and 2^26 elements, with a numpy copy of the fp32 input (x.copy(), allocating as the
casts do) as the memory baseline. Every contender allocates its output per call (CPFloat: a new
fp32 array, 4 bytes per element where exmy writes 1 or 2); CPFloat_prealloc is CPFloat writing
into one preallocated array, as bench_native_cast times both libraries.
Contenders are timed round-robin, one call each per repetition, after a warm-up: the median of
--reps (>= 7) calls each at 2^24 and above, proportionally more below (at most 63), so load
drifting on a shared machine hits all of them alike.
Every row's outputs are compared bit for bit: exmy against torch and ml_dtypes (must be equal),
against CPFloat's values where the formats agree (CPFloat's E4M3 has 464 <= |x| < 480 -> 480;
inputs here stay within +-448). Threads: OMP_NUM_THREADS=1 and torch.set_num_threads(1) before
anything runs; exmy.cast(threads=1) when the package takes a thread count.

CPFloat comes from build-cpu/bench/libexmy_cpfloat_peer.so (built when the benchmark build finds
CPFloat: scripts/fetch-cpfloat.sh); without it the CPFloat columns are skipped with a message.

Usage: python3 bench/peers/cpu_cast_vs_peers.py [--sizes 20,22,26] [--reps 7]
       [--cpfloat-lib PATH] [--json OUT.json] [--md OUT.md]
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"  # before torch or exmy load an OpenMP runtime

import argparse  # noqa: E402
import ctypes  # noqa: E402
import datetime  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or platform.machine()


def git_commit():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class CPFloat:
    """ctypes binding of bench/common/cpfloat_peer.h."""
    E4M3_RNE, E4M3_SR, BF16_RNE = 0, 1, 2

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.exmy_cpf_new.restype = ctypes.c_void_p
        self.lib.exmy_cpf_new.argtypes = [ctypes.c_int]
        self.lib.exmy_cpf_round.restype = ctypes.c_int
        self.lib.exmy_cpf_round.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_size_t]
        self.lib.exmy_cpf_rng.restype = ctypes.c_char_p
        self.rng = self.lib.exmy_cpf_rng().decode()
        self.opts = {}

    def fn(self, target, x, out=None):
        """A call of CPFloat on x: into `out` when given, else into a new fp32 array per call
        (as exmy.cast, torch and ml_dtypes return a new array)."""
        if target not in self.opts:
            self.opts[target] = self.lib.exmy_cpf_new(target)
            if not self.opts[target]:
                raise RuntimeError(f"CPFloat rejected target {target}")
        o, xp, n = self.opts[target], x.ctypes.data, x.size

        def run():
            y = np.empty(n, np.float32) if out is None else out
            rc = self.lib.exmy_cpf_round(o, y.ctypes.data, xp, n)
            if rc != 0:
                raise RuntimeError(f"CPFloat returned {rc}")
            return y
        return run


def cpfloat_source_commit():
    p = ROOT / "build-deps" / "cpfloat" / ".source-commit"
    return p.read_text().strip()[:12] if p.exists() else None


def time_round_robin(fns, reps):
    """{name: median seconds}: one warm-up call each, then `reps` rounds of one call each."""
    for f in fns.values():
        f()
    ts = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            ts[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in ts.items()}


def bits(a):
    """The raw bits of a numpy / torch array as an unsigned integer numpy array."""
    if hasattr(a, "detach"):  # torch
        import torch
        a = a.detach().contiguous()
        if a.element_size() == 1:
            return a.view(torch.uint8).numpy()
        return a.view(torch.int16).numpy().view(np.uint16)
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def differences(ours, theirs, x, label, log):
    """Number of elements whose bits differ; prints the first few."""
    o, t = bits(ours), bits(theirs)
    d = np.flatnonzero(o != t)
    for i in d[:5]:
        log(f"    {label} differs at {i}: x={float(x[i])!r} exmy=0x{int(o[i]):x} peer=0x{int(t[i]):x}")
    return int(d.size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20,22,26", help="log2 element counts")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cpfloat-lib", default=str(ROOT / "build-cpu" / "bench" /
                                                 "libexmy_cpfloat_peer.so"))
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args()
    if a.reps < 7:
        ap.error("--reps: at least 7")
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731

    import torch
    import ml_dtypes
    import exmy
    torch.set_num_threads(1)
    cast_kw = {}
    if "threads" in inspect.signature(exmy.cast).parameters:
        cast_kw["threads"] = 1
        exmy_threads = "exmy.cast(threads=1)"
    else:
        exmy_threads = "OMP_NUM_THREADS=1 (exmy.cast takes no thread count)"

    cpf = None
    if pathlib.Path(a.cpfloat_lib).exists():
        cpf = CPFloat(a.cpfloat_lib)
    else:
        log(f"CPFloat not found: {a.cpfloat_lib} (run scripts/fetch-cpfloat.sh, then build "
            "build-cpu with EXMY_BENCH=ON); CPFloat columns skipped")

    def ecast(x, fmt, **kw):
        return lambda: exmy.cast(x, fmt, **kw, **cast_kw)

    rows = []
    for lg in (int(s) for s in a.sizes.split(",")):
        n = 1 << lg
        g = torch.Generator().manual_seed(20261126)
        xt = torch.randn(n, generator=g) * 100
        xc = xt.clamp(-448, 448)
        xn, xcn = xt.numpy(), xc.numpy()
        xb = xc.to(torch.bfloat16)
        xh = xc.to(torch.float16)
        xbn = xb.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        xhn = xh.numpy()
        cpf_out = np.empty(n, np.float32) if cpf else None
        copy_s = time_round_robin({"copy": lambda: xn.copy()}, a.reps)["copy"]
        log(f"2^{lg}: numpy copy {n / copy_s / 1e6:.0f} M elem/s")

        cases = [
            ("fp32 -> e4m3fn rne", "e4m3fn", xcn, {
                "exmy": ecast(xcn, "e4m3fn"),
                "torch": lambda: xc.to(torch.float8_e4m3fn),
                "ml_dtypes": lambda: xcn.astype(ml_dtypes.float8_e4m3fn),
                **({"CPFloat": cpf.fn(CPFloat.E4M3_RNE, xcn),
                   "CPFloat_prealloc": cpf.fn(CPFloat.E4M3_RNE, xcn, cpf_out)} if cpf else {})}),
            ("fp32 -> e4m3fn sr:8", "e4m3fn", xcn, {
                "exmy": ecast(xcn, "e4m3fn", round="sr:8", seed=1),
                **({"CPFloat": cpf.fn(CPFloat.E4M3_SR, xcn),
                   "CPFloat_prealloc": cpf.fn(CPFloat.E4M3_SR, xcn, cpf_out)} if cpf else {})}),
            ("fp32 -> bf16 rne", "bf16", xn, {
                "exmy": ecast(xn, "bf16"),
                "torch": lambda: xt.to(torch.bfloat16),
                "ml_dtypes": lambda: xn.astype(ml_dtypes.bfloat16),
                **({"CPFloat": cpf.fn(CPFloat.BF16_RNE, xn),
                   "CPFloat_prealloc": cpf.fn(CPFloat.BF16_RNE, xn, cpf_out)} if cpf else {})}),
            ("fp32 -> fp16 rne", "fp16", xn, {
                "exmy": ecast(xn, "fp16"),
                "torch": lambda: xt.to(torch.float16),
                "numpy": lambda: xn.astype(np.float16)}),
            ("bf16 -> e4m3fn rne", "e4m3fn", xcn, {
                "exmy": ecast(xb, "e4m3fn"),
                "torch": lambda: xb.to(torch.float8_e4m3fn),
                "ml_dtypes": lambda: xbn.astype(ml_dtypes.float8_e4m3fn)}),
            ("fp16 -> e4m3fn rne", "e4m3fn", xcn, {
                "exmy": ecast(xhn, "e4m3fn"),
                "torch": lambda: xh.to(torch.float8_e4m3fn),
                "ml_dtypes": lambda: xhn.astype(ml_dtypes.float8_e4m3fn)}),
        ]
        reps = min(63, a.reps * max(1, (1 << 24) >> lg))  # small sizes: more calls, same cost
        for name, fmt, xref, fns in cases:
            med = time_round_robin(fns, reps)
            ours = fns["exmy"]()
            row = {"row": name, "log2n": lg, "n": n, "reps": reps,
                   "copy_Mps": n / copy_s / 1e6,
                   "Mps": {k: n / t / 1e6 for k, t in med.items()},
                   "exmy_over": {k: med[k] / med["exmy"] for k in med if k != "exmy"},
                   "exmy_over_copy": copy_s / med["exmy"], "bits_differ": {}}
            for k, f in fns.items():
                if k == "exmy" or "sr:" in name:
                    continue
                theirs = f()
                if k == "CPFloat_prealloc":
                    continue
                if k == "CPFloat":  # values: compare exmy's decoded codes
                    mine = exmy.decode(ours, fmt)
                    row["bits_differ"][k] = differences(mine, theirs, xref, f"{name} vs {k}", log)
                else:
                    row["bits_differ"][k] = differences(ours, theirs, xref, f"{name} vs {k}", log)
            if "sr:" in name and cpf:  # both results among the two neighbours of x
                lo = exmy.decode(exmy.cast(xcn, fmt, round="rdn"), fmt)
                hi = exmy.decode(exmy.cast(xcn, fmt, round="rup"), fmt)
                mine, theirs = exmy.decode(ours, fmt), fns["CPFloat"]()
                row["sr_off_neighbours"] = {
                    "exmy": int(np.count_nonzero((mine != lo) & (mine != hi))),
                    "CPFloat": int(np.count_nonzero((theirs != lo) & (theirs != hi)))}
            rows.append(row)
            peers = "  ".join(f"{k} {v:.0f}" for k, v in row["Mps"].items() if k != "exmy")
            log(f"  {name:22s} exmy {row['Mps']['exmy']:7.0f} M/s | {peers} | "
                + " ".join(f"/{k} {v:.2f}x" for k, v in row["exmy_over"].items())
                + f" | differ {row['bits_differ']}")

    out = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": cpu_model(), "cores": os.cpu_count(), "threads": 1,
        "exmy_threads": exmy_threads,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
                     "exmy": f"{exmy.__version__} ({getattr(exmy, 'git_sha', '?')})",
                     "repo_commit": git_commit(),
                     "cpfloat": (f"commit {cpfloat_source_commit()}, rng {cpf.rng}" if cpf
                                 else None)},
        "rows": rows}
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    md = markdown(out)
    if a.md:
        pathlib.Path(a.md).write_text(md)
    print(md)


def markdown(out):
    peers = ["torch", "ml_dtypes", "numpy", "CPFloat", "CPFloat_prealloc"]
    lines = [f"Machine: {out['machine']} ({out['cores']} cores), 1 thread ({out['exmy_threads']}); "
             f"{out['date']}",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in out["versions"].items() if v), "",
             "M elem/s (median); ratios are exmy's speed over the peer's in the same run; "
             "`=` all bits equal, else the count of differing elements.", "",
             "| row | n | copy | exmy | " + " | ".join(peers) + " | exmy/copy | "
             + " | ".join(f"exmy/{p}" for p in peers) + " | bits |",
             "|---|---|---|---|" + "---|" * len(peers) + "---|" + "---|" * len(peers) + "---|"]
    for r in out["rows"]:
        m, o = r["Mps"], r["exmy_over"]
        bits = ", ".join(f"{k} {'=' if v == 0 else v}" for k, v in r["bits_differ"].items())
        if "sr_off_neighbours" in r:
            bits = "off neighbours: " + ", ".join(f"{k} {v}" for k, v in
                                                   r["sr_off_neighbours"].items())
        lines.append(
            f"| {r['row']} | 2^{r['log2n']} | {r['copy_Mps']:.0f} | {m['exmy']:.0f} | "
            + " | ".join(f"{m[p]:.0f}" if p in m else "—" for p in peers)
            + f" | {r['exmy_over_copy']:.2f} | "
            + " | ".join(f"{o[p]:.2f}" if p in o else "—" for p in peers) + f" | {bits} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
