"""``dataclasses.fields`` reads the fields of a dataclass instance in compiled code, not those of the class
itself: ``fields(Cfg)`` and ``fields(type(cfg))`` break ("dataclass fields failure"), ``fields(cfg)``,
``asdict`` and ``replace`` of an instance are traced. Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("fields-of-the-class", """
    import dataclasses

    import torch


    @dataclasses.dataclass
    class Cfg:
        scale: float = 2.0
        shift: float = 0.0


    def f(x: torch.Tensor, cfg: Cfg):
        names = [fl.name for fl in dataclasses.fields(Cfg)]  # breaks
        return x * cfg.scale + len(names)
    """, "f", "[(torch.randn(3), Cfg())]"),
    ("fields-of-the-type-of-an-instance", """
    import dataclasses
    from dataclasses import fields

    import torch


    @dataclasses.dataclass
    class Cfg:
        scale: float = 2.0


    def f(x: torch.Tensor, cfg: Cfg):
        n = len(fields(type(cfg)))  # breaks
        return x * n
    """, "f", "[(torch.randn(3), Cfg())]"),
    ("fields-of-an-instance", """
    import dataclasses

    import torch


    @dataclasses.dataclass
    class Cfg:
        scale: float = 2.0
        shift: float = 0.0


    def f(x: torch.Tensor, cfg: Cfg):
        total = sum(getattr(cfg, fl.name) for fl in dataclasses.fields(cfg))
        moved = dataclasses.replace(cfg, shift=1.0)
        return x * total + moved.shift + dataclasses.asdict(cfg)["scale"]
    """, "f", "[(torch.randn(3), Cfg())]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
