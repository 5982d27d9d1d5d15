"""Launch records of cuBLAS GEMMs called through torch (issue 30; docs/SEMANTICS.md 15.6): which
kernel one torch.mm launches for an (input type, output type, M, N, K), its tile, its split-K
count S = gridDim.z and the reduction kernel that follows, read from torch.profiler's trace.
The kernel choice does not depend on the values, so zeros are multiplied (8,020 shapes in 10 s
on an H100).

Used by `tools/probe_gemm.py --launch` (exmy probe gemm --launch) and
bench/peers/gemm_launch_probe.py. Off the GPU it converts a launch capture into the profile's
compact form:

    python3 tools/gemm_launch.py --from LAUNCH.json [MORE.json ...] --out PROFILE.json [--source TEXT]
    python3 tools/gemm_launch.py --from LAUNCH.json [MORE.json ...] --base BASE_LAUNCH.json[.xz] \
        --base-profile NAME --out DELTA.json [--source TEXT]

Several --from captures of one GPU are merged first (merge_captures): the same device, driver,
torch, CUDA, cuBLAS and reduced-precision switches, and where two hold the same (input, output,
M, N, K), the same kernels, grids and blocks (else refused, naming the GEMM). An output named
"T+bias" is the GEMM with cuBLASLt's bias epilogue (torch's addmm / F.linear with a bias,
bench/peers/qlora_linear_launch_capture.py): records "T>T+bias".

The profile section (merged into PROFILE.json if it exists; its other members are kept):

    "launch": {"info": {device, driver, torch, cuda, cublas, ...},
               "kernels": [[family, key, reduce], ...],
               "records": {"IN>OUT": [M, N, K, kernel index, S, M, N, K, ...], ...}}

family: the kernel family named by FAMILIES below ("other" if none matches); key: the GEMM
kernel's name without its parameter list (the CUTLASS/xmma/nvjet name holds the tile); reduce:
the kernels that followed ("splitKreduce/f32", "splitKreduce/bf16", "splitKreduce/fp16",
"reduce_1Block", "xmma_split_k", joined by "+"), "" when none did. S is gridDim.z of the GEMM
kernel (for split-K kernels the number of parts; its meaning for other families is theirs),
except for dot_kernel, whose gridDim.z is the batch of outputs: there S is gridDim.x, the CTAs
that share one output's K (bench/results/2026-12-01-h200-gemm-simt.md), and for nvjet and the
sm90 xmma segment-k kernels: gridDim.x y z, the CTA count (they carry their split in x y: tiles x
parts).

With --base, the section is a delta against another GPU's capture of the same shapes (written
for the compiled-in profiles of a second GPU, docs/SEMANTICS.md 15.6): the records are those of
the shapes whose launch differs from the base's (any kernel's name, grid or block, so also a
split carried in the grid that the record's S does not show) or that the base lacks, "absent"
lists the base's (shape, output)s this capture does not hold, and "base" names the base:

    "launch": {"info": {...}, "base": {"device", "profile", "launches", "same", "differ",
               "absent", "new"}, "kernels": [...], "records": {...}, "absent": {"IN>OUT": [M,
               N, K, ...]}}

Every other (shape, output) of the base launched the same kernels with the same grids.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profiler_groups import kernel_groups  # noqa: E402

# Kernel families, first match wins (the names cuBLAS 13.1 launched for torch.mm on an H100;
# bench/results/2026-11-28-h100-gemm-launch.md). exmy's rule table (sim/gemm/launch_rules.cpp)
# is keyed by these names.
FAMILIES = [
    ("simt_sgemm", r"cutlass_\d+_simt_sgemm_"),
    ("s1688gemm", r"cutlass_75_tensorop_(?:bf16_|f16_)?s1688gemm_(?:bf16|f16)_"),
    ("s1688gemm_tf32", r"cutlass_80_tensorop_s1688gemm_\d"),
    ("s16816gemm", r"cutlass_\d+_tensorop_\w*s16816gemm_"),
    ("wmma", r"cutlass_\d+_wmma_tensorop_"),
    ("nvjet", r"nvjet_"),
    ("xmma_tf32", r"sm\d+_xmma_gemm_\w*tf32"),
    ("xmma_ffma", r"sm\d+_xmma_gemm_\w*ffma"),
    ("gemvx", r"gemvx::kernel"),
    ("gemv2", r"gemv2\w*_kernel"),
    ("gemmSN", r"gemmSN_\w+_kernel"),
    ("dot", r"\bdot_kernel<"),
]
TYPES = ("bf16", "fp16", "tf32", "fp32")
PARTIAL = {"float": "f32", "__nv_bfloat16": "bf16", "__half": "fp16"}


def outs_of(t):
    """Output types of an input type: 16-bit inputs give their own type and fp32."""
    return (t, "fp32") if t in ("bf16", "fp16") else ("fp32",)


def family_of(name):
    for fam, pat in FAMILIES:
        if re.search(pat, name):
            return fam
    return "other"


def key_of(name):
    """The kernel's name without its parameter list (CUTLASS: the Kernel2<...> argument)."""
    m = re.search(r"Kernel2?<(\w+)>", name)
    if m:
        return m.group(1)
    n = re.sub(r"^std::enable_if<[^>]*>::type ", "", name)
    n = re.sub(r"^void ", "", n)
    depth, end = 0, len(n)
    for i, ch in enumerate(n):  # up to the '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            end = i
            break
    return n[:end]


