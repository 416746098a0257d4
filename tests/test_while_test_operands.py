"""DYN103 at a ``while`` test whose ``and``/``or`` chain breaks at an operand other than the last: Dynamo cannot
resume in the middle of the test and runs the whole function eagerly, so nothing after it breaks and the loop's
counter recompiles nothing (no DYN207).  A break at the last operand resumes at the loop header as a plain test
does: what follows breaks, and a counter the loop carries recompiles.  Each case is also run under real Dynamo
(torch 2.13)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, marked_case_tests, recompiles_of_run

CASES = [
    ("first-operand", """
    import torch


    def f(probs: torch.Tensor, thresh: float = 0.9):
        probs = probs * 2
        t = 0
        while probs[t].max() < thresh and t < probs.shape[0] - 1:  # breaks
            t += 1
        print("after")
        return probs[t].argmax()
    """, "f", "[(torch.full((5, 4), 0.1),)] * 2"),
    ("last-operand", """
    import torch


    def f(x: torch.Tensor, k: int):
        y = x * 2
        while k > 0 and y.sum() > 0:  # breaks
            y = y - 1
            k -= 1
        print("after")  # breaks
        return y
    """, "f", "[(torch.ones(3), 3)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)

COUNTED = """
    import torch


    def f(probs: torch.Tensor):
        t = 0
        while probs[t].max() < 0.9 TEST:
            t += 1
        return probs[t].argmax()


    def run():
        g = torch.compile(f, backend="eager")
        for _ in range(3):
            g(torch.arange(20.0).view(5, 4) / 10)
"""
TESTS = {"and t < 4": False, "": True}
"""The rest of the test -> whether the counter recompiles the frame resumed at the loop header."""


def test_dyn207_only_where_dynamo_resumes_at_the_header() -> None:
    for rest, recompiles in TESTS.items():
        found = [d for d in check(COUNTED.replace("TEST", rest)) if d.code == "DYN207"]
        assert bool(found) == recompiles, rest


@requires_torch
def test_the_counter_under_dynamo() -> None:
    for rest, recompiles in TESTS.items():
        messages = recompiles_of_run(COUNTED.replace("TEST", rest), "counted")
        assert bool(messages) == recompiles, rest
