#!/usr/bin/env bash
# Score `dynalint check` on the held-out real-code labels: install the labelled libraries' sources, check them, score.
# usage: benchmarks/realcode4/measure.sh [dynalint check args, e.g. --scope all] [-- score_zoo args, e.g. -v]
# env:   PY (interpreter with dynalint; default: the repo's .venv), REALCODE4_SITE (where the sources go;
#        default ~/.cache/dynalint-realcode4/site-packages, reused while requirements.txt is unchanged),
#        SCORE_ZOO (eval-zoo's score_zoo.py; default: found under ../shared).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../measure_common.sh"
find_shared SCORE_ZOO eval-zoo/score_zoo.py
split_args "$@"
score_site_sources realcode4 REALCODE4_SITE
