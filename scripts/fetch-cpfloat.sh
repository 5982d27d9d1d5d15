#!/usr/bin/env bash
# Obtain CPFloat (Fasi & Mikaitis' header-only C library; repository north-numerical-computing/cpfloat)
# and the PCG C library (imneme/pcg-c) it draws random numbers from, for the optional CPFloat rows
# of bench/bench_native_cast.cpp (issue 15). Nothing is vendored: they are unpacked into DEST
# (default build-deps/, ignored by git) and the build is pointed at them:
#   cmake -S . -B build-cpu -DEXMY_BENCH=ON -DEXMY_CPFLOAT_DIR=DEST/cpfloat -DEXMY_PCG_DIR=DEST/pcg-c
# Sources tried in order:
#   1. a Debian package (apt-cache show cpfloat / libcpfloat-dev), installed with apt-get;
#   2. a PyPI distribution named cpfloat (pip download --no-deps), unpacked;
#   3. --from PATH / --pcg-from PATH: a checkout, a bare git directory (e.g. a mirror of the
#      repository) or a .tar.gz/.zip of it that you obtained yourself.
# At the time of writing (2026-11) neither Debian nor PyPI packages CPFloat or pcg-c, so 3 is the
# way; without it the script says so and exits 1, and the benchmarks run without CPFloat rows.
# Usage: scripts/fetch-cpfloat.sh [--dest DEST] [--from CPFLOAT] [--pcg-from PCG]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/build-deps"
from="" pcg_from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --pcg-from) pcg_from=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "fetch-cpfloat.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$dest"

# Unpack PATH (checkout, bare git dir, archive) into $2 (replaced).
unpack() {
  local src=$1 out=$2
  rm -rf "$out"; mkdir -p "$out"
  if [ -f "$src/HEAD" ] && [ -d "$src/objects" ] &&
     git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then  # a git directory
    git --git-dir="$src" archive --format=tar HEAD | tar -x -C "$out"
    git --git-dir="$src" rev-parse HEAD > "$out/.source-commit"
  elif [ -d "$src" ]; then
    cp -a "$src"/. "$out"/
    rm -rf "$out/.git"
    if git -C "$src" rev-parse HEAD >/dev/null 2>&1; then
      git -C "$src" rev-parse HEAD > "$out/.source-commit"
    fi
  elif [[ "$src" == *.zip ]]; then
    (cd "$out" && unzip -q "$src")
  elif [ -f "$src" ]; then
    tar -xf "$src" -C "$out"
  else
    echo "fetch-cpfloat.sh: '$src' is neither a directory nor an archive" >&2; exit 2
  fi
  # An archive with one top folder: lift its contents.
  local entries; entries=$(ls -A "$out" | grep -v '^\.source-commit$' || true)
  if [ "$(echo "$entries" | wc -l)" = 1 ] && [ -d "$out/$entries" ]; then
    (shopt -s dotglob; mv "$out/$entries"/* "$out"/ && rmdir "$out/$entries")
  fi
}

found=""
# 1. Debian.
for pkg in libcpfloat-dev cpfloat; do
  if apt-cache show "$pkg" >/dev/null 2>&1; then
    echo "fetch-cpfloat.sh: installing the Debian package $pkg" >&2
    apt-get install -y "$pkg" >&2
    h=$(dpkg -L "$pkg" | grep '/cpfloat_binary32.h$' | head -1 || true)
    if [ -n "$h" ]; then found=$(dirname "$h"); fi
    break
  fi
done
# 2. PyPI.
if [ -z "$found" ] && [ -z "$from" ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download --no-deps --no-binary :all: cpfloat -d "$tmp" >/dev/null 2>&1; then
    a=$(ls "$tmp"/* | head -1)
    unpack "$a" "$dest/cpfloat"
    h=$(find "$dest/cpfloat" -name cpfloat_binary32.h | head -1)
    if [ -n "$h" ]; then found=$(dirname "$h"); echo "fetch-cpfloat.sh: from PyPI ($(basename "$a"))" >&2; fi
  fi
  rm -rf "$tmp"
fi
# 3. A source the caller supplies.
if [ -z "$found" ] && [ -n "$from" ]; then
  unpack "$from" "$dest/cpfloat"
  h=$(find "$dest/cpfloat" -name cpfloat_binary32.h | head -1)
  if [ -n "$h" ]; then found=$(dirname "$h"); fi
fi
if [ -z "$found" ]; then
  cat >&2 <<MSG
fetch-cpfloat.sh: CPFloat is not packaged for Debian or PyPI here. Obtain the repository
north-numerical-computing/cpfloat yourself (a checkout, a bare clone or a release archive) and run
  scripts/fetch-cpfloat.sh --from PATH [--pcg-from PATH-TO-imneme/pcg-c]
The benchmarks build and run without it (the CPFloat rows are skipped with a message).
MSG
  exit 1
fi
echo "fetch-cpfloat.sh: CPFloat headers in $found" >&2

pcg=""
if [ -n "$pcg_from" ]; then
  unpack "$pcg_from" "$dest/pcg-c"
  if [ -f "$dest/pcg-c/include/pcg_variants.h" ]; then pcg="$dest/pcg-c"; fi
elif [ -f "$dest/pcg-c/include/pcg_variants.h" ]; then
  pcg="$dest/pcg-c"
fi
if [ -z "$pcg" ]; then
  echo "fetch-cpfloat.sh: no PCG (imneme/pcg-c; --pcg-from PATH): CPFloat's stochastic rounding will draw from rand()" >&2
fi
echo "-DEXMY_CPFLOAT_DIR=$found${pcg:+ -DEXMY_PCG_DIR=$pcg}"
