"""``torch.testing.assert_close`` in compiled code breaks where it compares tensors' values (its Python
comparison of the data), not where it is given sizes (``pred.shape``), which are compared as the tuples they
are (measured on torch 2.13)."""
from helpers import break_tests

CODE = """\
import torch


def check_shapes(pred, ref):
    torch.testing.assert_close(pred.shape, ref.shape)
    return pred - ref


def check_values(pred, ref):
    torch.testing.assert_close(pred, ref)
    return pred - ref


def main(x):
    a = torch.compile(check_shapes, backend="eager")(x, x + 1)
    b = torch.compile(check_values, backend="eager")(x, x.clone())
    return a, b
"""
test_check, test_dynamo = break_tests(CODE, {(10, "DYN105")}, "[(torch.randn(3),)]")
