#!/usr/bin/env python
"""Label the cases in ``cases/`` with eval-public's labeller (real Dynamo), writing ``labels.json`` here.

eval-public's ``label.py`` reads the cases next to itself; this loads it as a module and points it at this
folder, so both sets share one labelling protocol. Arguments go to that labeller (``--only``, ``--verbose``).
Set EVAL_PUBLIC to the eval-public folder when it is not found next to the repository.
"""
from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def find_eval_public() -> str:
    candidates = [os.environ.get("EVAL_PUBLIC", ""), os.path.join(ROOT, "..", "shared", "eval-public"),
                  "/work/shared/eval-public"]
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, "label.py")):
            return os.path.abspath(c)
    raise SystemExit("eval-public's label.py not found: set EVAL_PUBLIC")


def load_labeller():
    path = os.path.join(find_eval_public(), "label.py")
    spec = importlib.util.spec_from_file_location("eval_public_label", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cases = os.path.join(HERE, "cases")
    mod.HERE, mod.CASES_DIR, mod.LABELS_PATH = HERE, cases, os.path.join(HERE, "labels.json")
    prefixes = {(os.path.realpath(cases) + os.sep, ""), (cases + os.sep, ""), (HERE + os.sep, "")}
    mod._PREFIXES = sorted(set(mod._PREFIXES) | prefixes, key=lambda kv: -len(kv[0]))
    return mod


if __name__ == "__main__":
    sys.exit(load_labeller().main(sys.argv[1:]))
