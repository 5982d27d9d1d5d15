"""Issue 15's GPU rows from one device call: bench_gpu_quant's JSON (with its device copy) and the
torch anchors measured in the same call (bench/gpu_quant_torch.py). Writes a Markdown summary and
a JSON of the rows (target, measured, met). Usage:
  gpu_cast_targets.py BENCH.json TORCH.json OUT.md OUT.json
Ratios: "of copy" = bytes moved per second / device-to-device copy bytes per second of the same
process (each input read once, each output written once); "x torch" = torch time / exmy time on
the same 2^28 elements; "sr cost" = sr:8 time / rne time - 1, same format and input.
"""
import json
import sys

from gpu_quant_report import load, medians  # one reading of the JSON for both reports


def main():
    bench, torch = load(sys.argv[1], sys.argv[2])
    rows = medians(bench)
    copy_bps = rows["copy/fp32"]["bytes_per_second"]
    of_copy = lambda n: rows[n]["bytes_per_second"] / copy_bps if n in rows else None
    us = lambda n: rows[n]["real_time"] if n in rows else None
    out = []

    def add(target, measured, met, detail=""):
        out.append({"target": target, "measured": measured, "met": met, "detail": detail})

    # fp32 -> e4m3fn rne against torch's cast in the same call.
    if torch and "cast_fp32_e4m3fn" in torch and us("cast/fp32/e4m3fn/rne"):
        t = torch["cast_fp32_e4m3fn"]["ms"] * 1e3
        r = t / us("cast/fp32/e4m3fn/rne")
        add("fp32 -> e4m3fn rne >= 1.0x torch .to(float8_e4m3fn)", f"{r:.3f}x",
            r >= 1.0, f"exmy {us('cast/fp32/e4m3fn/rne'):.1f} us, torch {t:.1f} us")
    # sr:8 cost over rne, every format with both rows.
    for n in sorted(rows):
        if n.endswith("/sr8") and n.startswith("cast/"):
            base = n[:-4] + "/rne"
            if base in rows:
                c = us(n) / us(base) - 1
                add(f"sr:8 <= +10% over rne ({n[5:-4]})", f"{100 * c:+.1f}%", c <= 0.10,
                    f"{us(n):.1f} vs {us(base):.1f} us")
    # e8m0fnu and every generic-format row against copy.
    for n in sorted(rows):
        if n.startswith("cast/fp32/") and n.split("/")[2] not in ("e4m3fn", "e5m2", "e4m3fnuz",
                                                                  "e2m1fn", "bf16", "fp16"):
            r = of_copy(n)
            add(f"{n} >= 0.85 of copy", f"{r:.3f}", r >= 0.85, f"{us(n):.1f} us")
    for n in ("cast/fp16/e4m3fn/rne", "cast/bf16/e4m3fn/rne", "cast/bf16/e4m3fn/sr8",
              "cast/fp16/e4m3fn/sr8", "cast/bf16/e4m3fn/rtz", "fakequant/fp32/e4m3fn/rne",
              "fakequant/bf16/e4m3fn/rne", "fakequant/fp32/e4m3fn/sr8"):
        if n in rows:
            r = of_copy(n)
            add(f"{n} >= 0.85 of copy", f"{r:.3f}", r >= 0.85, f"{us(n):.1f} us")
    if torch and "tensorwise_fp8" in torch and us("quant/tensor/fp32/e4m3fn/rne"):
        t = torch["tensorwise_fp8"]["ms"] * 1e3
        r = t / us("quant/tensor/fp32/e4m3fn/rne")
        add("tensor-wise amax+scale+cast >= 2.5x torch eager", f"{r:.2f}x", r >= 2.5,
            f"exmy {us('quant/tensor/fp32/e4m3fn/rne'):.1f} us, torch {t:.1f} us")
    ctx = bench["context"]
    head = [f"# Issue 15 GPU rows ({ctx.get('gpu', ctx.get('device', '?'))})", "",
            f"Date {ctx.get('date', '?')}; driver API {ctx.get('cuda_driver_api', '?')}, runtime "
            f"{ctx.get('cuda_runtime', '?')}; 2^28 elements; medians; copy "
            f"{copy_bps / 1e12:.3f} TB/s ({us('copy/fp32'):.1f} us for 2 GiB moved)."
            + (f" Torch {torch['torch']}: copy {torch['copy_fp32']['ms'] * 1e3:.1f} us." if torch else
               " Torch: not measured."), "",
            "| target | measured | met | detail |", "|---|---|---|---|"]
    lines = head + [f"| {o['target']} | {o['measured']} | {'yes' if o['met'] else '**no**'} | "
                    f"{o['detail']} |" for o in out]
    lines += ["", "## Every row", "", "| benchmark | time (us) | of copy |", "|---|---|---|"]
    lines += [f"| {n} | {r['real_time']:.1f} | {r['bytes_per_second'] / copy_bps:.3f} |"
              for n, r in rows.items()]
    open(sys.argv[3], "w").write("\n".join(lines) + "\n")
    json.dump({"context": ctx, "torch": torch, "targets": out}, open(sys.argv[4], "w"), indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
