"""Regenerates :mod:`dynalint.analysis.nn_functionals` from the installed torch.

    python -m dynalint.verify.nn_functionals_table > lint/analysis/nn_functionals.py

A ``torch.nn`` module whose ``forward`` is one ``return F.<name>(...)`` statement does, when it is called,
what that function does: Dynamo inlines the ``forward`` (``nn.CTCLoss()(...)`` breaks where ``F.ctc_loss``
does, inside ``torch/nn/modules/loss.py``).  Read from the source of each module's ``forward``; a module
whose ``forward`` does more is not listed.  Also read there: the masks a transformer module checks for
causality when it is given no ``is_causal`` flag (:func:`causal_mask_table`).
"""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import NamedTuple


class _Forward(NamedTuple):
    """A ``torch.nn`` module class that defines ``forward``, with that method's parsed source."""

    cls: type
    node: ast.FunctionDef
    params: list[str]
    """The parameters of ``forward`` after ``self``."""


def _forwards() -> dict[str, _Forward]:
    """The ``torch.nn`` module classes that define ``forward`` and whose source can be read, by class name."""
    import torch.nn as nn

    out: dict[str, _Forward] = {}
    for name in sorted(dir(nn)):
        cls = getattr(nn, name)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)) or "forward" not in cls.__dict__:
            continue
        try:
            node = ast.parse(textwrap.dedent(inspect.getsource(cls.forward))).body[0]
        except (OSError, TypeError, SyntaxError):
            continue
        out[name] = _Forward(cls, node, list(inspect.signature(cls.forward).parameters)[1:])  # type: ignore[arg-type]
    return out


def modules_table(forwards: dict[str, _Forward]) -> dict[str, str]:
    """``torch.nn.<Class>`` -> the ``torch.nn.functional`` function its ``forward`` returns the call of."""
    table: dict[str, str] = {}
    for name, forward in forwards.items():
        body = [s for s in forward.node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return):
            continue
        call = body[0].value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "F":
            table[f"torch.nn.{name}"] = call.func.attr
    return table


def causal_mask_table(forwards: dict[str, _Forward]) -> dict[str, list[tuple[str, int, str, int]]]:
    """``torch.nn.<Class>`` -> (mask parameter, its position, causal-flag parameter, its position) for each mask
    whose ``forward`` hands to ``_detect_is_causal_mask`` (directly, or through a submodule its ``__init__``
    builds of such a class: ``nn.Transformer``'s encoder and decoder).  Given a mask and no flag, that helper
    compares the mask with a causal one and reads the answer with ``bool(...)``: Dynamo breaks there unless
    ``capture_scalar_outputs`` is on (measured on torch 2.13)."""
    table: dict[str, list[tuple[str, int, str, int]]] = {}
    for name, (_, node, params) in forwards.items():
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "_detect_is_causal_mask" \
                    and len(call.args) >= 2 and all(isinstance(a, ast.Name) and a.id in params
                                                    for a in call.args[:2]):
                mask, causal = call.args[0].id, call.args[1].id  # type: ignore[attr-defined]
                table.setdefault(f"torch.nn.{name}", []).append(
                    (mask, params.index(mask), causal, params.index(causal)))
    for name, (cls, node, params) in forwards.items():
        if f"torch.nn.{name}" in table:
            continue
        init = inspect.getsource(cls.__init__)
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):
                continue
            built = next((c for c in forwards if f"self.{call.func.attr} = {c}(" in init), None)
            given = {k.arg: k.value.id for k in call.keywords
                     if isinstance(k.value, ast.Name) and k.value.id in params}
            for mask, _, causal, _ in table.get(f"torch.nn.{built}", []) if built is not None else []:
                if mask in given and causal in given:
                    table.setdefault(f"torch.nn.{name}", []).append(
                        (given[mask], params.index(given[mask]), given[causal], params.index(given[causal])))
    return table


def main() -> None:
    import torch

    w = sys.stdout.write
    w(f'"""The ``torch.nn`` modules that are one call of a ``torch.nn.functional`` function (generated from torch '
      f'{torch.__version__.split("+")[0]}\n'
      'by ``python -m dynalint.verify.nn_functionals_table``; do not edit)."""\n\n')
    w("MODULE_FUNCTIONALS: dict[str, str] = {\n")
    forwards = _forwards()
    for name, fn in modules_table(forwards).items():
        w(f"    {name!r}: {fn!r},\n")
    w("}\n")
    w("\n#: module -> (mask parameter, position, causal-flag parameter, position) for each mask its ``forward``\n"
      "#: checks for causality when no flag is given, reading a tensor's data (see the generator)\n")
    w("CAUSAL_MASK_CHECKS: dict[str, tuple[tuple[str, int, str, int], ...]] = {\n")
    for name, checks in sorted(causal_mask_table(forwards).items()):
        w(f"    {name!r}: {tuple(checks)!r},\n")
    w("}\n")


if __name__ == "__main__":
    main()
