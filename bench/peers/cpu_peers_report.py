"""Issue 15's CPU rows from the three same-run measurements, as one JSON + one Markdown file.

Inputs (each written by bench/peers/cpu_peers_all.sh):
  --native  Google Benchmark JSON of build-cpu/bench/bench_native_cast (medians of repetitions)
  --peers   JSON of bench/peers/cpu_cast_vs_peers.py (exmy, torch, ml_dtypes, CPFloat; 1 thread)
  --cli     JSON of bench/peers/cpu_cli_vs_copy.py (whole-process CLI against cp)
  --before  optional directory holding native.json / peers.json / cli.json of an earlier tree,
            shown beside the new numbers (its ratios are its own run's)
Usage: python3 bench/peers/cpu_peers_report.py --native N.json --peers P.json --cli C.json
       [--before DIR] [--title T] [--notes NOTES.md] --md OUT.md --json OUT.json
"""
import argparse
import json
import pathlib


def native_rates(path):
    """{benchmark name: items/s} from Google Benchmark JSON (median aggregate when present)."""
    d = json.loads(pathlib.Path(path).read_text())
    rates, single = {}, {}
    for b in d["benchmarks"]:
        if "items_per_second" not in b:
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                rates[b["run_name"]] = b["items_per_second"]
        else:
            single[b.get("run_name", b["name"])] = b["items_per_second"]
    for k, v in single.items():
        rates.setdefault(k, v)
    return d.get("context", {}), rates


def peer_row(peers, row, log2n):
    for r in peers["rows"]:
        if r["row"] == row and r["log2n"] == log2n:
            return r
    return None


def verdict(x, target):
    return "met" if x is not None and x >= target else "not met"


def fmt(x, nd=2):
    return "—" if x is None else f"{x:.{nd}f}"


def targets(native, peers, cli):
    """[(issue row, measurement, exmy M/s, peer M/s, ratio, target, verdict)]."""
    out = []
    _, nr = native
    sizes = sorted({r["log2n"] for r in peers["rows"]})
    for lg in sizes:
        r = peer_row(peers, "fp32 -> e4m3fn rne", lg)
        if r and "torch" in r["exmy_over"]:
            out.append(("CPU fp32 -> e4m3fn rne, 1 thread", f"exmy.cast vs torch .to, 2^{lg}",
                        r["Mps"]["exmy"], r["Mps"]["torch"], r["exmy_over"]["torch"], 1.0))
    for lg in (20, 24):
        a = nr.get(f"BM_array_fp32_to_8bit/e4m3fn_sr8/{lg}")
        b = nr.get(f"BM_cpfloat/e4m3_sr/{lg}")
        if a and b:
            out.append(("CPU sr:8, 1 thread", f"C++ fast::cast_to_codes vs CPFloat SR, 2^{lg}",
                        a / 1e6, b / 1e6, a / b, 3.0))
    for lg in sizes:
        r = peer_row(peers, "fp32 -> e4m3fn sr:8", lg)
        for k, how in (("CPFloat", "both allocate"), ("CPFloat_prealloc", "CPFloat preallocated")):
            if r and k in r["exmy_over"]:
                out.append(("CPU sr:8, 1 thread",
                            f"exmy.cast vs CPFloat SR (ctypes; {how}), 2^{lg}",
                            r["Mps"]["exmy"], r["Mps"][k], r["exmy_over"][k], 3.0))
    for lg in sizes:
        r = peer_row(peers, "fp32 -> bf16 rne", lg)
        if r and "torch" in r["exmy_over"]:
            out.append(("CPU fp32 -> bf16 rne, 1 thread", f"exmy.cast vs torch .to, 2^{lg}",
                        r["Mps"]["exmy"], r["Mps"]["torch"], r["exmy_over"]["torch"], 1.0))
    m = cli["Melem_per_s"]
    out.append(("exmy cast e4m3fn --in X --out Y, 2^26, whole process",
                f"exmy (default threads, {cli['cpu_count']} cores) vs cp", m["exmy"], m["cp"],
                cli["exmy_over_copy"], 0.5))
    out.append(("exmy cast e4m3fn --in X --out Y, 2^26, whole process",
                "exmy OMP_NUM_THREADS=1 vs cp", m["exmy_1thread"], m["cp"],
                cli["exmy_1thread_over_copy"], 0.5))
    if "exmy_passive" in m:
        out.append(("exmy cast e4m3fn --in X --out Y, 2^26, whole process",
                    "exmy OMP_WAIT_POLICY=passive vs cp", m["exmy_passive"], m["cp"],
                    cli["exmy_passive_over_copy"], 0.5))
    return [(*t, verdict(t[4], t[5])) for t in out]


