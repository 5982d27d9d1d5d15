#!/usr/bin/env bash
# The Python package test (ctest `python_package`): a virtual environment in BUILD/pyenv, the
# build requirements from PyPI, `pip install .` (scikit-build-core + nanobind, docs in
# pyproject.toml), then pytest python/tests with the CLI of BUILD (same-bits comparisons).
#   scripts/test-python.sh [build-dir]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(cd "${1:-build}" && pwd)
venv=$build/pyenv
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2" \
  numpy pytest
if command -v ccache >/dev/null 2>&1; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation "$root"
cd "$build"
EXMY_CLI="$build/cli/exmy" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
