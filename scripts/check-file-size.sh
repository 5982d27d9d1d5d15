#!/usr/bin/env bash
# Fails when a tracked (or new, not ignored) source file of sim/, gpu/, cli/, reports/ or python/
# has more than 1,000 lines (issue 31's rule: a file says what is inside it; one that grows past
# this is two files). Exit 0 when every file is within the limit, 1 listing those over it
# (lines, path). CI runs it beside the format check (.ci/run).
#   scripts/check-file-size.sh [LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-1000}
over=0
while IFS= read -r f; do
  case "$f" in
    *.c | *.h | *.cc | *.cpp | *.hpp | *.cu | *.cuh | *.py | *.pyi | *.inc) ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue
  n=$(wc -l < "$f")
  if [ "$n" -gt "$limit" ]; then
    printf '%6d %s\n' "$n" "$f"
    over=$((over + 1))
  fi
done < <(git ls-files --cached --others --exclude-standard sim gpu cli reports python)
if [ "$over" -gt 0 ]; then
  echo "check-file-size: $over file(s) over $limit lines" >&2
  exit 1
fi
