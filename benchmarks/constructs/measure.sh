#!/usr/bin/env bash
# Score `dynalint check` on the construct cases of this folder: graph breaks with eval-zoo's score_zoo.py,
# recompile findings with userfiles' score_recompiles.py, both against labels.json.
# usage: benchmarks/constructs/measure.sh [dynalint check args, e.g. --scope all] [-- scorer args, e.g. -v]
# env:   PY (interpreter with dynalint; default: the repo's .venv), SCORE_ZOO (eval-zoo's score_zoo.py;
#        default: found under ../shared).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../measure_common.sh"
find_shared SCORE_ZOO eval-zoo/score_zoo.py
split_args "$@"

mapfile -t files < <("$PY" -c 'import json,sys; [print(r["spec"]) for r in json.load(open(sys.argv[1]))]' "$HERE/labels.json")
T=$(mktemp -d)
(cd "$ROOT" && "$PY" -m dynalint check --no-cache --format json "${check_args[@]}" \
  $(printf "benchmarks/constructs/%s " "${files[@]}")) > "$T/constructs.json" 2> "$T/constructs.err" || true
echo "== constructs ${check_args[*]}: graph breaks"
"$PY" "$SCORE_ZOO" "$T/constructs.json" --labels "$HERE/labels.json" --site-packages "$HERE" "${score_args[@]}"
echo "== constructs ${check_args[*]}: recompiles"
"$PY" "$HERE/../userfiles/score_recompiles.py" "$T/constructs.json" --labels "$HERE/labels.json" \
  --scorer "$SCORE_ZOO" "${score_args[@]}"
echo "(outputs in $T)"
