"""exmy's NF4/FP4 quantizer against bitsandbytes' quantize_4bit, from one device call (issue 33:
exmy >= 3x bitsandbytes and >= 0.85 of copy-equivalent bandwidth, same call).

    python3 bench/peers/bnb4_vs_exmy_speed.py --exmy qbench.json --bnb bnb4_speed.json --out t.md

--exmy: bench_gpu_quant's Google Benchmark JSON (--benchmark_filter='copy/fp32|quant/bnb4', with
repetitions: the median aggregate is used, else the mean, else the single run); --bnb:
bench/peers/bnb4_speed.py's JSON. Both count a case's bytes alike (input + n/2 codes + 4 n/block
absmax, 2^28 elements) and time their own copy of the fp32 tensor (read + write) in the same
process, so each side's bandwidth is divided by its own copy's; the speedup is bitsandbytes' time
over exmy's (= exmy's bandwidth over bitsandbytes'). Exits 1 when a case is missing on one side or
the element counts differ.
"""
import argparse
import json
import os
import sys


def exmy_rates(path):
    with open(path) as f:
        doc = json.load(f)
    best = {}
    rank = {"median": 0, "mean": 1, None: 2}
    for b in doc["benchmarks"]:
        agg = b.get("aggregate_name")
        if agg not in rank:
            continue
        name = b.get("run_name", b["name"])
        if name not in best or rank[agg] < best[name][0]:
            best[name] = (rank[agg], b["bytes_per_second"], b.get("elements"))
    return {k: (v[1], v[2]) for k, v in best.items()}, doc.get("context", {})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exmy", required=True)
    p.add_argument("--bnb", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    ex, ctx = exmy_rates(a.exmy)
    with open(a.bnb) as f:
        bn = json.load(f)
    if "copy/fp32" not in ex:
        sys.exit(f"{a.exmy}: no copy/fp32 benchmark (run bench_gpu_quant with it in the filter)")
    ex_copy, n_ex = ex["copy/fp32"]
    if n_ex is not None and int(n_ex) != bn["n"]:
        sys.exit(f"element counts differ: exmy {int(n_ex)}, bitsandbytes {bn['n']}")
    bn_copy = bn["copy"]["bytes_per_second"]
    rows = [
        "| case | exmy GB/s | exmy / its copy | bitsandbytes GB/s | bitsandbytes / its copy | "
        "bitsandbytes time / exmy time |",
        "|---|---|---|---|---|---|",
    ]
    worst = None
    missing = []
    for c in bn["cases"]:
        if c["name"] not in ex:
            missing.append(c["name"])
            continue
        e_bw = ex[c["name"]][0]
        speed = e_bw / c["bytes_per_second"]
        worst = speed if worst is None else min(worst, speed)
        rows.append(f"| `{c['name']}` | {e_bw / 1e9:.0f} | {e_bw / ex_copy:.3f} | "
                    f"{c['bytes_per_second'] / 1e9:.0f} | {c['bytes_per_second'] / bn_copy:.3f} | "
                    f"{speed:.2f} |")
    head = (f"Device {bn['device']}, torch {bn['torch']} (CUDA {bn['cuda']}), bitsandbytes "
            f"{bn['bitsandbytes']}; exmy bench host {ctx.get('host_name', '?')}. Copies: exmy "
            f"{ex_copy / 1e9:.0f} GB/s, torch {bn_copy / 1e9:.0f} GB/s. Smallest speedup: "
            f"{worst:.2f}x.\n\n" if worst is not None else "")
    text = head + "\n".join(rows) + "\n"
    with open(a.out + ".tmp", "w") as f:
        f.write(text)
    os.replace(a.out + ".tmp", a.out)
    if missing:
        sys.exit("cases missing from the exmy JSON: " + ", ".join(missing))


if __name__ == "__main__":
    main()
