#!/usr/bin/env bash
# The Python package test (ctest `python_package`): pytest python/tests on the extension this build
# compiled (scripts/setup.sh configures EXMY_PYTHON=ON with nanobind in BUILD/pyenv), staged with
# the package's Python files in BUILD/pystage/exmy; the tests compare exmy.cast/quantize/step/
# golden_check with this build's CLI (same bits). Exit 77 (ctest: skipped) where the extension was
# not built.
#   scripts/test-python.sh [build-dir]           (default: build)
#   scripts/test-python.sh --pip [build-dir]     the packaging route instead: `pip install .`
#                                                (scikit-build-core builds the engine again, about
#                                                7 min on 2 cores), then the same tests against
#                                                the package's own exmy/bin/exmy
#   scripts/test-python.sh --wheel [WHEEL]       the self-contained wheel (scripts/build-wheel.sh
#                                                builds one when WHEEL is not given: 19 min on 2
#                                                cores; not in CI) in a fresh venv in an empty
#                                                directory with LD_LIBRARY_PATH empty: the console
#                                                script (exmy --help, exmy cast), exmy.cast with an
#                                                ml_dtypes name, no libmpfr/libgmp/libz in ldd of the
#                                                module and the executable, then the same tests
#                                                against the bundled executable
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [ "${1:-}" = "--wheel" ]; then
  whl=${2:-}
  [ -n "$whl" ] || whl=$(scripts/build-wheel.sh | tail -1)
  whl=$(cd "$(dirname "$whl")" && pwd)/$(basename "$whl")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cd "$tmp"
  fail() { echo "test-python --wheel: $*" >&2; exit 1; }
  "${PYTHON:-python3}" -m venv venv
  venv/bin/pip install -q --disable-pip-version-check "$whl" pytest
  export LD_LIBRARY_PATH=
  site=$(env -u LD_LIBRARY_PATH venv/bin/python -c \
         'import exmy, os; print(os.path.dirname(exmy.__file__))')
  exe=$site/bin/exmy
  for f in "$site"/_exmy*.so "$exe"; do
    [ -f "$f" ] || fail "$f missing from the wheel"
    if ldd "$f" | grep -E 'lib(mpfr|gmp|z)\.so'; then fail "$f links MPFR, GMP or zlib dynamically"; fi
    echo "ldd $(basename "$f"): $(ldd "$f" | awk '{print $1}' | tr '\n' ' ')"
  done
  env -u LD_LIBRARY_PATH venv/bin/exmy --help | head -3
  cast=$(env -u LD_LIBRARY_PATH venv/bin/exmy cast float8_e4m3fn 448 464 465 -0)
  echo "$cast"
  [ "$(echo "$cast" | awk '{print $2}' | tr '\n' ' ')" = "0x7e 0x7e 0x7f 0x80 " ] ||
    fail "exmy cast float8_e4m3fn 448 464 465 -0: expected codes 0x7e 0x7e 0x7f 0x80"
  env -u LD_LIBRARY_PATH venv/bin/python -c "
import numpy as np, exmy
c = exmy.cast(np.float32([448, 464, 465, -0.0]), 'float8_e4m3fn')
print(c.dtype, [hex(v) for v in c])
assert [int(v) for v in c] == [0x7E, 0x7E, 0x7F, 0x80], c"
  env -u LD_LIBRARY_PATH EXMY_CLI="$exe" venv/bin/python -m pytest -q -p no:cacheprovider \
    "$root/python/tests"
  exit 0
fi
pip_route=0
if [ "${1:-}" = "--pip" ]; then
  pip_route=1
  shift
fi
build=$(cd "${1:-build}" && pwd)
venv=$build/pyenv
if [ "$pip_route" = 1 ]; then
  [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2" \
    numpy pytest
  if command -v ccache >/dev/null 2>&1; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
  "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation "$root"
  cd "$build"
  # The package's own executable (exmy/bin/exmy) where it has one, else this build's.
  exe=$("$venv/bin/python" -c 'from exmy._cli import executable; print(executable())')
  [ -f "$exe" ] || exe=$build/cli/exmy
  EXMY_CLI="$exe" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
  exit 0
fi
so=$(find "$build/python" -maxdepth 1 -name '_exmy*.so' 2>/dev/null | head -1 || true)
if [ -z "$so" ] || [ ! -x "$venv/bin/python" ]; then
  echo "python_package: skipped: this build has no Python extension (EXMY_PYTHON=OFF;" \
       "scripts/setup.sh turns it on where pip can install nanobind)" >&2
  exit 77
fi
stage=$build/pystage
rm -rf "$stage"
mkdir -p "$stage/exmy"
cp "$root"/python/exmy/*.py "$so" "$stage/exmy/"
cd "$build"
# -p exmy.pytest_plugin: the plugin pip would register through its pytest11 entry point.
PYTHONPATH="$stage" EXMY_CLI="$build/cli/exmy" "$venv/bin/python" -m pytest -q \
  -p no:cacheprovider -p exmy.pytest_plugin "$root/python/tests"
