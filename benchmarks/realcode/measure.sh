#!/usr/bin/env bash
# Score `dynalint check` on the real-code labels: install the labelled libraries' sources, check them, score.
# usage: benchmarks/realcode/measure.sh [dynalint check args, e.g. --scope all] [-- score_zoo args, e.g. -v]
# env:   PY (interpreter with dynalint; default: the repo's .venv), REALCODE_SITE (where the sources go;
#        default ~/.cache/dynalint-realcode/site-packages, reused while requirements.txt is unchanged),
#        SCORE_ZOO (eval-zoo's score_zoo.py; default: found under ../shared).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../measure_common.sh"
S=${REALCODE_SITE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynalint-realcode/site-packages}
find_shared SCORE_ZOO eval-zoo/score_zoo.py
split_args "$@"

stamp=$(sha256sum "$HERE/requirements.txt" | cut -c1-16)
if [ ! -f "$S/.installed-$stamp" ]; then
  # only a folder this script filled (it holds a stamp of an older requirements.txt) is emptied
  if [ -d "$S" ] && [ -n "$(ls -A "$S")" ] && ! compgen -G "$S/.installed-*" > /dev/null; then
    echo "$S is not empty and was not made by $(basename "$0"): set REALCODE_SITE to a new folder" >&2
    exit 2
  fi
  rm -rf "$S" && mkdir -p "$S" "$(dirname "$S")"
  "$PY" -m pip install --quiet --no-deps --target "$S" -r "$HERE/requirements.txt" > "$S.pip.log" 2>&1 \
    || { cat "$S.pip.log" >&2; exit 2; }
  touch "$S/.installed-$stamp"
fi

[ -s "$HERE/files.txt" ] || { echo "no $HERE/files.txt: run label.py first" >&2; exit 2; }
T=$(mktemp -d)
"$PY" -m dynalint check --no-cache --format json "${check_args[@]}" $(sed "s#^#$S/#" "$HERE/files.txt") \
  > "$T/realcode.json" 2> "$T/realcode.err" || true
echo "== realcode ${check_args[*]}"
"$PY" "$SCORE_ZOO" "$T/realcode.json" --labels "$HERE/labels.json" --site-packages "$S" "${score_args[@]}"
echo "(outputs in $T)"