def native_table(native):
    ctx, nr = native
    names = [
        ("memcpy", "BM_memcpy_baseline"),
        ("exmy fp32 -> e4m3fn rne (fast::cast_to_codes)", "BM_array_fp32_to_8bit/e4m3fn_rne"),
        ("exmy fp32 -> e4m3fn sr:8 (fast::cast_to_codes)", "BM_array_fp32_to_8bit/e4m3fn_sr8"),
        ("exmy fp32 -> bf16 rne (fast::cast_to_codes)", "BM_array_fp32_to_16bit/bf16_rne"),
        ("exmy fp32 -> fp16 rne (fast::cast_to_codes)", "BM_array_fp32_to_16bit/fp16_rne"),
        ("exmy bf16 -> e4m3fn rne (fast::cast_to_codes)", "BM_array_16bit_to_e4m3fn/bf16"),
        ("exmy fp16 -> e4m3fn rne (fast::cast_to_codes)", "BM_array_16bit_to_e4m3fn/fp16"),
        ("exmy fp32 -> e4m3fn rne, table path (fast::cast_fp32_to_u8)",
         "BM_fast_fp32_to_e4m3fn_rne"),
        ("exmy fp32 -> e4m3fn sr:8, table path (fast::cast_fp32_to_u8)",
         "BM_fast_fp32_to_e4m3fn_sr8"),
        ("CPFloat E4M3 rne", "BM_cpfloat/e4m3_rne"),
        ("CPFloat E4M3 SR (proportional)", "BM_cpfloat/e4m3_sr"),
        ("CPFloat bf16 rne", "BM_cpfloat/bf16_rne"),
    ]
    lines = ["| row | 2^20 M/s | over memcpy | 2^24 M/s | over memcpy |", "|---|---|---|---|---|"]
    for label, key in names:
        cells = []
        for lg in (20, 24):
            v, m = nr.get(f"{key}/{lg}"), nr.get(f"BM_memcpy_baseline/{lg}")
            cells += [fmt(v / 1e6 if v else None, 0), fmt(v / m if v and m else None, 3)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    ratios = []
    for lg in (20, 24):
        def r(a, b):
            x, y = nr.get(f"{a}/{lg}"), nr.get(f"{b}/{lg}")
            return x / y if x and y else None
        ratios.append(
            f"2^{lg}: e4m3fn rne / CPFloat rne "
            f"{fmt(r('BM_array_fp32_to_8bit/e4m3fn_rne', 'BM_cpfloat/e4m3_rne'))}, "
            f"sr:8 / CPFloat SR {fmt(r('BM_array_fp32_to_8bit/e4m3fn_sr8', 'BM_cpfloat/e4m3_sr'))}, "
            f"bf16 / CPFloat bf16 {fmt(r('BM_array_fp32_to_16bit/bf16_rne', 'BM_cpfloat/bf16_rne'))}, "
            f"sr:8 / rne {fmt(r('BM_array_fp32_to_8bit/e4m3fn_sr8', 'BM_array_fp32_to_8bit/e4m3fn_rne'))}")
    return lines, ratios, ctx


def peers_table(peers):
    cols = ["torch", "ml_dtypes", "numpy", "CPFloat", "CPFloat_prealloc"]
    lines = ["| row | n | copy | exmy | " + " | ".join(cols) + " | exmy/copy | "
             + " | ".join(f"exmy/{c}" for c in cols) + " | bits |",
             "|---|---|---|---|" + "---|" * len(cols) + "---|" + "---|" * len(cols) + "---|"]
    for r in peers["rows"]:
        m, o = r["Mps"], r["exmy_over"]
        bits = ", ".join(f"{k} {'=' if v == 0 else v}" for k, v in r["bits_differ"].items())
        if "sr_off_neighbours" in r:
            bits = "results off the two neighbours: " + ", ".join(
                f"{k} {v}" for k, v in r["sr_off_neighbours"].items())
        lines.append(f"| {r['row']} | 2^{r['log2n']} | {r['copy_Mps']:.0f} | {m['exmy']:.0f} | "
                     + " | ".join(f"{m[c]:.0f}" if c in m else "—" for c in cols)
                     + f" | {r['exmy_over_copy']:.2f} | "
                     + " | ".join(f"{o[c]:.2f}" if c in o else "—" for c in cols)
                     + f" | {bits} |")
    return lines


def cli_table(cli):
    lines = ["| process | median s | M elem/s | all runs (s) |", "|---|---|---|---|"]
    for k, v in cli["median_s"].items():
        lines.append(f"| {k} | {v:.3f} | {cli['Melem_per_s'][k]:.0f} | "
                     + " ".join(f"{t:.3f}" for t in cli["all_s"][k]) + " |")
    lines.append("")
    lines.append(f"exmy / cp speed {cli['exmy_over_copy']:.3f} (one thread "
                 f"{cli['exmy_1thread_over_copy']:.3f}); exmy / numpy+ml_dtypes "
                 f"{cli['exmy_over_numpy_ml_dtypes']:.2f}x; codes differing from ml_dtypes: "
                 f"{cli['codes_differ_from_ml_dtypes']}, between exmy's thread counts: "
                 f"{cli['codes_differ_1thread']}.")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--native", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--before")
    ap.add_argument("--title", default="CPU casts against torch, ml_dtypes, CPFloat and cp "
                                        "(issue 15)")
    ap.add_argument("--notes", help="a Markdown file appended as the closing section")
    ap.add_argument("--md", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    native = native_rates(a.native)
    peers = json.loads(pathlib.Path(a.peers).read_text())
    cli = json.loads(pathlib.Path(a.cli).read_text())
    tg = targets(native, peers, cli)
    ntab, nratios, ctx = native_table(native)
    v = peers["versions"]
    md = [f"# {a.title}", "",
          f"Machine: {peers['machine']}, {peers['cores']} cores (shared with other builds: every "
          "comparison is a same-run ratio of medians). Date: " + peers["date"] + ".",
          "Versions: " + ", ".join(f"{k} {x}" for k, x in v.items() if x) + ".",
          f"Google Benchmark context: cpfloat {ctx.get('cpfloat', '?')}; threads "
          f"{ctx.get('threads', '?')}.", "",
          "## Issue 15 targets (CPU rows)", "",
          "| issue row | measurement | exmy M/s | peer M/s | ratio | target | verdict |",
          "|---|---|---|---|---|---|---|"]
    for row, meas, e, p, r, t, vd in tg:
        md.append(f"| {row} | {meas} | {e:.0f} | {p:.0f} | {r:.2f} | >= {t:g} | {vd} |")
    missed = [f"{meas} ({r:.2f})" for row, meas, e, p, r, t, vd in tg if vd != "met"]
    md += ["", f"{len(tg) - len(missed)} of {len(tg)} measurements meet their target"
           + ("." if not missed else "; not met: " + "; ".join(missed) + ".")]
    if a.before:
        bd = pathlib.Path(a.before)
        try:
            btg = targets(native_rates(bd / "native.json"),
                          json.loads((bd / "peers.json").read_text()),
                          json.loads((bd / "cli.json").read_text()))
            md += ["", "Before (the same programs on the tree before the engine work, its own run):",
                   "", "| issue row | measurement | exmy M/s | peer M/s | ratio | verdict |",
                   "|---|---|---|---|---|---|"]
            for row, meas, e, p, r, t, vd in btg:
                md.append(f"| {row} | {meas} | {e:.0f} | {p:.0f} | {r:.2f} | {vd} |")
        except (OSError, KeyError, ValueError) as err:
            md += ["", f"(before: {err})"]
    md += ["", "## bench_native_cast (C++, one thread, median of repetitions)", ""] + ntab
    md += [""] + [f"- {x}" for x in nratios]
    md += ["", "## bench/peers/cpu_cast_vs_peers.py (one process, one thread, median of "
           "round-robin calls: " + ", ".join(f"{r} at 2^{lg}" for lg, r in sorted(
               {(r["log2n"], r["reps"]) for r in peers["rows"]})) + ")", "",
           "M elem/s; ratios are exmy's speed over the peer's; `=`: every element's bits equal."
           " Every contender allocates its output per call (CPFloat a new fp32 array);"
           " CPFloat_prealloc writes into one preallocated array.", ""]
    md += peers_table(peers)
    md += ["", "## bench/peers/cpu_cli_vs_copy.py (whole processes, 2^26 fp32 elements, warm "
           "page cache, median of " + str(cli["reps"]) + ")", ""] + cli_table(cli)
    if a.notes:
        md += ["", pathlib.Path(a.notes).read_text().rstrip()]
    pathlib.Path(a.md).write_text("\n".join(md) + "\n")
    out = {"targets": [dict(zip(("issue_row", "measurement", "exmy_Mps", "peer_Mps", "ratio",
                                 "target", "verdict"), t)) for t in tg],
           "native": {"context": ctx, "items_per_second": native[1]},
           "peers": peers, "cli": cli}
    if a.before:
        bd = pathlib.Path(a.before)
        out["before"] = {k: json.loads((bd / f"{k}.json").read_text())
                         for k in ("native", "peers", "cli") if (bd / f"{k}.json").exists()}
    pathlib.Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
