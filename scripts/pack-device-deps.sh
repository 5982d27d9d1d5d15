#!/usr/bin/env bash
# Copies the Debian-packaged dependencies (headers, static/shared libraries and CMake package
# files) into .devdeps/usr, mirroring their paths, so that the GPU machine, which has no package
# registry, can build exmy: pass `carry: [".devdeps"]` and configure with
#   cmake -DCMAKE_PREFIX_PATH=$PWD/.devdeps/usr -DMPFR_INCLUDE_DIR=$PWD/.devdeps/usr/include ...
# and run with LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu.
set -euo pipefail
cd "$(dirname "$0")/.."
d=.devdeps/usr
rm -rf .devdeps
mkdir -p "$d/include" "$d/lib/x86_64-linux-gnu/cmake" "$d/lib/cmake"
cp -r /usr/include/catch2 /usr/include/rapidcheck /usr/include/rapidcheck.h /usr/include/mpfr.h \
  /usr/include/mpf2mpfr.h /usr/include/benchmark "$d/include/"
cp /usr/include/x86_64-linux-gnu/gmp.h "$d/include/"
cp -a /usr/lib/x86_64-linux-gnu/libmpfr.a /usr/lib/x86_64-linux-gnu/libgmp.a \
  /usr/lib/x86_64-linux-gnu/librapidcheck.a /usr/lib/x86_64-linux-gnu/libbenchmark.so* \
  /usr/lib/x86_64-linux-gnu/libbenchmark_main.a "$d/lib/x86_64-linux-gnu/"
cp -r /usr/lib/x86_64-linux-gnu/cmake/rapidcheck /usr/lib/x86_64-linux-gnu/cmake/benchmark \
  "$d/lib/x86_64-linux-gnu/cmake/"
cp -r /usr/lib/cmake/Catch2 "$d/lib/cmake/"
# Catch2Targets.cmake checks that its imported library exists (at <prefix>/lib).
cp -a /usr/lib/libCatch2WithMain.a "$d/lib/"
du -sh .devdeps
