"""Turns bench_gpu_quant's JSON (and the torch baselines' JSON) into the markdown summary of
bench/results: bandwidth of every benchmark and its ratio to the device copy measured in the same
process, the targets of issue 3, and the torch ratios. Usage:
  gpu_quant_report.py BENCH.json TORCH.json OUT.md
"""
import json
import sys


def medians(bench):
    rows = {}
    for b in bench["benchmarks"]:
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        rows[name.split("/manual_time")[0]] = b
    return rows


def load(bench_path, torch_path):
    """The benchmark JSON, and the torch baselines' JSON (None where torch was not measured)."""
    bench = json.load(open(bench_path))
    try:
        torch = json.load(open(torch_path))
    except (OSError, ValueError):
        torch = None
    return bench, torch


def main():
    bench, torch = load(sys.argv[1], sys.argv[2])
    rows = medians(bench)
    copy = rows["copy/fp32"]["bytes_per_second"]
    tb = lambda r: r["bytes_per_second"] / 1e12
    lines = []
    ctx = bench["context"]
    lines.append(f"# GPU cast and quantization throughput ({ctx.get('device', '?')})\n")
    lines.append(f"Date {ctx.get('date', '?')}; {ctx.get('elements', '?')} elements per tensor; "
                 "median of the repetitions; bytes = each input read once + each output written "
                 "once; ratio = bandwidth / device-to-device copy bandwidth of the same run.\n")
    lines.append("| benchmark | time (us) | TB/s | vs copy |")
    lines.append("|---|---|---|---|")
    for name, r in rows.items():
        lines.append(f"| {name} | {r['real_time']:.0f} | {tb(r):.3f} | {r['bytes_per_second'] / copy:.2f} |")

    def ratio(a, b):
        return rows[a]["real_time"] / rows[b]["real_time"] if a in rows and b in rows else float("nan")

    lines.append("\n## Targets\n")
    lines.append("| target | measured | met |")
    lines.append("|---|---|---|")
    casts = [n for n in rows if n.startswith("cast/")]
    worst = min(rows[n]["bytes_per_second"] / copy for n in casts)
    lines.append(f"| every cast >= 90% of copy | worst {worst:.2f} | {'yes' if worst >= 0.9 else 'no'} |")
    for f in ["e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn", "e8m0fnu", "bf16", "fp16"]:
        c = ratio(f"cast/fp32/{f}/sr8", f"cast/fp32/{f}/rne")
        if c == c:
            lines.append(f"| sr:8 vs rne cost <= 10% ({f}) | {100 * (c - 1):+.1f}% | {'yes' if c <= 1.10 else 'no'} |")
    blk = rows.get("quant/block4096/fp32/dynamic")
    if blk:
        r = blk["bytes_per_second"] / copy
        lines.append(f"| block-wise codebook >= 80% of copy | {r:.2f} | {'yes' if r >= 0.8 else 'no'} |")
    if torch:
        tc = torch["copy_fp32"]["tbps"]
        c = rows.get("cast/fp32/e4m3fn/rne")
        if c and "cast_fp32_e4m3fn" in torch:
            s = tb(c) / torch["cast_fp32_e4m3fn"]["tbps"]
            lines.append(f"| fp32 -> e4m3fn rne cast vs torch .to(float8_e4m3fn) ({torch['cast_fp32_e4m3fn']['tbps']:.3f} TB/s) | {s:.2f}x | (anchor) |")
        t = rows.get("quant/tensor/fp32/e4m3fn/rne")
        if t:
            s = tb(t) / torch["tensorwise_fp8"]["tbps"]
            lines.append(f"| tensor-wise amax+scale+cast >= 2.5x torch ({torch['tensorwise_fp8']['tbps']:.3f} TB/s eff.) | {s:.2f}x | {'yes' if s >= 2.5 else 'no'} |")
        t = rows.get("quant/rowwise/fp16/int8/rne")
        if t:
            s = tb(t) / torch["rowwise_int8_fp16"]["tbps"]
            lines.append(f"| row-wise int8 of fp16 >= 5x torch eager ({torch['rowwise_int8_fp16']['tbps']:.3f} TB/s eff.) | {s:.2f}x | {'yes' if s >= 5 else 'no'} |")
        lines.append(f"\nTorch {torch['torch']} on {torch['device']}: copy {tc:.3f} TB/s, "
                     f"tensor-wise fp8 {torch['tensorwise_fp8']['tbps']:.3f} TB/s effective (5 B/elem), "
                     f"row-wise int8 {torch['rowwise_int8_fp16']['tbps']:.3f} TB/s effective (3 B/elem).")
    else:
        lines.append("\nTorch baselines: not measured (torch unavailable).")
    open(sys.argv[3], "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
