"""Types the analysis follows through the program: casts returned by helpers of other modules, boolean
masks made by products, 0-d masks, annotated dicts of tensors, NumPy arrays (which Dynamo traces as
tensors), copies (``copy.deepcopy(t)`` is a tensor, made where the graph breaks; ``dataclasses.asdict`` and
``astuple`` deep-copy a dataclass's fields), and the entries of a dict
filled key by key; a ``functools.partial`` that binds nothing, or binds keywords of a library class, calls it.

Each single-file case is also run under real Dynamo: the lines flagged must be the lines where its
graph-break log reports a break.
"""
from __future__ import annotations

import textwrap

from dynalint.config.settings import Settings
from dynalint.engine.runner import check_files

from helpers import break_lines, marked_case_tests


CASES = [
    ("numpy-arrays-are-tensors", """
        import numpy as np
        import torch

        def check_size(shape, patch):
            remainder = np.array(shape) % np.array(patch) > 0
            if remainder.any():  # breaks
                raise ValueError("spatial size must be a multiple of the patch size")

        def threshold_code(t, sr: float):
            if any(np.array(t) < 0):  # breaks
                return 0
            if not np.isfinite(sr) or sr < 0:  # breaks
                return 1
            return 2

        def f(x):
            check_size(x.shape[2:], (4, 4))
            n = threshold_code((0.5, 1.0), 0.5)
            h = x.shape[2]
            hp = int(np.ceil(h / 4)) * 4
            rows = x[0, 0][np.arange(4)]
            return x * n + hp + rows.sum()
    """, "f", "[(torch.randn(1, 1, 8, 8),)]"),
    ("zero-dim-boolean-mask", """
        import torch

        def f(x, y):
            s = x.sum()
            empty = s == 0
            s[empty] = 0  # breaks
            y = y.clone()
            y[y > 0] = 1.0
            return s, y
    """, "f", "[(torch.randn(4), torch.randn(4))]"),
    ("product-of-masks", """
        import torch

        def f(mat: torch.Tensor, labels: torch.Tensor):
            same = labels.unsqueeze(1) == labels.unsqueeze(0)
            picked = (~same) * (mat < 0.5)
            return mat[picked]  # breaks
    """, "f", "[(torch.rand(4, 4), torch.tensor([0, 1, 0, 1]))]"),
    ("cast-by-type", """
        import torch

        def to_dtype(x, dtype=None):
            if dtype is not None and x.dtype != dtype:
                x = x.type(dtype)
            return x

        def f(emb):
            mat = to_dtype(emb @ emb.t(), emb.dtype)
            return mat[mat > 0.5]  # breaks
    """, "f", "[(torch.randn(4, 3),)]"),
    # a return annotation through a type variable's bound, unpacked around a starred name
    ("type-variable-bound", """
        from typing import TypeVar

        import numpy as np
        import torch

        ArrayOrTensor = TypeVar("ArrayOrTensor", bound=np.ndarray | torch.Tensor)
        CONVERTERS = {"float": lambda t: t.float(), "long": lambda t: t.long()}

        def convert(data, kind="float") -> tuple[ArrayOrTensor, type]:
            return CONVERTERS[kind](data), type(data)

        def f(x):
            img, *_ = convert(x * 2)
            keep = img != 0
            return img[keep].sum()  # breaks
    """, "f", "[(torch.randn(4),)]"),
    ("copies-keep-their-type", """
        import copy

        import torch

        def f(x, c):
            v = copy.deepcopy(c)  # breaks
            if v > 2:  # breaks
                x = x + 1
            scales = copy.copy({"a": 2})  # breaks
            same = copy.copy((2, 2))[0] + {"a": 2}.copy()["a"]
            return x * v * scales["a"] * same
    """, "f", "[(torch.randn(4), torch.tensor(3))]"),
    ("copies-of-lists", """
        import copy
        from typing import List

        import torch

        def f(x, tokens: List[int]):
            views = [x + 1, x * 2]
            out = copy.copy(views)  # breaks
            ids = copy.copy(tokens)  # breaks
            ids.append(1)
            pair = copy.copy((x, x))
            return out[0] + pair[1] + len(ids)
    """, "f", "[(torch.randn(4), [1, 2])]"),
    ("dataclass-asdict", """
        import dataclasses

        import torch


        @dataclasses.dataclass
        class Box:
            lo: torch.Tensor
            hi: torch.Tensor


        @dataclasses.dataclass
        class Cfg:
            n: int = 2


        def f(x):
            d = dataclasses.asdict(Box(x, x + 1))  # breaks
            return (d["lo"] + d["hi"]) * dataclasses.asdict(Cfg())["n"]
    """, "f", "[(torch.randn(4),)]"),
    ("dataclass-astuple", """
        import dataclasses

        import torch


        @dataclasses.dataclass
        class Box:
            lo: torch.Tensor
            hi: torch.Tensor


        def f(x):
            t = dataclasses.astuple(Box(x, x * 2))  # breaks
            return t[0] + t[1]
    """, "f", "[(torch.randn(4),)]"),
    ("partials-of-library-callables", """
        from functools import partial

        import torch
        import torch.nn as nn

        Norm = partial(nn.LayerNorm, eps=1e-6)


        class Block(nn.Module):
            def __init__(self, dim=4):
                super().__init__()
                self.norm = Norm(dim)

            def forward(self, x):
                y = self.norm(x)
                return y[y > 0]  # breaks


        block = Block()


        def f(x):
            act = partial(nn.GELU, approximate="tanh")()
            clip = partial(torch.relu)
            y = clip(act(block(x)))
            return y[y > 0.5]  # breaks
    """, "f", "[(torch.randn(2, 4),)]"),
    ("a-dict-filled-key-by-key", """
        import torch

        def f(x):
            stats = {}
            stats["mean"] = x.mean()
            stats["max"] = x.max()
            return {k: float(v) for k, v in stats.items()}  # breaks
    """, "f", "[(torch.randn(4),)]"),
]


