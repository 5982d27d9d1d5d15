#!/usr/bin/env python3
"""Replays the recorded command of every case of an exmy golden corpus (docs/SEMANTICS.md 13.7):
each case's `cli` runs in a scratch directory holding the case's inputs (the exmy of the
command line replaces the word `exmy`), the files it writes are gathered into a results tree
(<name>.npy in the directory, or in out/ for step cases), and `exmy golden check` must then pass
with every output present. Exit 0 when every command replays; 1 with the failing cases listed.

    python3 scripts/golden-replay.py EXMY CORPUS [--suite cast|quantize|step|all] [--jobs N]
"""
import argparse
import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def npy_header(path):
    """(dtype descr, shape) of a .npy file, read from its header alone."""
    with open(path, "rb") as f:
        magic = f.read(8)
        if magic[:6] != b"\x93NUMPY":
            return ("not a .npy file", ())
        n = int.from_bytes(f.read(2 if magic[6] == 1 else 4), "little")
        h = ast.literal_eval(f.read(n).decode("latin1"))
    return (h["descr"], tuple(h["shape"]))


def cases(corpus, suite):
    for root, _dirs, files in os.walk(corpus):
        if "case.json" in files:
            rel = os.path.relpath(root, corpus)
            if suite in ("all", rel.split(os.sep)[0]):
                yield rel


def replay(exmy, corpus, results, rel):
    with open(os.path.join(corpus, rel, "case.json")) as f:
        case = json.load(f)
    with tempfile.TemporaryDirectory(prefix="exmy-replay-") as work:
        for name in case["inputs"].split(","):
            os.symlink(os.path.abspath(os.path.join(corpus, rel, name + ".npy")),
                       os.path.join(work, name + ".npy"))
        # The command line as recorded; only the program name is replaced.
        cmd = " ".join(shlex.quote(exmy) if w == "exmy" else w
                       for w in case["cli"].replace(";", " ; ").replace("&&", " && ").split())
        p = subprocess.run(["sh", "-c", cmd], cwd=work, capture_output=True, text=True)
        if p.returncode != 0:
            return rel, "exit %d: %s" % (p.returncode, (p.stderr or p.stdout).strip()[:300])
        dst = os.path.join(results, rel)
        os.makedirs(dst, exist_ok=True)
        missing = []
        for name in case["outputs"].split(","):
            for src in (os.path.join(work, name + ".npy"), os.path.join(work, "out", name + ".npy")):
                if os.path.exists(src) and not os.path.islink(src):
                    shutil.copy(src, os.path.join(dst, name + ".npy"))
                    break
            else:
                missing.append(name)
        if missing:
            return rel, "wrote no " + ", ".join(m + ".npy" for m in missing)
        for name in case["outputs"].split(","):  # dtype and shape first (check stops at one)
            e = npy_header(os.path.join(corpus, rel, "expected", name + ".npy"))
            g = npy_header(os.path.join(dst, name + ".npy"))
            if e != g:
                return rel, "%s.npy: expected %s, wrote %s" % (name, e, g)
    return rel, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exmy")
    ap.add_argument("corpus")
    ap.add_argument("--suite", default="all")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    exmy = os.path.abspath(a.exmy)
    todo = sorted(cases(a.corpus, a.suite))
    with tempfile.TemporaryDirectory(prefix="exmy-replay-results-") as results:
        with ThreadPoolExecutor(a.jobs) as ex:
            done = list(ex.map(lambda r: replay(exmy, a.corpus, results, r), todo))
        bad = [(r, e) for r, e in done if e]
        for r, e in bad:
            print("%s: %s" % (r, e))
        chk = subprocess.run([exmy, "golden", "check", a.corpus, "--results", results, "--suite",
                              a.suite], capture_output=True, text=True)
        verdict = chk.stdout.strip().splitlines()[-1] if chk.stdout.strip() else chk.stderr
        print("replayed %d cases, %d failed to replay; golden check: %s" % (len(todo), len(bad),
                                                                           verdict))
        if chk.returncode != 0 and not bad:
            print(chk.stdout[-3000:])
        return 0 if not bad and chk.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
