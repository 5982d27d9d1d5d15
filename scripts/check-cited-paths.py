#!/usr/bin/env python3
"""Fails when a comment or a document cites a repository path that does not exist.

    scripts/check-cited-paths.py [--root DIR] [--verbose]

Scans the comments of the tracked sources (C, C++, CUDA: // and /* */; Python: # comments and
triple-quoted strings; shell, CMake, TOML: # comments) and the whole text of the Markdown
documents for repository-relative paths: a token starting with one of the top-level folders
below (sim/, gpu/, cli/, tests/, docs/, ...) that is not itself the tail of a longer path
(build/include/... or https://.../tests/... are not citations of this tree). A citation holds
when it names an existing file or folder, or:
  - a file without its extension ("sim/native/rounding" for rounding.hpp),
  - a glob ("bench/results/2026-11-23-*"): at least one path matches,
  - a placeholder ("tests/<folder>/test_<name>.cpp", "bench/results/<date>-...", "{a,b}"): the
    folder before the first placeholder exists,
  - a path broken at a hyphen by a line wrap ("bench/results/2026-11-24-cpu-"): some path
    starts with it,
  - it is in ALLOWED below (paths of other projects' trees, paths a build creates).
Folders whose files are dated records of the tree as it was (bench/results/, the measured
outputs under golden/) are not scanned: RECORDS below.
Exit 0 when every citation holds, 1 listing FILE:LINE: PATH for each dead one. Python 3 stdlib.
Run by ctest as cited_paths (label hygiene).
"""
import argparse
import glob
import io
import os
import re
import subprocess
import sys
import tokenize

TOP = ("sim", "gpu", "cli", "tests", "docs", "bench", "scripts", "tools", "golden", "examples",
       "include", "reports", "python", "properties", "fuzz", "cmake")
PATH_RE = re.compile(r"(?<![\w./\-$@~])((?:%s)/[\w.\-/<>*{},]*)" % "|".join(TOP))

# Cited paths that are not in this tree on purpose: path -> why.
ALLOWED = {
    "include/pcg_variants.h": "CPFloat's tree (cmake/ExmyCpfloat.cmake)",
    "include/cpfloat": "CPFloat's tree (cmake/ExmyCpfloat.cmake)",
    "examples/backend_zoo/NAME.c": "placeholder: one file per zoo plugin",
}
# Folders not scanned: dated records that cite the tree of their date.
RECORDS = ("bench/results/", "golden/")
# golden/ holds data; its READMEs are scanned.
RECORD_EXCEPTIONS = re.compile(r"^golden/.*README\.md$")

C_LIKE = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh", ".inc")
HASH_LIKE = (".sh", ".cmake", ".toml")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root, check=True, capture_output=True,
                             text=True).stdout
        return [f for f in out.splitlines() if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def c_comments(text):
    """(line, text) of every // and /* */ comment, skipping string and character literals."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k, part in enumerate(text[i:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            line += text.count("\n", i, end)
            i = end
        elif c == '"' or (c == "'" and (i == 0 or not text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1 if j < n and text[j] == c else j
        else:
            i += 1
    return out


def python_comments(text):
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
            elif tok.type == tokenize.STRING and re.match(r"^[rRbBuU]*('''|\"\"\")", tok.string):
                for k, part in enumerate(tok.string.split("\n")):
                    out.append((tok.start[0] + k, part))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return hash_comments(text)
    return out


def hash_comments(text):
    out = []
    for ln, s in enumerate(text.split("\n"), 1):
        quote = None
        for k, c in enumerate(s):
            if quote:
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "#" and (k == 0 or s[k - 1] in " \t"):
                out.append((ln, s[k:]))
                break
    return out


def comment_lines(path, text):
    base = os.path.basename(path)
    if path.endswith(".md"):
        return list(enumerate(text.split("\n"), 1))
    if path.endswith(C_LIKE) or base.endswith(".cpp.in") or base.endswith(".hpp.in"):
        return c_comments(text)
    if path.endswith(".py"):
        return python_comments(text)
    if (path.endswith(HASH_LIKE) or base == "CMakeLists.txt" or path == ".ci/run" or
            (path.startswith("scripts/") and "." not in base)):
        return hash_comments(text)
    return None


def holds(root, p):
    if p in ALLOWED:
        return True
    full = os.path.join(root, p)
    if re.search(r"[<{]|\.\.\.", p):
        # A placeholder: the folder before it must exist.
        head = re.split(r"[<{]|\.\.\.", p, maxsplit=1)[0]
        return os.path.isdir(os.path.join(root, os.path.dirname(head) or "."))
    if "*" in p or "?" in p:
        return bool(glob.glob(full))
    if os.path.exists(full):
        return True
    parent, name = os.path.split(full.rstrip("/"))
    if not os.path.isdir(parent):
        return False
    if p.endswith("-"):
        return any(x.startswith(name) for x in os.listdir(parent))
    # A file cited without its extension.
    return any(x.startswith(name + ".") for x in os.listdir(parent))


def citations(line):
    for m in PATH_RE.finditer(line):
        p = m.group(1)
        p = re.sub(r"(:\d+)+$", "", p.rstrip(".,:;"))  # sentence punctuation, file:line
        p = p.rstrip(".,")
        if p.count("/") == 1 and p.endswith("/") and p[:-1] in TOP:
            yield p  # a top-level folder
        elif p.split("/", 1)[1]:
            yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   ".."))
    ap.add_argument("--verbose", action="store_true", help="list every citation checked")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    dead, checked, scanned = [], 0, 0
    for f in sorted(tracked_files(root)):
        if f.startswith(RECORDS) and not RECORD_EXCEPTIONS.match(f):
            continue
        try:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, OSError):
            continue
        lines = comment_lines(f, text)
        if lines is None:
            continue
        scanned += 1
        for ln, s in lines:
            for p in citations(s):
                checked += 1
                ok = holds(root, p)
                if args.verbose or not ok:
                    print("%s:%d: %s%s" % (f, ln, p, "" if ok else "  (does not exist)"))
                if not ok:
                    dead.append(p)
    print("check-cited-paths: %d files, %d citations, %d dead" % (scanned, checked, len(dead)),
          file=sys.stderr)
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
