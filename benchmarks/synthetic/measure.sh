#!/usr/bin/env bash
# Score `dynalint check` on the synthetic held-out cases with eval-public's scorer.
# usage: benchmarks/synthetic/measure.sh [dynalint check args, e.g. --scope all] [-- score.py args, e.g. -v]
# env:   PY (interpreter with dynalint; default: the repo's .venv), EVAL_PUBLIC (folder holding eval-public's
#        score.py; default: found under ../shared).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../measure_common.sh"
find_shared EVAL_PUBLIC eval-public
split_args "$@"

T=$(mktemp -d)
"$PY" -m dynalint check --no-cache --format json "${check_args[@]}" "$HERE/cases" > "$T/synthetic.json" 2> "$T/synthetic.err" || true
echo "== synthetic ${check_args[*]}"
"$PY" "$EVAL_PUBLIC/score.py" --diagnostics "$T/synthetic.json" --labels "$HERE/labels.json" "${score_args[@]}"
echo "(outputs in $T)"
