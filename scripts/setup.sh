#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks, then configures and builds exmy.
# Idempotent: packages already present are not reinstalled; the build is incremental.
# Usage: scripts/setup.sh [build-dir]     (default: build): everything (CLI, tests, benchmarks,
#                                          CUDA kernels where nvcc exists)
#        scripts/setup.sh --report          only the exmy executable, host code, in build-report:
#                                          what `exmy report` needs (the README's first command)
set -euo pipefail
cd "$(dirname "$0")/.."
report_only=0
if [ "${1:-}" = "--report" ]; then
  report_only=1
  build=build-report
else
  build=${1:-build}
fi

pkgs=(cmake g++ make pkg-config libmpfr-dev libgmp-dev catch2 librapidcheck-dev libbenchmark-dev
      libomp-dev zlib1g-dev python3 python3-numpy python3-matplotlib python3-venv python3-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
# ccache where installed (a rebuild after `git pull` then recompiles only what changed).
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
if [ "$report_only" = 1 ]; then
  # Only the exmy executable (no tests, benchmarks, Python extension or CUDA): 142 objects.
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEXMY_CUDA=OFF -DEXMY_TESTS=OFF \
    -DEXMY_BENCH=OFF -DEXMY_PYTHON=OFF "${launcher[@]}" >/dev/null
  cmake --build "$build" -j"$jobs" --target exmy
  exit 0
fi
cuda_args=()
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
# CI and most users have no GPU: one architecture keeps the build short; override with
# EXMY_CUDA_ARCHS="80;90".
cuda_args+=("-DEXMY_CUDA_ARCHS=${EXMY_CUDA_ARCHS:-90}")
# The Python extension exmy._exmy is built in the same build (the same engine objects, compiled
# once; ctest python_package runs pytest on it). nanobind comes from PyPI into BUILD/pyenv; where
# pip cannot reach PyPI the extension is left out and python_package skips. (`pip install .`, the
# packaging route, is checked by scripts/test-python.sh --pip.)
py_args=(-DEXMY_PYTHON=OFF)
mkdir -p "$build"
venv="$(cd "$build" && pwd)/pyenv"  # absolute: CMake's FindPython ignores a relative interpreter
if [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >/dev/null 2>&1; then
  if "$venv/bin/python" -c "import nanobind, numpy, pytest" 2>/dev/null ||
     "$venv/bin/pip" install -q --disable-pip-version-check "nanobind>=2" numpy pytest; then
    py_args=(-DEXMY_PYTHON=ON "-DPython_EXECUTABLE=$venv/bin/python")
  else
    echo "setup: pip could not install nanobind: the Python extension is not built" >&2
  fi
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" "${py_args[@]}" \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$jobs"
