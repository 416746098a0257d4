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

# score_site_sources NAME SITE_VAR: install $HERE/requirements.txt's sources (no dependencies) into the folder
# SITE_VAR names (default ~/.cache/dynalint-NAME/site-packages, reused while requirements.txt is unchanged),
# check the files $HERE/files.txt lists there and score them against $HERE/labels.json with $SCORE_ZOO
score_site_sources() {
  local name=$1 site_var=$2 S stamp T
  S=${!site_var:-${XDG_CACHE_HOME:-$HOME/.cache}/dynalint-$name/site-packages}
  stamp=$(sha256sum "$HERE/requirements.txt" | cut -c1-16)
  if [ ! -f "$S/.installed-$stamp" ]; then
    # only a folder this function filled (it holds a stamp of an older requirements.txt) is emptied
    if [ -d "$S" ] && [ -n "$(ls -A "$S")" ] && ! compgen -G "$S/.installed-*" > /dev/null; then
      echo "$S is not empty and was not made by measure.sh: set $site_var to a new folder" >&2
      exit 2
    fi
    rm -rf "$S" && mkdir -p "$S" "$(dirname "$S")"
    "$PY" -m pip install --quiet --no-deps --target "$S" -r "$HERE/requirements.txt" > "$S.pip.log" 2>&1 \
      || { cat "$S.pip.log" >&2; exit 2; }
    touch "$S/.installed-$stamp"
  fi
  [ -s "$HERE/files.txt" ] || { echo "no $HERE/files.txt: label first" >&2; exit 2; }
  T=$(mktemp -d)
  "$PY" -m dynalint check --no-cache --format json "${check_args[@]}" $(sed "s#^#$S/#" "$HERE/files.txt") \
    > "$T/$name.json" 2> "$T/$name.err" || true
  echo "== $name ${check_args[*]}"
  "$PY" "$SCORE_ZOO" "$T/$name.json" --labels "$HERE/labels.json" --site-packages "$S" "${score_args[@]}"
  echo "(outputs in $T)"
}
