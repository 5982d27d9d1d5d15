#!/usr/bin/env bash
# First device call of the session of 2026-12-02 (21:45 UTC): every GPU test of main after the
# merges of h/quantroof, h/optspeed, h/splitk and h/repfast (not yet run on a GPU as one tree),
# on binaries built on the build machine for sm_90 and carried (build-carry-a/, build-libs/).
set -u
cd "$(dirname "$0")/../.."
END=${END:-420}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
export LD_LIBRARY_PATH=$root/build-libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/b && tar xJf build-carry-a/build-pack.tar.xz -C /tmp/b
T=/tmp/b/exmy_test_gpu
export EXMY_CLI=/tmp/b/exmy EXMY=/tmp/b/exmy EXMY_TEST_GPU=$T EXMY_SRC=$root
bg_run t_main "$T" "~exmy step --device cuda*"
for k in 0 1 2 3; do
  EXMY_TEST_SHARD=$k/4 bg_run t_step$k "$T" "exmy step --device cuda*"
done
bg_run t_props /tmp/b/exmy_test_properties_gpu
(cd /tmp/b && bg_run t_backend /tmp/b/exmy_test_backend_gpu)
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do echo "=== $f"; tail -4 "$f"; done
stop_packer
el "all done"
