"""Regenerates :mod:`dynalint.analysis.tensor_members` from the installed torch.

    python -m dynalint.verify.tensor_members_table > lint/analysis/tensor_members.py

The attributes and methods every tensor has (``dir(torch.Tensor)``): a value the analysis took for a
tensor only because it could not type it (an untyped parameter) and whose code reads another attribute
(``cfg.temperature``) is no tensor.  And the methods that change a tensor's shape or strides in place
(``unsqueeze_``, ``t_``), which Dynamo does not trace on a tensor it was given.
"""
from __future__ import annotations

import sys


def members() -> list[str]:
    import torch

    return sorted(dir(torch.Tensor))


def inplace_view_methods() -> list[str]:
    """The methods whose aten op's first overload carries the ``inplace_view`` tag: Dynamo breaks on getting
    one of a tensor the compiled code was given ("Getting an inplace view on a graph input is not supported",
    ``TensorVariable.var_getattr`` of torch 2.13 asks exactly this)."""
    import torch

    out = []
    for name in members():
        op = getattr(torch.ops.aten, name, None)
        overloads = op.overloads() if op is not None and hasattr(op, "overloads") else []
        first = getattr(op, overloads[0], None) if overloads else None
        if first is not None and torch.Tag.inplace_view in first.tags:
            out.append(name)
    return out


def main() -> None:
    import torch

    w = sys.stdout.write
    version = torch.__version__.split("+")[0]
    w(f'"""The attributes and methods of ``torch.Tensor`` (generated from torch {version} by\n'
      '``python -m dynalint.verify.tensor_members_table``; do not edit)."""\n\n'
      "TENSOR_MEMBERS: frozenset[str] = frozenset({\n")
    for name in members():
        w(f"    {name!r},\n")
    w("})\n\n"
      "#: methods that change a tensor's shape or strides in place (their aten op is tagged\n"
      "#: ``inplace_view``): Dynamo breaks on getting one of a tensor the compiled code was given\n"
      "INPLACE_VIEW_METHODS: frozenset[str] = frozenset({\n")
    for name in inplace_view_methods():
        w(f"    {name!r},\n")
    w("})\n")


if __name__ == "__main__":
    main()
