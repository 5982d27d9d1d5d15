#!/usr/bin/env bash
# Runs an exmy verification campaign as a Slurm job array and resumes it: the first call submits
# every shard; a later call (after a timeout, a node failure or a cancelled job) submits only the
# shards without a completion manifest; when none is missing it merges them and exits as the
# whole run would (0 every check agreed, 1 a mismatch; docs/SEMANTICS.md 13.4).
#   examples/slurm/run-campaign.sh N OUTDIR [exmy verify options...]
#   examples/slurm/run-campaign.sh 64 shards --campaign steps --depth full
# EXMY names the exmy executable (default: exmy on PATH); SBATCH the submit command (default
# sbatch; tests/verify/slurm_recipe_test.sh runs the tasks locally with a stand-in).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
N=$1
OUTDIR=$2
shift 2
ARGS=${*:---campaign steps --depth full}
EXMY=${EXMY:-exmy}
SBATCH=${SBATCH:-sbatch}
mkdir -p "$OUTDIR"
shopt -s nullglob
manifests=("$OUTDIR"/shard-*.json)
# The shards still to run, as a Slurm --array list (exit 1 here: a manifest of another campaign
# in OUTDIR, which merge names).
missing=$("$EXMY" verify merge --missing --of "$N" "${manifests[@]}")
if [ -n "$missing" ]; then
  echo "run-campaign: submitting shards $missing of $N"
  EXMY=$EXMY N=$N OUTDIR=$OUTDIR ARGS=$ARGS \
    $SBATCH --array="$missing" --export=ALL "$here/verify-array.sbatch"
  echo "run-campaign: run this again when the array has finished (it resumes where it stopped)"
  exit 3
fi
exec "$EXMY" verify merge "${manifests[@]}"
