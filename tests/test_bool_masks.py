"""Boolean masks the analysis follows the dtype of, each measured on torch 2.13 ("Dynamic shape operator" when
one selects): ``Tensor.new_*`` with ``dtype=torch.bool`` (or the builtin ``bool``) or of a mask, ``torch.full``
with a bool fill value, a mask filled in place, a function that keeps its input's dtype (``torch.roll``), and a
list of Python bools, or a tensor made of one, used as an index.  A list of Python bools selects the same size
on every call: nothing recompiles on it, and a rewrite that needs a tensor mask refuses it."""
from __future__ import annotations

from helpers import Example, break_tests, check, write

CODE = """\
    from typing import List

    import torch


    @torch.compile(backend="eager")
    def segments(scores: torch.Tensor, lengths: List[int]) -> torch.Tensor:
        n = scores.shape[0]
        t = torch.arange(n)
        active = scores > 0.5
        suppressed = scores.new_zeros(n, dtype=torch.bool)
        a = t[suppressed]
        keep = torch.full((n,), True)
        b = t[keep]
        valid = torch.zeros(n, dtype=bool)
        c = t[valid]
        done = torch.zeros(n, dtype=torch.bool).fill_(True)
        d = t[done]
        starts = active & ~torch.roll(active, 1, 0)
        e = t[starts]
        even = [i % 2 == 0 for i in range(n)]
        f = scores[even]
        long_enough = torch.tensor([k > 2 for k in lengths])
        return a.sum() + b.sum() + c.sum() + d.sum() + e.sum() + f.sum() + scores[:2][long_enough].sum()


    def main(x):
        return segments(x, [1, 5])
"""
BREAKS = {(12, "DYN104"), (14, "DYN104"), (16, "DYN104"), (18, "DYN104"), (20, "DYN104"), (22, "DYN104"),
          (24, "DYN104")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.rand(6),)]")


LIST_MASK = """
    import torch


    def evens(x: torch.Tensor) -> torch.Tensor:
        keep = [i % 2 == 0 for i in range(x.shape[0])]
        return x[keep].sum() * 2
"""


def test_a_list_mask_is_no_recompile_hazard_and_is_not_rewritten(tmp_path, capsys) -> None:
    assert {d.code for d in check(LIST_MASK)} == {"DYN104"}
    from dynalint.adapters.cli import main

    path = write(tmp_path, "m.py", Example(LIST_MASK).source)
    main(["fix", "--unsafe-fixes", "--diff", path])
    out, err = capsys.readouterr()
    assert not out.startswith("---") and "fix refused (masked-reduction): the mask is not a tensor" in out + err


PASSED_MASK = """
    import torch


    @torch.compile(backend="eager")
    def masked_mean(pred, pad_mask):
        keep = ~pad_mask
        return pred[keep].mean()


    def main(pred):
        return masked_mean(pred, torch.arange(8).expand(2, 8) >= 6)
"""

# every call passes a mask, and the function indexes with a value computed from it (``keep = ~pad_mask``)
test_passed_mask_check, test_passed_mask_dynamo = break_tests(PASSED_MASK, {(7, "DYN104")},
                                                              "[(torch.randn(2, 8),)]")


HANDED_MASK = """
    import torch


    def masked_acc(pred, labels, mask):
        return (pred[mask] == labels[mask]).float().mean()


    @torch.compile(backend="eager")
    def evaluate(pred, labels, mask):
        return masked_acc(pred, labels, mask)


    def main(pred):
        return evaluate(pred, pred.round(), torch.arange(8) < 5)
"""

# every call passes a mask, which the compiled function hands to the helper that indexes with it
test_handed_mask_check, test_handed_mask_dynamo = break_tests(HANDED_MASK, {(5, "DYN104")},
                                                              "[(torch.randn(8),)]")