test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)


def test_annotated_dict_of_tensors_gives_its_entries_type() -> None:
    # the dict's entries come from calls the analysis cannot follow; the annotation says they are tensors
    assert break_lines("""
        import torch
        from typing import Dict
        from mylib import make_order, make_code

        def apply(x: torch.Tensor, params: Dict[str, torch.Tensor]) -> torch.Tensor:
            code = int(params["dtype"].item())
            return x * code

        @torch.compile
        def step(x):
            params = {"order": make_order(x), "dtype": make_code(x)}
            return apply(x, params)
    """) == {6}


def test_helpers_of_other_modules(tmp_path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text(textwrap.dedent("""
        import numpy as np
        import torch

        def to_dtype(x, dtype=None):
            if dtype is not None and x.dtype != dtype:
                x = x.type(dtype)
            return x

        def to_device(x, device=None, dtype=None):
            if device is not None and x.device != device:
                x = x.to(device)
            if dtype is not None:
                x = to_dtype(x, dtype=dtype)
            return x

        def padding(shape, k):
            return np.array(shape) % k
    """))
    (pkg / "loss.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn
        from . import util

        class Loss(nn.Module):
            def forward(self, emb, labels):
                mat = util.to_device(emb @ emb.t(), device=emb.device, dtype=emb.dtype)
                same = labels.unsqueeze(1) == labels.unsqueeze(0)
                if util.padding(emb.shape, 4).any():
                    emb = emb * 2
                return mat[(~same) * (mat < 0.5)].sum() + emb.sum()
    """))
    results = list(check_files([str(pkg / "util.py"), str(pkg / "loss.py")], Settings(), cache_dir=None))
    assert all(r.error is None for r in results)
    found = {(d.path.rsplit("/", 1)[-1], d.line, d.code) for r in results for d in r.diagnostics
             if d.kind == "graph-break"}
    assert found == {("loss.py", 10, "DYN101"), ("loss.py", 12, "DYN104")}
