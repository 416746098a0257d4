"""DYN203 on a cache kept on ``self`` made with ``collections.OrderedDict()`` or ``collections.defaultdict(...)``, as
on one made with ``{}``: Dynamo guards on a dict's keys whatever made it, so compiled code that adds keys to it
recompiles (measured on torch 2.13: the recompile names ``self.cache``)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

CODE = """
    import collections

    import torch
    import torch.nn as nn


    class FeatureCache(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.cache = MADE

        def forward(self, x):
            y = self.lin(x)
            self.cache["last"] = y.detach()
            if len(self.cache) > 4:
                self.cache.pop("last")
            return y


    def run():
        m = torch.compile(FeatureCache(), backend="eager")
        for _ in range(3):
            m(torch.randn(2, 3))
"""
MADE = ["collections.OrderedDict()", "collections.defaultdict(list)", "{}"]


@pytest.mark.parametrize("made", MADE)
def test_check_reports_the_cache(made: str) -> None:
    found = [d for d in check(CODE.replace("MADE", made)) if d.code == "DYN203"]
    assert [d.line for d in found] == [15]


@requires_torch
@pytest.mark.parametrize("made", MADE)
def test_dynamo_recompiles_on_it(made: str) -> None:
    messages = recompiles_of_run(CODE.replace("MADE", made), "cache")
    assert any("self.cache" in m for m in messages)
