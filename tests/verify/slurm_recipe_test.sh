#!/usr/bin/env bash
# examples/slurm as a user runs it, with a stand-in for sbatch that runs the array's tasks here,
# one after another: the first submission loses a task (as a node failure would: no manifest),
# the rerun submits only that shard, and the final merge equals the unsharded run's counts.
#   tests/verify/slurm_recipe_test.sh EXMY WORKDIR
set -euo pipefail
E=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
W=$2
src=$(cd "$(dirname "$0")/../.." && pwd)/examples/slurm
rm -rf "$W" && mkdir -p "$W" && cd "$W"
cat > fake-sbatch <<'SB'
#!/usr/bin/env bash
# sbatch --array=LIST --export=ALL SCRIPT: runs each task of LIST; LOSE_TASK's task is dropped.
set -u
list=${1#--array=}
script=$3
echo "$list" >> submitted.txt
for part in ${list//,/ }; do
  a=${part%-*}; b=${part#*-}
  for i in $(seq "$a" "$b"); do
    [ "$i" = "${LOSE_TASK:-none}" ] && continue
    SLURM_ARRAY_TASK_ID=$i bash "$script" > "task-$i.log" 2>&1 || true
  done
done
SB
chmod +x fake-sbatch
export EXMY=$E SBATCH=$PWD/fake-sbatch
args="--campaign fp16 --depth ci"
fail() { echo "slurm_recipe_test: $*" >&2; exit 1; }
# 1. All 4 shards submitted, task 2 lost: exit 3 (resubmit), 3 manifests.
rc=0; LOSE_TASK=2 "$src/run-campaign.sh" 4 shards $args > run1.txt || rc=$?
[ "$rc" = 3 ] || fail "first call exit $rc, expected 3"
[ "$(sed -n 1p submitted.txt)" = "0-3" ] || fail "first submission $(sed -n 1p submitted.txt), expected 0-3"
[ "$(ls shards/shard-*.json | wc -l)" = 3 ] || fail "expected 3 manifests after the lost task"
ls -A shards | grep -q '^\.shard-' && fail "a temporary manifest was left behind"
# A half-written manifest (as a crash during the rename could not leave, but a copy could) and
# an interrupted shard count as missing too.
echo '{"campaigns": [' > shards/shard-2.json
# 2. The rerun submits only shard 2; then nothing is missing.
rc=0; "$src/run-campaign.sh" 4 shards $args > run2.txt 2> run2.err || rc=$?
[ "$rc" = 3 ] || fail "second call exit $rc, expected 3"
[ "$(sed -n 2p submitted.txt)" = "2" ] || fail "rerun submitted $(sed -n 2p submitted.txt), expected 2"
grep -q "counted as missing" run2.err || fail "the unreadable manifest was not named"
[ -z "$("$E" verify merge --missing --of 4 shards/shard-*.json)" ] || fail "shards still missing"
# 3. The merge: exit 0 and the unsharded run's checks.
"$src/run-campaign.sh" 4 shards $args > merged.txt || fail "merge exit $?"
"$E" verify $args --quiet > whole.txt || fail "unsharded run failed"
m=$(grep -Eo '[0-9,]+ checks' merged.txt | tail -1); w=$(grep -Eo '[0-9,]+ checks' whole.txt | tail -1)
[ -n "$m" ] && [ "$m" = "$w" ] || fail "merged '$m' vs unsharded '$w'"
# 4. A manifest of another campaign in the directory is refused (exit 1, named).
"$E" verify --campaign bf16 --depth ci --shard 0/4 --json --quiet > shards/shard-9.json || true
rc=0; "$src/run-campaign.sh" 4 shards $args > run4.txt 2> run4.err || rc=$?
[ "$rc" = 1 ] && grep -q "another campaign" run4.err || fail "foreign manifest: exit $rc"
echo "slurm_recipe_test: ok ($m; lost task rerun alone; foreign manifest refused)"
