#!/usr/bin/env bash
# The report's CSVs are a function of (seed, size) only (docs/SEMANTICS.md 14): this runs
# `exmy report` at 1 and 2 threads (and, given a second binary, that binary at 2 threads: a
# before/after check of a change meant to be a pure speed-up) and compares every CSV byte for
# byte. Figures are skipped (EXMY_PYTHON points nowhere): they are drawn from the CSVs.
# Usage: scripts/report-csv-identity.sh EXMY [REF_EXMY] [--tiny|--quick|--full] [SECTION]
#   EXMY      the exmy binary to check (e.g. build-report/cli/exmy)
#   REF_EXMY  optional: a reference binary (e.g. one built from the commit before the change)
#   size      --tiny (default: seconds), --quick, or --full (the README's sizes)
#   SECTION   all (default) or one section key
# Exit 0 when every CSV matches, 1 on a difference (the files are named), 2 on bad arguments.
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 EXMY [REF_EXMY] [--tiny|--quick|--full] [SECTION]" >&2
  exit 2
fi
exmy=$1
shift
ref=""
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ] && [ -x "$1" ]; then
  ref=$1
  shift
fi
size=--tiny
if [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; then
  size=$1
  shift
fi
case "$size" in
  --tiny | --quick) ;;
  --full) size="" ;;
  *)
    echo "$0: size '$size': expected --tiny, --quick or --full" >&2
    exit 2
    ;;
esac
section=${1:-all}
work=$(mktemp -d "${TMPDIR:-/tmp}/exmy-csv-identity.XXXXXX")
trap 'rm -rf "$work"' EXIT
run() {  # binary threads dir
  # shellcheck disable=SC2086  # $size is empty (full) or one flag
  EXMY_PYTHON=/nonexistent/python "$1" report "$section" --out "$3" $size --threads "$2" \
    >/dev/null 2>"$3.log" || {
    echo "$0: $1 report failed (log: $3.log)" >&2
    tail -5 "$3.log" >&2
    exit 1
  }
}
run "$exmy" 1 "$work/t1"
run "$exmy" 2 "$work/t2"
[ -n "$ref" ] && run "$ref" 2 "$work/ref"
status=0
n=0
while IFS= read -r f; do
  rel=${f#"$work/t1/"}
  n=$((n + 1))
  cmp -s "$f" "$work/t2/$rel" || {
    echo "DIFFERS (1 vs 2 threads): $rel"
    status=1
  }
  if [ -n "$ref" ]; then
    cmp -s "$f" "$work/ref/$rel" || {
      echo "DIFFERS (vs $ref): $rel"
      status=1
    }
  fi
done < <(find "$work/t1" -name '*.csv' | sort)
for d in t2 ${ref:+ref}; do  # no CSV that the first run lacks
  m=$(find "$work/$d" -name '*.csv' | wc -l)
  [ "$m" = "$n" ] || {
    echo "DIFFERS: $d has $m CSVs, the 1-thread run $n"
    status=1
  }
done
echo "report-csv-identity: $n CSVs, section $section, size ${size:---full}," \
  "threads 1 vs 2${ref:+, vs $ref}: $([ $status = 0 ] && echo identical || echo DIFFERENT)"
exit $status
