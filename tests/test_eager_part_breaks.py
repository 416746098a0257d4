"""Nothing breaks in the part of a function that Dynamo runs eagerly, since it never traces it: after
a graph break inside a loop, inside a ``try`` body, or at the context manager ``with open(...)``
enters, Dynamo gives up on the frame (measured with real Dynamo, torch 2.13: "Failed to handle graph
break gracefully"), so a ``.nonzero()``, a ``print`` or an ``open()`` after it, a ``finally`` block
and the body of that ``with`` are not reported, nor is a second break later in the same loop body.
What that part calls is a frame of its own that Dynamo compiles: a logging call given a tensor breaks
inside the logging code, reported at the call (measured standalone, TORCH_LOGS=graph_breaks).
A break in a branch of the loop body does not hide one after that branch, nor does a loop in a branch
hide what follows the branch: both run when the branch is not taken; and a break outside any loop
before the loop is resumed from, so the loop breaks too."""
from __future__ import annotations

from conftest import requires_torch

from helpers import assert_dynamo_breaks_on_marked_lines, break_lines, marked_lines

CODE = """
    import os

    import torch


    def looped(x):
        h = x.clone()
        for _ in range(2):
            h = h + len(os.getcwd())  # breaks
            print("again")
        n = (x[0] > 0).nonzero()
        print("after")
        return h + n.sum()


    def tried(x):
        h = x + 1
        try:
            h = h + len(os.getcwd())  # breaks
            m = (x[0] > 0).nonzero()
        finally:
            print("done")
        n = (x[0] > 0).nonzero()
        return h + n.sum() + m.sum()


    def opened(x):
        h = x + 1
        with open(os.devnull, "w") as fh:  # breaks
            fh.write("a")
            m = (x[0] > 0).nonzero()
        n = (x[0] > 0).nonzero()
        return h + n.sum() + m.sum()


    def branched(x, flag: bool):
        h = x + 1
        for _ in range(2):
            if flag:
                h = h + len(os.getcwd())
            print("each")  # breaks
        return h


    def resumed(x):
        h = x + 1
        print("first")  # breaks
        for _ in range(2):
            h = h + len(os.getcwd())  # breaks
        n = (x[0] > 0).nonzero()
        return h + n.sum()


    def either(x, masks: bool):
        h = x + 1
        if masks:
            for _ in range(2):
                h = h + len(os.getcwd())
        n = (x[0] > 0).nonzero()  # breaks
        return h + n.sum()


    def step(x):
        return looped(x) + tried(x) + opened(x) + branched(x, False) + resumed(x) + either(x, False)
"""


def test_flagged_lines() -> None:
    assert break_lines(CODE, entry_points=("step",)) == marked_lines(CODE)


@requires_torch
def test_flagged_lines_break_under_dynamo(tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(CODE, "step", "[(torch.randn(4, 8),)]", tmp_path)


LOGGED = """
    import logging
    import os

    import torch

    logger = logging.getLogger(__name__)


    def logged(x):
        h = x.clone()
        for _ in range(2):
            h = h + len(os.getcwd())  # breaks
        n = (x[0] > 0).nonzero()
        logger.info("rows %s", 2)
        logger.info("rows %s", n)  # breaks
        logging.info("rows %s", n)  # breaks
        print(n)
        return h + n.sum()
"""


def test_a_logging_call_given_a_tensor_breaks_in_the_eager_part() -> None:
    assert break_lines(LOGGED, entry_points=("logged",)) == marked_lines(LOGGED)


STEPPED = """
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)


    def train_step(x):
        for row in x:
            if row.sum() > 0:  # breaks
                print("a positive row")
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()  # breaks
        torch._dynamo.graph_break()
        return loss


    if __name__ == "__main__":
        step = torch.compile(train_step, backend="eager")
        step(torch.randn(2, 4))
"""


def test_an_optimizer_step_breaks_in_the_eager_part() -> None:
    """``opt.step()`` calls ``torch._dynamo.graph_break()`` in its own code: called from the part Dynamo runs
    eagerly, it is a frame of its own that Dynamo compiles and breaks in (``zero_grad()``, which Dynamo skips,
    and ``backward()`` are not reported there), while ``torch._dynamo.graph_break()`` called there runs no
    frame Dynamo compiles and passes silently. The ``print`` under the breaking test of the loop never runs
    traced. ``x``, which every call passes a tensor, is one, iterated row by row."""
    assert break_lines(STEPPED) == marked_lines(STEPPED)


@requires_torch
def test_an_optimizer_step_breaks_in_the_eager_part_under_dynamo(tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(STEPPED, "train_step", "[(torch.randn(2, 4),)]", tmp_path)


NESTED = """
    import torch

    net = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)


    def update(x, epochs: int):
        kl = torch.zeros(())
        for epoch in range(epochs):
            for start in range(0, 8, 4):
                loss = net(x[start:start + 4]).pow(2).mean()
                opt.zero_grad()  # breaks
                loss.backward()
                opt.step()  # breaks
                kl = loss.detach()
            if kl > 10.0:
                break
        return {"kl": kl.item()}


    if __name__ == "__main__":
        step = torch.compile(update, backend="eager")
        step(torch.randn(8, 4), 2)
"""


def test_a_break_in_an_inner_loop_runs_the_whole_function_eagerly() -> None:
    """A break in the body of a loop nested in another makes Dynamo give up on the whole frame: the test
    after the inner loop and the ``.item()`` after both are never traced (each loop's body taken to run
    once)."""
    assert break_lines(NESTED) == marked_lines(NESTED)


@requires_torch
def test_a_break_in_an_inner_loop_runs_the_whole_function_eagerly_under_dynamo(tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(NESTED, "update", "[(torch.randn(8, 4), 2)]", tmp_path)


HEADER = """
    import torch
    import torch.nn as nn


    class Router(nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

        def forward(self, x, mask):
            hit = mask.sum(-1).nonzero()
            out = torch.zeros_like(x)
            for e in hit:
                out = out + self.experts[e[0]](x)
            return out
"""


def test_a_loop_that_cannot_step_what_it_iterates_runs_its_body_eagerly() -> None:
    """With ``capture_dynamic_output_shape_ops``, ``hit`` has a length Dynamo cannot step through: the loop
    breaks at its header ("graph break in loop") and Dynamo runs the whole function eagerly, so the body's
    index of a module list by a tensor is never traced (without the flags, the break is the ``nonzero``, and
    the body's index breaks in the frame resumed after it)."""
    flags = {"capture_dynamic_output_shape_ops": True, "capture_scalar_outputs": True}
    assert break_lines(HEADER, entry_points=("Router.forward",), **flags) == {13}
    assert break_lines(HEADER, entry_points=("Router.forward",)) == {11, 14}
