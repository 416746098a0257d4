#!/usr/bin/env bash
# Score `dynalint check` on the user scripts of this folder: graph breaks with eval-zoo's score_zoo.py,
# recompile findings with score_recompiles.py, both against labels.json.
# usage: benchmarks/userfiles/measure.sh [dynalint check args, e.g. --scope all] [-- scorer args, e.g. -v]
# env:   PY (interpreter with dynalint; default: the repo's .venv), SCORE_ZOO (eval-zoo's score_zoo.py;
#        default: found under ../shared).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
if [ -z "${SCORE_ZOO:-}" ]; then
  for c in "$ROOT/../shared/eval-zoo/score_zoo.py" /work/shared/eval-zoo/score_zoo.py; do
    [ -f "$c" ] && SCORE_ZOO=$c && break
  done
fi
[ -n "${SCORE_ZOO:-}" ] || { echo "score_zoo.py not found: set SCORE_ZOO" >&2; exit 2; }

check_args=(); score_args=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; score_args=("$@"); break; fi
  check_args+=("$1"); shift
done

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
