# Sourced by the measure.sh scripts of benchmarks/*/: the repository's interpreter, a scorer of the shared
# evaluation sets found beside the repository, and the arguments split at `--` into `dynalint check`'s
# and the scorer's.
# usage (after setting HERE): source "$HERE/../measure_common.sh"; find_shared VAR eval-zoo/score_zoo.py; split_args "$@"
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}

# find_shared VAR REL: VAR (unless already set) is the file REL under ../shared (or /work/shared)
find_shared() {
  local var=$1 rel=$2 c
  if [ -z "${!var:-}" ]; then
    for c in "$ROOT/../shared/$rel" "/work/shared/$rel"; do
      [ -e "$c" ] && printf -v "$var" '%s' "$c" && break
    done
  fi
  [ -n "${!var:-}" ] || { echo "$rel not found: set $var" >&2; exit 2; }
}

# split_args ARGS...: check_args before `--`, score_args after it
split_args() {
  check_args=(); score_args=()
  while [ $# -gt 0 ]; do
    if [ "$1" = "--" ]; then shift; score_args=("$@"); break; fi
    check_args+=("$1"); shift
  done
}

# score_labelled_folder NAME: check the scripts labels.json of $HERE names and score them, graph breaks with
# eval-zoo's score_zoo.py ($SCORE_ZOO) and recompile findings with userfiles' score_recompiles.py
score_labelled_folder() {
  local name=$1 T files
  mapfile -t files < <("$PY" -c 'import json,sys; [print(r["spec"]) for r in json.load(open(sys.argv[1]))]' "$HERE/labels.json")
  T=$(mktemp -d)
  (cd "$ROOT" && "$PY" -m dynalint check --no-cache --format json "${check_args[@]}" \
    $(printf "benchmarks/$name/%s " "${files[@]}")) > "$T/$name.json" 2> "$T/$name.err" || true
  echo "== $name ${check_args[*]}: graph breaks"
  "$PY" "$SCORE_ZOO" "$T/$name.json" --labels "$HERE/labels.json" --site-packages "$HERE" "${score_args[@]}"
  echo "== $name ${check_args[*]}: recompiles"
  "$PY" "$ROOT/benchmarks/userfiles/score_recompiles.py" "$T/$name.json" --labels "$HERE/labels.json" \
    --scorer "$SCORE_ZOO" "${score_args[@]}"
  echo "(outputs in $T)"
}
