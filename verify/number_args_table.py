"""Regenerates :mod:`dynalint.analysis.number_args` from the installed torch.

    python -m dynalint.verify.number_args_table > lint/analysis/number_args.py

A parameter is listed when torch's own signature says it takes a Python number or a list of
numbers (``int``, ``SymInt``, ``float``, ``Scalar``, ``int[]``...) and no overload accepts a tensor
there: a tensor passed there has to become a Python number, which Dynamo cannot do while tracing
(measured on torch 2.13 for ``Scalar`` parameters too: ``x.add(y, alpha=t)``, ``torch.full_like(x, t)``,
``torch.threshold(x, t, 0)`` and ``torch.addcmul(x, a, b, value=t)`` break on a computed ``t``).
"""
from __future__ import annotations

import collections
import inspect
import re
import sys

_NUM = re.compile(r"^(SymInt|int|float|Scalar)(\[\d*\])?\??$")
_LIST = re.compile(r"^(SymInt|int)\[\d*\]\??$")
_PY_NUM = re.compile(r"^(int|float|list\[int\]|list\[float\]|tuple\[int, \.\.\.\]|sequence\[int\]"
                     r"|broadcastinglist\d\[(int|float)\]|_size(_\w+)?|_ratio_any_t)$")


#: TorchScript builtins that share a name with a Python-level torch function taking tensors or
#: objects (``torch.tensor(t)`` copies a tensor without breaking; measured on 2.13).
#: parameters Dynamo traces with a tensor in them although torch's signature takes a number there
#: (``torch.full``'s fill value becomes a ``fill_`` of the new tensor; measured on 2.13)
_TRACED_PARAMETERS = {"full": "fill_value"}

_NOT_OPS = frozenset({"tensor", "Size", "Generator", "device", "manual_seed", "broadcast_shapes",
                      "sym_constrain_range", "sym_constrain_range_for_size", "from_file", "empty_quantized"})


def _split(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([" and 1 or ch in ")]" and -1 or 0
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _tensorish(t: str) -> bool:
    return "Tensor" in t or t == "Any"


def aten_table() -> dict[str, tuple]:
    import torch

    ops: dict[str, list] = collections.defaultdict(list)
    for s in torch._C._jit_get_all_schemas():
        if not s.name.startswith("aten::") or s.name.startswith("aten::_") or "out" in s.overload_name:
            continue
        text = str(s)
        pos, kw, kwonly = [], {}, False
        for a in _split(text[text.index("(") + 1: text.rindex(") ->")]):
            if a == "*":
                kwonly = True
                continue
            a = a.split("=")[0].strip()
            if " " not in a or ("!" in a and kwonly):
                continue
            t, n = a.rsplit(" ", 1)
            t = re.sub(r"\(.*?\)", "", t)
            if kwonly:
                kw[n] = t
            else:
                pos.append((n, t))
        ops[s.name[6:]].append((pos, kw))
    table = {}
    for name, ovs in sorted(ops.items()):
        if name in _NOT_OPS or not any(hasattr(m, name) for m in (torch, torch.Tensor, torch._C._nn, torch._C._fft,
                                                                   torch._C._linalg, torch._C._special)):
            continue
        traced = _TRACED_PARAMETERS.get(name)
        if traced is not None:  # (taken as a parameter that accepts a tensor)
            ovs = [([(n, "Tensor" if n == traced else t) for n, t in p],
                    {n: "Tensor" if n == traced else t for n, t in kw.items()}) for p, kw in ovs]
        if any(any("Tensor" in t for _, t in p) for p, _ in ovs):  # drop TorchScript list/number overloads
            ovs = [(p, kw) for p, kw in ovs if any("Tensor" in t for _, t in p)]
        width = max(len(p) for p, _ in ovs)
        at = [[p[i][1] for p, _ in ovs if len(p) > i] for i in range(width)]
        positions = tuple(i for i, ts in enumerate(at) if not any(map(_tensorish, ts)) and any(map(_NUM.match, ts)))
        lasts = [p[-1][1] for p, _ in ovs if p]
        varargs = len({len(p) for p, _ in ovs}) == 1 and any(map(_LIST.match, lasts)) and not any(map(_tensorish, lasts))
        types = collections.defaultdict(list)
        for p, kw in ovs:
            for n, t in [*p, *kw.items()]:
                types[n].append(t)
        keywords = tuple(sorted(n for n, ts in types.items()
                                if not any(map(_tensorish, ts)) and any(map(_NUM.match, ts))))
        has_self = all(p and p[0][1].startswith("Tensor") and "[]" not in p[0][1] for p, _ in ovs)
        if positions or keywords:
            table[name] = (positions, varargs, keywords, has_self)
    return table


def functional_table() -> dict[str, tuple]:
    import torch.nn.functional as F

    table = {}
    for name in sorted(dir(F)):
        f = getattr(F, name)
        if name.startswith("_") or not callable(f) or inspect.isclass(f):
            continue
        try:
            params = list(inspect.signature(f).parameters.values())
        except (TypeError, ValueError):
            continue
        positions, keywords = [], []
        for i, p in enumerate(params):
            ann = p.annotation if isinstance(p.annotation, str) else (
                p.annotation.__name__ if isinstance(p.annotation, type) else str(p.annotation))
            ann = ann.replace("typing.", "").replace(" | None", "").replace("Optional[", "").lower().rstrip("]")
            ann = ann + "]" if ann.count("[") > ann.count("]") else ann
            if p.annotation is inspect.Parameter.empty or not _PY_NUM.match(ann) or p.name.startswith("_"):
                continue
            keywords.append(p.name)
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positions.append(i)
        if keywords:
            table[name] = (tuple(positions), False, tuple(sorted(keywords)), True)
    return table


def main() -> None:
    import torch

    w = sys.stdout.write
    w(f'"""Parameters of torch ops that take Python numbers (generated from torch {torch.__version__.split("+")[0]}\n'
      "by ``python -m dynalint.verify.number_args_table``; do not edit).\n\n"
      "Each entry: (positions, varargs, keywords, has_self).  Positions count the tensor ``self``\n"
      "first when ``has_self`` (a method call's first argument is position 1); ``varargs``: the last\n"
      'parameter is a size that may be spread over the remaining positional arguments.\n"""\n\n')
    for title, table in (("TORCH", aten_table()), ("FUNCTIONAL", functional_table())):
        w(f"{title}: dict[str, tuple[tuple[int, ...], bool, tuple[str, ...], bool]] = {{\n")
        for name, entry in table.items():
            w(f"    {name!r}: {entry!r},\n")
        w("}\n\n")


if __name__ == "__main__":
    main()
