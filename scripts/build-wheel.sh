#!/usr/bin/env bash
# Builds the self-contained CPU wheel of exmy: the package, the extension exmy._exmy and the
# exmy executable (console script `exmy`), MPFR, GMP and zlib linked statically (EXMY_STATIC_DEPS,
# the top CMakeLists.txt), libstdc++/libgcc too, libgomp.so.1 bundled beside the module.
#   scripts/build-wheel.sh [OUT_DIR]        (default: dist/); prints the wheel's path last
# Debian's libmpfr.a and libgmp.a cannot go into a shared module (libmpfr.a uses local-exec TLS,
# libgmp.a non-PIC data references), so this script first builds PIC static MPFR and GMP from
# Debian's own sources (`apt-get source mpfr4 gmp` with a private package list; m4 needed) into
# .devdeps/wheel-deps (kept: about 5 min the first time on 2 cores, nothing later). Set
# EXMY_WHEEL_DEPS=PREFIX to use a prefix that already holds PIC lib/libmpfr.a, lib/libgmp.a.
# The wheel is tagged linux_x86_64 (glibc of this machine); scripts/test-python.sh --wheel
# installs it in a fresh venv and checks it. CI does not run this (1,164 s for the wheel on 2
# loaded cores, bench/results/2026-12-01-cpu-wheel.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
log() { echo "build-wheel: $*" >&2; }

deps=${EXMY_WHEEL_DEPS:-$root/.devdeps/wheel-deps}
if [ ! -f "$deps/lib/libmpfr.a" ] || [ ! -f "$deps/lib/libgmp.a" ]; then
  command -v m4 >/dev/null || { log "GMP's build needs m4 (apt-get install m4)"; exit 2; }
  src=$deps/src
  mkdir -p "$src/apt/lists/partial" "$src/apt/cache/archives/partial" "$src/apt/parts"
  . /etc/os-release
  cat > "$src/apt/parts/src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME:-bookworm}
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$src/apt/parts"
            -o "Dir::State::Lists=$src/apt/lists" -o "Dir::Cache=$src/apt/cache")
  log "fetching Debian's mpfr4 and gmp sources"
  (cd "$src" && apt-get -qq "${apt_opts[@]}" update && \
     apt-get -qq "${apt_opts[@]}" source --download-only mpfr4 gmp) >/dev/null 2>&1 || {
    log "apt-get source mpfr4 gmp failed (network?); set EXMY_WHEEL_DEPS"; exit 2; }
  rm -rf "$src/gmp" "$src/mpfr" && mkdir -p "$src/gmp" "$src/mpfr"
  tar -xf "$src"/gmp_*.orig.tar.* -C "$src/gmp" --strip-components=1
  tar -xf "$src"/mpfr4_*.orig.tar.* -C "$src/mpfr" --strip-components=1
  # Debian's dfsg tarball of GMP has no doc/: drop it from the build.
  sed -i 's/^\(SUBDIRS = .*\) doc$/\1/' "$src/gmp/Makefile.in"
  sed -i 's| doc/Makefile||' "$src/gmp/configure"
  log "building PIC GMP (--enable-fat: every x86-64 CPU) and MPFR into $deps"
  (cd "$src/gmp" && ./configure --prefix="$deps" --with-pic --disable-shared --enable-static \
     --enable-fat >/dev/null && make -j"$jobs" >/dev/null && make install >/dev/null)
  (cd "$src/mpfr" && ./configure --prefix="$deps" --with-gmp="$deps" --with-pic \
     --disable-shared --enable-static >/dev/null && make -j"$jobs" >/dev/null &&
     make install >/dev/null)
fi

venv=$root/build-wheel/venv
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2" \
  numpy pytest
if command -v ccache >/dev/null 2>&1; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
export CMAKE_BUILD_PARALLEL_LEVEL=$jobs
rm -f "$out"/exmy-*.whl
start=$(date +%s)
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$out" \
  -C build-dir="$root/build-wheel/cmake" -C cmake.define.EXMY_STATIC_DEPS=ON \
  -C cmake.define.MPFR_ROOT="$deps" -C cmake.define.GMP_ROOT="$deps" "$root"
whl=$(ls "$out"/exmy-*.whl)
log "built in $(( $(date +%s) - start )) s: $(du -k "$whl" | cut -f1) KiB"
echo "$whl"