def reduce_of(name):
    m = re.search(r"splitKreduce_kernel<\d+, \d+, int, ([\w:]+),", name)
    if m:
        return "splitKreduce/" + PARTIAL.get(m.group(1), m.group(1))
    if "reduce_1Block_kernel" in name:
        return "reduce_1Block"
    if "split_k_kernel" in name:
        return "xmma_split_k"
    return key_of(name)


def record_of(kernels):
    """(family, key, reduce, S) of one output's kernels ([name, grid, block] each), or None."""
    if not kernels:
        return None
    name, grid, _block = kernels[0]
    S = int(grid[2]) if grid and len(grid) > 2 else 1
    if family_of(name) == "dot" and grid:
        S = int(grid[0])  # the CTAs along K (gridDim.z is the batch of outputs)
    if (family_of(name) == "nvjet" or "segment_k" in name) and grid and len(grid) > 2:
        # nvjet and the sm90 xmma segment-k kernels carry their split in the grid's x y (tiles
        # x parts): their S is the CTA count, which sim/gemm/launch_rules.cpp divides by the
        # tile count of M, N and the name.
        S = int(grid[0]) * int(grid[1]) * int(grid[2])
    return (family_of(name), key_of(name), "+".join(reduce_of(k[0]) for k in kernels[1:]), S)


# ---- on the GPU -------------------------------------------------------------------------------


