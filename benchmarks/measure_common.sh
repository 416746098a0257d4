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
