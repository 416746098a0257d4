#!/usr/bin/env bash
# Score `dynalint check` on the synthetic held-out cases with eval-public's scorer.
# usage: benchmarks/synthetic/measure.sh [dynalint check args, e.g. --scope all] [-- score.py args, e.g. -v]
# env:   PY (interpreter with dynalint; default: the repo's .venv), EVAL_PUBLIC (folder holding eval-public's
#        score.py; default: found under ../shared).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
if [ -z "${EVAL_PUBLIC:-}" ]; then
  for c in "$ROOT/../shared/eval-public" /work/shared/eval-public; do
    [ -f "$c/score.py" ] && EVAL_PUBLIC=$c && break
  done
fi
[ -n "${EVAL_PUBLIC:-}" ] || { echo "eval-public's score.py not found: set EVAL_PUBLIC" >&2; exit 2; }

check_args=(); score_args=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; score_args=("$@"); break; fi
  check_args+=("$1"); shift
done

T=$(mktemp -d)
"$PY" -m dynalint check --no-cache --format json "${check_args[@]}" "$HERE/cases" > "$T/synthetic.json" 2> "$T/synthetic.err" || true
echo "== synthetic ${check_args[*]}"
"$PY" "$EVAL_PUBLIC/score.py" --diagnostics "$T/synthetic.json" --labels "$HERE/labels.json" "${score_args[@]}"
echo "(outputs in $T)"
