"""Split a gemm_family_check.py result by what `--accum cublas-sm90` does with each (shape,
output): its record's rule verified (silent), not verified (announced on stderr; --strict
refuses), or no rule (issue 30; docs/SEMANTICS.md 15.6). The status is that of this tree's rule
table (gemm_launch_rules.py, the replica of sim/gemm/launch_rules.cpp), so a check run with the
models of one table can be read against another's status only where the models agree. Off the
GPU:

    python3 bench/peers/gemm_family_status.py CHECK.json [CHECK.json ...]

Prints per family, input > output type and status: shapes, clean shapes, outputs, mismatching
outputs, and the unclean shapes (up to 12).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_launch_rules as rules  # noqa: E402


def status_rows(check):
    rows = {}
    for t, v in check.items():
        for r in v["shapes"]:
            for o, x in r.get("outs", {}).items():
                rec = tuple(x["record"])
                fr = rules.family_rule(rec, t, o, r["K"], r["M"], r["N"])
                st = "none" if fr is None else ("verified" if fr[1] else "announced")
                s = rows.setdefault((rec[0], t, o, st), [0, 0, 0, 0, []])
                s[0] += 1
                s[2] += x["outputs"]
                if "error" in x:
                    s[4].append([r["M"], r["N"], r["K"], x["error"]])
                    continue
                s[1] += x["mismatches"] == 0
                s[3] += x["mismatches"]
                if x["mismatches"]:
                    s[4].append([r["M"], r["N"], r["K"], x["model"], x["mismatches"]])
    return rows


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            rows = status_rows(json.load(f))
        print(path)
        for (fam, t, o, st), (n, clean, outs, bad, unclean) in sorted(rows.items()):
            print("  %s %s>%s %s: %d shapes, %d clean, %d outputs, %d mismatching%s" % (
                fam, t, o, st, n, clean, outs, bad,
                (" " + json.dumps(unclean[:12])) if unclean else ""))


if __name__ == "__main__":
    main()
