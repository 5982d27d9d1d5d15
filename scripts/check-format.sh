#!/usr/bin/env bash
# Lists the C, C++ and CUDA sources that clang-format (the root .clang-format) would change.
#   scripts/check-format.sh                  every tracked and new (not ignored) source
#   scripts/check-format.sh --since COMMIT   only sources changed since COMMIT (committed, staged,
#                                            unstaged or new), e.g. --since origin/main in a PR
#   scripts/check-format.sh [--since C] FILE...   only these files (of those above)
#   scripts/check-format.sh --fix ...        rewrite the listed files in place instead
# Exit 0 when no file would change, 1 listing them (one path a line, then a count on stderr),
# 2 on bad usage or without clang-format. CLANG_FORMAT picks the binary (default clang-format;
# Debian 12's is version 14, and other versions may format some constructs differently).
# CI runs it on every source (.ci/run; clang-format installed where missing). While others edit
# the same tree, run it with --since on your own change, and --fix only on files you own.
set -euo pipefail
cd "$(dirname "$0")/.."
cf="${CLANG_FORMAT:-clang-format}"
since=""
fix=0
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --since)
      [ $# -ge 2 ] || { echo "check-format: --since needs a commit" >&2; exit 2; }
      since="$2"
      shift 2
      ;;
    --fix) fix=1; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-format: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
command -v "$cf" >/dev/null || { echo "check-format: $cf not found" >&2; exit 2; }

pattern='\.(c|h|cc|cpp|hpp|cu|cuh)$'
if [ -n "$since" ]; then
  git rev-parse --verify --quiet "$since^{commit}" >/dev/null ||
    { echo "check-format: '$since' is not a commit" >&2; exit 2; }
  candidates=$( { git diff --name-only --diff-filter=d "$since" --;
                  git ls-files --others --exclude-standard; } | sort -u)
else
  candidates=$(git ls-files --cached --others --exclude-standard | sort -u)
fi
candidates=$(printf '%s\n' "$candidates" | grep -E "$pattern" || true)
if [ ${#files[@]} -gt 0 ]; then
  candidates=$(printf '%s\n' "$candidates" | grep -Fxf <(printf '%s\n' "${files[@]}") || true)
fi

flagged=()
while IFS= read -r f; do
  [ -n "$f" ] && [ -f "$f" ] || continue
  if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
    flagged+=("$f")
  fi
done <<< "$candidates"

if [ ${#flagged[@]} -eq 0 ]; then
  echo "check-format: $(printf '%s\n' "$candidates" | grep -c . || true) files, all formatted" >&2
  exit 0
fi
if [ "$fix" = 1 ]; then
  "$cf" --style=file -i "${flagged[@]}"
  printf '%s\n' "${flagged[@]}"
  echo "check-format: ${#flagged[@]} files rewritten" >&2
  exit 0
fi
printf '%s\n' "${flagged[@]}"
echo "check-format: ${#flagged[@]} of $(printf '%s\n' "$candidates" | grep -c .) files would" \
     "change (scripts/check-format.sh --fix FILE... rewrites them)" >&2
exit 1
