"""A module class that defines ``__call__`` in place of ``nn.Module``'s (torch_geometric's aggregations
normalise their arguments there): calling an instance runs that ``__call__``, and Dynamo traces it, so what
breaks in it breaks the caller's graph; its ``super().__call__(...)`` runs ``forward`` with the arguments it
hands on.  ``torch.compile(module)`` runs that ``__call__`` too, so it is an entry point of its own.  Each case
is also run under real Dynamo."""
from __future__ import annotations

from conftest import requires_torch
from helpers import break_lines, dynamo_break_lines, marked_case_tests, marked_lines

CASES = [
    ("call-override", """
    import torch


    class Aggr(torch.nn.Module):
        def __call__(self, x, index=None, dim_size=None):
            if index is not None and dim_size is None:
                dim_size = int(index.max()) + 1  # breaks
            return super().__call__(x, index=index, dim_size=dim_size)

        def forward(self, x, index=None, dim_size=None):
            out = x.new_zeros(dim_size, x.size(-1)).index_add_(0, index, x)
            if out.sum() > 0:  # breaks
                out = out * 2
            return out


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.aggr = Aggr()

        def forward(self, x, index):
            return self.aggr(x, index) + 1


    net = Net()


    def f(x, index):
        return net(x, index)
    """, "f", "[(torch.ones(4, 2), torch.tensor([0, 1, 1, 2]))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)

CONTEXT_IN_CALL = """
import torch


class _Context:
    def __init__(self):
        self.active = 0

    def __enter__(self):
        self.active += 1

    def __exit__(self, *exc):
        self.active -= 1


class Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._ctx = _Context()

    def __call__(self, *args, **kwargs):
        with self._ctx:  # breaks
            result = super().__call__(*args, **kwargs)
        return result


class Model(Base):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


def main(x):
    return torch.compile(Model(), backend="eager")(x)
"""


def test_the_call_override_of_a_compiled_module_is_an_entry_point() -> None:
    assert break_lines(CONTEXT_IN_CALL) == marked_lines(CONTEXT_IN_CALL)


@requires_torch
def test_that_line_is_dynamos(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CONTEXT_IN_CALL, "[(torch.ones(2, 3),)]") == marked_lines(CONTEXT_IN_CALL)
