"""With ``capture_dynamic_output_shape_ops`` the op that makes a data-dependent size stays in the graph, and
the break moves to where Python tests that size: also when the test is the first operand of ``or``/``and``
(``if keep.numel() == 0 or x.shape[0] == 0:``), or any operand Python evaluates before the branch is
decided (measured on torch 2.13)."""
from helpers import break_tests

JOINED = """\
import torch


def g(x):
    keep = x[x > 0]
    if keep.shape[0] == 0 or x.shape[0] == 0:
        return x.sum()
    return keep.mean()


def h(x):
    idx = torch.nonzero(x > 0)
    if len(idx) < 2 and x.dim() == 1:
        return x.sum()
    return x[idx[:, 0]].sum()


def main(x):
    cg = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(torch.compile(g, backend="eager"))
    ch = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(torch.compile(h, backend="eager"))
    return cg(x), ch(x)
"""
test_check, test_dynamo = break_tests(JOINED, {(6, "DYN104"), (13, "DYN104")}, "[(torch.randn(5),)]")

#: the size tested second, after a test of the input's own size: Python reads it there too
SECOND = JOINED.replace("keep.shape[0] == 0 or x.shape[0] == 0", "x.shape[0] == 0 or keep.shape[0] == 0")
test_check_second, test_dynamo_second = break_tests(SECOND, {(6, "DYN104"), (13, "DYN104")},
                                                    "[(torch.randn(5),)]")
