"""Values the analysis follows as one of several candidates, and the code they reach: a dict of
functions or classes looked up with a key it does not know, a method named by a pattern
(``getattr(self, "{}_reduction".format(kind))``), a base's public method run on a subclass that
overrides what it calls, a ``mask.dtype == torch.bool`` test, which makes ``mask`` a mask, and one
element of a 1-d tensor (``torch.unique``'s counts), a 0-d tensor that breaks as an index.

Each case is also run under real Dynamo: the lines flagged must be lines where its graph-break log
reports a break.
"""
from __future__ import annotations


import pytest

from conftest import requires_torch

from helpers import assert_dynamo_breaks_on_marked_lines, break_lines, marked_lines


# (name, code, compiled function, its input sets, entry points given to the analysis)
CASES = [
    ("dict-of-functions-with-an-unknown-key", """
        import torch

        def positive(x):
            if x.sum() > 0:  # breaks
                return x
            return -x

        def selected(x):
            return x[x > 0]  # breaks

        ACTIVATIONS = {"positive": positive, "selected": selected}

        def apply(x, name):
            return ACTIVATIONS[name](x) + 1
    """, "apply", '[(torch.randn(4), "positive"), (torch.randn(4), "selected")]', ("apply",)),
    ("method-named-by-a-pattern", """
        import torch

        class Reducer(torch.nn.Module):
            def forward(self, losses, kind: str):
                return getattr(self, "{}_reduction".format(kind))(losses)

            def element_reduction(self, losses):
                return losses[losses > 0].mean()  # breaks

            def pair_reduction(self, losses):
                if losses.sum() > 0:  # breaks
                    return losses.sum()
                return losses.mean()

            def indices(self, losses):
                return losses.nonzero()

        REDUCER = Reducer()

        def main(x, kind):
            return REDUCER(x, kind)
    """, "main", '[(torch.randn(4), "element"), (torch.randn(4), "pair")]', ()),
    ("base-method-on-a-subclass", """
        import torch

        class Stepper:
            def run(self, t: torch.Tensor):
                out = t
                for _ in range(2):
                    out = self._advance(out)
                return self._finish(out)

            def _advance(self, t):
                raise NotImplementedError

            def _finish(self, t):
                return t

        class Clipped(Stepper):
            def _advance(self, t):
                if t.max() > 1:  # breaks
                    return t / 2
                return t

            def _finish(self, t):
                return t[t > 0]  # breaks

        STEPPER = Clipped()

        def main(t):
            return STEPPER.run(t)
    """, "main", "[(torch.randn(3),), (torch.randn(3) * 3,)]", ()),
    ("bool-dtype-test-makes-a-mask", """
        from typing import Optional

        import torch

        def refine(x1: torch.Tensor, x2: torch.Tensor, mask: Optional[torch.Tensor]):
            if mask is not None and mask.dtype == torch.bool:
                x1, x2 = x1[mask[0]], x2[mask[0]]  # breaks
            return x1.sum() + x2.sum()
    """, "refine", "[(torch.randn(5), torch.randn(5), torch.randn(1, 5) > 0)]", ("refine",)),
    ("one-element-of-a-1d-tensor-is-0d", """
        import torch

        def tie_average(target: torch.Tensor, preds: torch.Tensor, discount_cumsum: torch.Tensor):
            _, inv, counts = torch.unique(-preds, return_inverse=True, return_counts=True)  # breaks
            ranked = torch.zeros_like(counts, dtype=torch.float32)
            ranked.scatter_add_(0, inv, target.to(dtype=ranked.dtype))
            groups = counts.cumsum(dim=0) - 1
            sums = torch.zeros_like(counts, dtype=torch.float32)
            sums[0] = discount_cumsum[groups[0]]  # breaks
            sums[1:] = discount_cumsum[groups].diff()
            return (ranked / counts * sums).sum()
    """, "tie_average",
     "[(torch.rand(6), torch.tensor([0.1, 0.5, 0.5, 0.2, 0.9, 0.1]), torch.rand(6).cumsum(0))]",
     ("tie_average",)),
]


@pytest.mark.parametrize("name, code, target, inputs, entries", CASES, ids=[c[0] for c in CASES])
def test_flagged_lines(name: str, code: str, target: str, inputs: str, entries: tuple[str, ...]) -> None:
    assert break_lines(code, entry_points=entries) == marked_lines(code)


@requires_torch
@pytest.mark.parametrize("name, code, target, inputs, entries", CASES, ids=[c[0] for c in CASES])
def test_flagged_lines_break_under_dynamo(name: str, code: str, target: str, inputs: str,
                                          entries: tuple[str, ...], tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(code, target, inputs, tmp_path)


CLASSES = """
    import torch

    class Solver:
        def __init__(self, y0, rtol):
            self.y0 = y0
            self.rtol = rtol

        def integrate(self, t):
            return self._step(self.y0, t)

    class Doubling(Solver):
        def _step(self, y, t):
            if t[0] > 0:  # breaks
                return y * 2
            return y

    class Tolerant(Solver):
        def _step(self, y, t):
            err = (y - t).abs().max()
            if err < self.rtol:  # breaks
                return y
            return y + 1

    SOLVERS = {"doubling": Doubling, "tolerant": Tolerant}

    def solve(y0, t, method):
        solver = SOLVERS[method](y0=y0, rtol=1e-3)
        return solver.integrate(t)  # breaks
"""


def test_dict_of_classes_with_an_unknown_key_reaches_each_class() -> None:
    assert break_lines(CLASSES, entry_points=("solve",)) == marked_lines(CLASSES)


@requires_torch
def test_dict_of_classes_lines_break_under_dynamo(tmp_path) -> None:
    # the call of the method of an object made in the frame breaks too: Dynamo cannot rebuild the bound
    # method to resume after the callee's break
    assert_dynamo_breaks_on_marked_lines(CLASSES, "solve", '[(torch.randn(3), torch.randn(3), "doubling"), '
                                         '(torch.randn(3), torch.randn(3), "tolerant")]', tmp_path)


def test_one_unknown_candidate_leaves_the_result_unknown() -> None:
    # `make` may be a function of another module: the call's result is not a tensor, so the branch
    # on it is not claimed, while the known candidate's own break still is
    code = """
        import torch
        from elsewhere import make

        def local(x):
            return x[x > 0]  # breaks

        MAKERS = {"local": local, "other": make}

        def build(x, kind):
            y = MAKERS[kind](x)
            if y:
                return x
            return x + 1
    """
    assert break_lines(code, entry_points=("build",)) == marked_lines(code)
