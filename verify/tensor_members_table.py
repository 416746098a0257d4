"""Regenerates :mod:`dynalint.analysis.tensor_members` from the installed torch.

    python -m dynalint.verify.tensor_members_table > lint/analysis/tensor_members.py

The attributes and methods every tensor has (``dir(torch.Tensor)``): a value the analysis took for a
tensor only because it could not type it (an untyped parameter) and whose code reads another attribute
(``cfg.temperature``) is no tensor.
"""
from __future__ import annotations

import sys


def members() -> list[str]:
    import torch

    return sorted(dir(torch.Tensor))


def main() -> None:
    import torch

    w = sys.stdout.write
    version = torch.__version__.split("+")[0]
    w(f'"""The attributes and methods of ``torch.Tensor`` (generated from torch {version} by\n'
      '``python -m dynalint.verify.tensor_members_table``; do not edit)."""\n\n'
      "TENSOR_MEMBERS: frozenset[str] = frozenset({\n")
    for name in members():
        w(f"    {name!r},\n")
    w("})\n")


if __name__ == "__main__":
    main()
