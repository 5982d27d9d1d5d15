#!/usr/bin/env bash
# The Python package test (ctest `python_package`): pytest python/tests on the extension this build
# compiled (scripts/setup.sh configures EXMY_PYTHON=ON with nanobind in BUILD/pyenv), staged with
# the package's Python files in BUILD/pystage/exmy; the tests compare exmy.cast/quantize/step/
# golden_check with this build's CLI (same bits). Exit 77 (ctest: skipped) where the extension was
# not built.
#   scripts/test-python.sh [build-dir]           (default: build)
#   scripts/test-python.sh --pip [build-dir]     the packaging route instead: `pip install .`
#                                                (scikit-build-core builds the engine again, about
#                                                7 min on 2 cores), then the same tests
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
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
  EXMY_CLI="$build/cli/exmy" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
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
