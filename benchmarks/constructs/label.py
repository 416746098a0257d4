#!/usr/bin/env python
"""Label the construct cases of this folder with real Dynamo, by userfiles' labeller run on this folder.

Every ``*_cases.py`` runs as ``__main__`` in a fresh subprocess (one thread, ``torch.manual_seed(0)``,
``backend="eager"``); breaks, traced lines and recompile causes are recorded as for ``benchmarks/userfiles``
into ``labels.json`` here. Arguments are userfiles' ``label.py``'s (``--summary``, ``--reparse``, files).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    spec = importlib.util.spec_from_file_location("userfiles_label", HERE.parent / "userfiles" / "label.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    mod.main(["--dir", str(HERE), *sys.argv[1:]])


if __name__ == "__main__":
    main()
