#!/usr/bin/env bash
# Score `dynalint check` on the user scripts of this folder: graph breaks with eval-zoo's score_zoo.py,
# recompile findings with score_recompiles.py, both against labels.json.
# usage: benchmarks/userfiles/measure.sh [dynalint check args, e.g. --scope all] [-- scorer args, e.g. -v]
# env:   PY (interpreter with dynalint; default: the repo's .venv), SCORE_ZOO (eval-zoo's score_zoo.py;
#        default: found under ../shared).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../measure_common.sh"
find_shared SCORE_ZOO eval-zoo/score_zoo.py
split_args "$@"

# the labelled scripts (label.py and the scorer are not part of the population)
mapfile -t files < <("$PY" -c 'import json,sys; [print(r["spec"]) for r in json.load(open(sys.argv[1]))]' "$HERE/labels.json")
T=$(mktemp -d)
(cd "$ROOT" && "$PY" -m dynalint check --no-cache --format json "${check_args[@]}" \
  $(printf "benchmarks/userfiles/%s " "${files[@]}")) > "$T/userfiles.json" 2> "$T/userfiles.err" || true
echo "== userfiles ${check_args[*]}: graph breaks"
"$PY" "$SCORE_ZOO" "$T/userfiles.json" --labels "$HERE/labels.json" --site-packages "$HERE" "${score_args[@]}"
echo "== userfiles ${check_args[*]}: recompiles"
"$PY" "$HERE/score_recompiles.py" "$T/userfiles.json" --labels "$HERE/labels.json" --scorer "$SCORE_ZOO" "${score_args[@]}"
echo "(outputs in $T)"
