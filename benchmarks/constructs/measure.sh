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
score_labelled_folder constructs
