"""Calls Dynamo refuses whatever their arguments: a draw of NumPy's random generators, reached through a
parameter annotated as one, through ``np.random.<function>.__self__`` (the global ``RandomState``) or through
a name bound to NumPy's function on one path and a generator's method on the other; and importing a module
(``__import__``, ``importlib.import_module``), ``globals()`` and ``exec``. Each case is also run under real
Dynamo: the lines flagged must be the lines where its graph-break log reports a break."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("numpy-generators", """
    import numpy as np
    import torch


    def shift(x, rs: np.random.RandomState | None = None):
        return x + rs.rand()  # breaks


    def pick(x, rs: np.random.RandomState | None = None):
        rand_int = np.random.randint if rs is None else rs.randint
        return x + rand_int(0, 4)  # breaks


    def centre(x, rs: np.random.RandomState | None = None):
        if rs is None:
            rs = np.random.random.__self__
        return x * rs.uniform(0, 1)  # breaks


    def kept(x, rs: np.random.RandomState):
        return x + 1 if rs is not None else x  # the generator is not called: no break


    def f(x, rs: np.random.RandomState):
        return shift(x, rs) + pick(x, rs) + pick(x) + centre(x, rs) + centre(x) + kept(x, rs)
    """, "f", "[(torch.ones(2), np.random.RandomState(0))]"),
    ("imports-and-module-state", """
    import importlib

    import torch


    def f(x, name):
        mod = __import__(name)  # breaks
        sub = importlib.import_module(name)  # breaks
        n = len(globals())  # breaks
        exec("y = 1")  # breaks
        return x + n + mod.pi + sub.e
    """, "f", "[(torch.ones(2), 'math')]"),
]


test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