def info_block():
    """Provenance of launch records: device, driver, torch, CUDA, cuBLAS, torch's reduced-
    precision split-K switches (they select the 16-bit partials of splitKreduce)."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import probe_gemm  # noqa: E402 (its cuBLAS version query)
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                      "--format=csv,noheader"], capture_output=True,
                                     text=True).stdout.strip(),
            "cublas": probe_gemm.cublas_version(),
            "allow_bf16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "allow_fp16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction}


def mm(t, a, b, out):
    """torch.mm(a, b.t()) as the captures call it (TF32 only for tf32; out_dtype for fp32
    outputs of 16-bit inputs)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = t == "tf32"
    try:
        if out == "fp32" and t in ("bf16", "fp16"):
            return torch.mm(a, b.t(), out_dtype=torch.float32)
        return torch.mm(a, b.t())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def launch_chunk(t, shapes):
    """[(kernels of out 0), (kernels of out 1)...] per shape: [name, grid, block] each (None
    where the trace held no kernel). Each torch.mm sits between two torch.cuda._sleep markers."""
    import torch
    from torch.profiler import profile, ProfilerActivity
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
          "fp32": torch.float32}[t]
    with tempfile.TemporaryDirectory() as td:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for M, N, K in shapes:
                a = torch.zeros(M, K, device="cuda", dtype=dt)
                b = torch.zeros(N, K, device="cuda", dtype=dt)
                for o in outs_of(t):
                    torch.cuda._sleep(10)
                    mm(t, a, b, o)
                torch.cuda._sleep(10)
            torch.cuda.synchronize()
        path = os.path.join(td, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            ev = json.load(f)["traceEvents"]
    groups = kernel_groups(ev)
    # Per shape: the zeros' fill kernels come before the first marker (shape 0) or sit in the
    # group after the previous shape's last marker, which is dropped (it precedes the next
    # shape's first marker and holds only fills).
    res = []
    gi = 0
    for _ in shapes:
        per = []
        for _o in range(len(outs_of(t))):
            per.append(groups[gi] if gi < len(groups) else None)
            gi += 1
        gi += 1
        res.append(per)
    return res


def capture(types_shapes, progress=None):
    """{type: [{"M", "N", "K", "kernels": {out: [[name, grid, block], ...]}}]} for
    {type: [(M, N, K), ...]}, 400 shapes per profiler session."""
    result = {}
    for t, shapes in types_shapes.items():
        rows = []
        for c0 in range(0, len(shapes), 400):
            chunk = [tuple(s) for s in shapes[c0:c0 + 400]]
            for s, per in zip(chunk, launch_chunk(t, chunk)):
                rows.append({"M": s[0], "N": s[1], "K": s[2],
                             "kernels": dict(zip(outs_of(t), per))})
            if progress:
                progress(t, len(rows), len(shapes))
        result[t] = rows
    return result


# ---- the profile's compact form ---------------------------------------------------------------


def compact(types_rows, info):
    """The profile's "launch" section for {type: rows} (rows as capture() returns them)."""
    kernels, index, records = [], {}, {}
    for t, rows in types_rows.items():
        for r in rows:
            for o, ks in r["kernels"].items():
                rec = record_of(ks)
                if rec is None:
                    continue
                k = rec[:3]
                if k not in index:
                    index[k] = len(kernels)
                    kernels.append(list(k))
                records.setdefault("%s>%s" % (t, o), []).extend(
                    [r["M"], r["N"], r["K"], index[k], rec[3]])
    return {"info": info, "kernels": kernels, "records": records}


def expand(section):
    """{(in, out, M, N, K): (family, key, reduce, S)} of a "launch" section."""
    out = {}
    ks = section["kernels"]
    for io_key, flat in section["records"].items():
        t, o = io_key.split(">")
        for i in range(0, len(flat), 5):
            M, N, K, k, S = flat[i:i + 5]
            out[(t, o, M, N, K)] = tuple(ks[k]) + (S,)
    return out


PROVENANCE = ("device", "driver", "torch", "cuda", "cublas")


def merge(section, new):
    """Records of `new` added to `section` (the same shape: replaced). Refuses sections of a
    different device, driver, torch, CUDA or cuBLAS: one launch section holds one provenance."""
    if section is None:
        return new
    a, b = section.get("info", {}), new.get("info", {})
    diff = [k for k in PROVENANCE if a.get(k) != b.get(k)]
    if diff:
        raise ValueError("launch records of a different %s (%s) than the profile's (%s); write "
                         "them to another profile" %
                         ("/".join(diff), ", ".join(str(b.get(k)) for k in diff),
                          ", ".join(str(a.get(k)) for k in diff)))
    recs = expand(section)
    recs.update(expand(new))
    info = dict(a)
    info.update(b)
    by = {}
    for (t, o, M, N, K), v in recs.items():
        by.setdefault(t, {}).setdefault((M, N, K), {})[o] = v
    kernels, index, records = [], {}, {}
    for t in sorted(by):
        for (M, N, K) in sorted(by[t]):
            for o, (fam, key, red, S) in sorted(by[t][(M, N, K)].items()):
                k = (fam, key, red)
                if k not in index:
                    index[k] = len(kernels)
                    kernels.append(list(k))
                records.setdefault("%s>%s" % (t, o), []).extend([M, N, K, index[k], S])
    return {"info": info, "kernels": kernels, "records": records}


def write_profile(path, section):
    """Merges `section` into the profile at `path` (a new profile if none), atomically; the
    compact arrays on one line each."""
    prof = {}
    if os.path.exists(path):
        with open(path) as f:
            prof = json.load(f)
    merged = merge(prof.get("launch"), section)
    prof.setdefault("profile", "cublas-sm90")
    prof["launch"] = merged
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(dumps_compact(prof))
    os.replace(tmp, path)
    return merged


def dumps_compact(prof):
    """JSON with one line per kernel and per record list (readable, and small to embed)."""
    launch = prof.get("launch")
    rest = {k: v for k, v in prof.items() if k != "launch"}
    head = json.dumps(rest, indent=1)
    if launch is None:
        return head + "\n"
    lines = ['  "info": ' + json.dumps(launch["info"], sort_keys=True) + ",",
             '  "kernels": [']
    lines += ["   " + json.dumps(k) + ("," if i + 1 < len(launch["kernels"]) else "")
              for i, k in enumerate(launch["kernels"])]
    lines += ["  ],", '  "records": {']
    keys = sorted(launch["records"])
    lines += ['   "%s": %s%s' % (k, json.dumps(launch["records"][k], separators=(",", ":")),
                                 "," if i + 1 < len(keys) else "")
              for i, k in enumerate(keys)]
    lines += ["  }"]
    body = '"launch": {\n' + "\n".join(lines) + "\n }"
    if rest:
        return head[:-2] + ",\n " + body + "\n}\n"
    return "{\n " + body + "\n}\n"


def open_capture(path):
    """A launch capture (gemm_launch_probe.py's launch.json, or .json.xz)."""
    if path.endswith(".xz"):
        import lzma
        with lzma.open(path, "rt") as f:
            return json.load(f)
    with open(path) as f:
        return json.load(f)


def launches(types_rows):
    """{(in, out, M, N, K): the kernels as captured ([name, grid, block] each)}."""
    out = {}
    for t, rows in types_rows.items():
        for r in rows:
            for o, ks in r["kernels"].items():
                if ks:
                    out[(t, o, r["M"], r["N"], r["K"])] = ks
    return out


MERGE_SAME = PROVENANCE + ("allow_bf16_reduced_precision_reduction",
                           "allow_fp16_reduced_precision_reduction")


def merge_captures(caps, names):
    """One capture of the rows of several captures of one GPU (the module docstring). Its info
    is the first capture's, with "merged" naming the captures when there are several."""
    if len(caps) == 1:
        return caps[0]
    first = caps[0]["info"]
    rows = {}
    for cap, name in zip(caps, names):
        diff = [k for k in MERGE_SAME if cap["info"].get(k) != first.get(k)]
        if diff:
            raise ValueError("%s: %s differs from %s's (%s against %s)" % (
                name, "/".join(diff), names[0], ", ".join(str(cap["info"].get(k)) for k in diff),
                ", ".join(str(first.get(k)) for k in diff)))
        for (t, o, M, N, K), ks in launches(cap["types"]).items():
            k = (t, o, M, N, K)
            if k in rows and rows[k][0] != ks:
                raise ValueError("%s>%s %dx%dx%d: %s and %s recorded different launches" %
                                 (t, o, M, N, K, rows[k][1], name))
            rows.setdefault(k, (ks, name))
    by = {}
    for (t, o, M, N, K), (ks, _) in sorted(rows.items()):
        by.setdefault(t, {}).setdefault((M, N, K), {})[o] = ks
    info = dict(first)
    info["merged"] = " + ".join(names)
    return {"info": info, "types": {t: [{"M": s[0], "N": s[1], "K": s[2], "kernels": v}
                                        for s, v in sorted(d.items())]
                                    for t, d in sorted(by.items())}}


def delta(cap, base_cap, info, base_profile):
    """The delta section of capture `cap` against `base_cap` (module docstring)."""
    mine, theirs = launches(cap["types"]), launches(base_cap["types"])
    differ = {k for k in mine if theirs.get(k) != mine[k]}
    absent = sorted(k for k in theirs if k not in mine)
    rows = {}
    for (t, o, M, N, K) in sorted(differ):
        rows.setdefault(t, {}).setdefault((M, N, K), {})[o] = mine[(t, o, M, N, K)]
    sec = compact({t: [{"M": s[0], "N": s[1], "K": s[2], "kernels": ks}
                       for s, ks in sorted(v.items())] for t, v in sorted(rows.items())}, info)
    ab = {}
    for (t, o, M, N, K) in absent:
        ab.setdefault("%s>%s" % (t, o), []).extend([M, N, K])
    return {"info": info,
            "base": {"device": base_cap["info"]["device"], "profile": base_profile,
                     "launches": len(theirs), "same": len(theirs) - len(absent) -
                     len([k for k in differ if k in theirs]),
                     "differ": len([k for k in differ if k in theirs]),
                     "absent": len(absent), "new": len([k for k in differ if k not in theirs])},
            "kernels": sec["kernels"], "records": sec["records"], "absent": ab}


def dumps_delta(prof):
    """A delta profile: like dumps_compact, with the base and absent members."""
    launch = prof["launch"]
    body = {k: v for k, v in launch.items() if k not in ("base", "absent")}
    text = dumps_compact({"profile": prof["profile"], "launch": body})
    extra = '  "base": ' + json.dumps(launch["base"], sort_keys=True) + ",\n"
    text = text.replace('  "kernels": [', extra + '  "kernels": [', 1)
    ab = '  "absent": ' + json.dumps(launch["absent"], sort_keys=True,
                                     separators=(",", ":")) + "\n }"
    i = text.rindex("  }\n }")
    return text[:i] + "  },\n" + ab + text[i + len("  }\n }"):]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="src", required=True, nargs="+",
                   help="launch capture(s) of one GPU (gemm_launch_probe.py's launch.json; "
                   "several are merged)")
    p.add_argument("--out", required=True, help="profile to write or merge into")
    p.add_argument("--source", help="where the capture came from (kept in info)")
    p.add_argument("--base", help="another GPU's launch capture of the same shapes: write a "
                   "delta against it (a new --out, not merged)")
    p.add_argument("--base-profile", help="with --base: the profile holding the base's records "
                   "(its file name, kept in base.profile)")
    args = p.parse_args()
    try:
        cap = merge_captures([open_capture(f) for f in args.src], args.src)
    except ValueError as e:
        sys.exit("%s: %s" % (args.out, e))
    info = dict(cap["info"])
    if args.source:
        info["source"] = args.source
    if args.base:
        if not args.base_profile:
            sys.exit("--base needs --base-profile (the base records' profile file name)")
        base = open_capture(args.base)
        if base["info"].get("device") == info.get("device"):
            sys.exit("--base: the base capture is of the same device (%s)" % info.get("device"))
        sec = delta(cap, base, info, args.base_profile)
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(dumps_delta({"profile": "cublas-sm90", "launch": sec}))
        os.replace(tmp, args.out)
        print("%s: delta against %s: %s" % (args.out, sec["base"]["device"],
                                            json.dumps(sec["base"], sort_keys=True)))
        return
    try:
        sec = write_profile(args.out, compact(cap["types"], info))
    except ValueError as e:
        sys.exit("%s: %s" % (args.out, e))
    print("%s: %d kernels, %s" % (args.out, len(sec["kernels"]),
                                 ", ".join("%s %d" % (k, len(v) // 5)
                                           for k, v in sorted(sec["records"].items()))))


if __name__ == "__main__":
    main()
