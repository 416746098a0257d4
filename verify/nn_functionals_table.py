"""Regenerates :mod:`dynalint.analysis.nn_functionals` from the installed torch.

    python -m dynalint.verify.nn_functionals_table > lint/analysis/nn_functionals.py

A ``torch.nn`` module whose ``forward`` is one ``return F.<name>(...)`` statement does, when it is called,
what that function does: Dynamo inlines the ``forward`` (``nn.CTCLoss()(...)`` breaks where ``F.ctc_loss``
does, inside ``torch/nn/modules/loss.py``).  Read from the source of each module's ``forward``; a module
whose ``forward`` does more is not listed.
"""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap


def modules_table() -> dict[str, str]:
    """``torch.nn.<Class>`` -> the ``torch.nn.functional`` function its ``forward`` returns the call of."""
    import torch.nn as nn

    table: dict[str, str] = {}
    for name in sorted(dir(nn)):
        cls = getattr(nn, name)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)) or "forward" not in cls.__dict__:
            continue
        try:
            fn = ast.parse(textwrap.dedent(inspect.getsource(cls.forward))).body[0]
        except (OSError, TypeError, SyntaxError):
            continue
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return):
            continue
        call = body[0].value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "F":
            table[f"torch.nn.{name}"] = call.func.attr
    return table


def main() -> None:
    import torch

    w = sys.stdout.write
    w(f'"""The ``torch.nn`` modules that are one call of a ``torch.nn.functional`` function (generated from torch '
      f'{torch.__version__.split("+")[0]}\n'
      'by ``python -m dynalint.verify.nn_functionals_table``; do not edit)."""\n\n')
    w("MODULE_FUNCTIONALS: dict[str, str] = {\n")
    for name, fn in modules_table().items():
        w(f"    {name!r}: {fn!r},\n")
    w("}\n")


if __name__ == "__main__":
    main()
