"""Module hooks, measured on torch 2.13.  Forward hooks and forward pre-hooks run inside the module's call, so
Dynamo traces them with ``forward`` when the module is compiled: a hook registered as a function or as a bound
method of the module is analysed as ``forward`` is, wherever the registration is.  A backward hook runs in the
backward pass, but a submodule that has one breaks the graph where compiled code calls it ("Module-level
backwards hooks require compiled autograd"), with grad mode off too."""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    import torch
    import torch.nn as nn


    def count_positive(module: nn.Module, inputs, output):
        if output.mean() > 0:
            module.positive += 1


    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)
            self.a.positive = 0
            self.a.register_forward_hook(count_positive)
            self.b.register_forward_pre_hook(self._scale_input)
            self.b.register_forward_hook(hook=self._clip)

        def _scale_input(self, module, inputs):
            return (inputs[0] / inputs[0].abs().max().item(),)

        def _clip(self, module, inputs, output):
            return output.clamp(-1, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x))


    def main(x):
        model = torch.compile(Probe(), backend="eager")
        with torch.no_grad():
            return model(x)
"""
BREAKS = {(6, "DYN101"), (21, "DYN102")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.randn(2, 4),)]")


BACKWARD = """\
    import torch
    import torch.nn as nn


    class Recorded(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.out = nn.Linear(4, 4)
            self.norms = []
            self.lin.register_full_backward_hook(self._record)

        def _record(self, module, grad_input, grad_output):
            self.norms.append(grad_output[0].norm())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.lin(x).tanh()
            return self.out(h)


    def main(x):
        model = torch.compile(Recorded(), backend="eager")
        model(x).sum().backward()
        with torch.no_grad():
            return model(x)
"""


test_check_backward_hook, test_dynamo_backward_hook = break_tests(BACKWARD, {(17, "DYN105")}, "[(torch.randn(2, 4),)]")


FACTORY_METHOD = """
import torch
import torch.nn as nn


class Store:
    def __init__(self):
        self.means = []

    def make_hook(self, name):
        def hook(module, inputs, output):
            self.means.append(output.mean().item())
        return hook


def main(x):
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    store = Store()
    net[0].register_forward_hook(store.make_hook("fc"))
    return torch.compile(net, backend="eager")(x)
"""
"""A hook a method of an object of the module makes (a closure over that object) is analysed as one a function
of the module makes."""

test_check_factory_method, test_dynamo_factory_method = break_tests(
    FACTORY_METHOD, {(11, "DYN102")}, "[(torch.randn(2, 4),)]")
