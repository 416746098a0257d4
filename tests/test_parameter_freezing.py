"""DYN105 on ``requires_grad`` stores that freeze a module's parameters inside compiled code: Dynamo does not
set ``Tensor.requires_grad`` while tracing, and a loop over ``net.parameters()`` runs whenever the code
holding it does (a module has parameters), as does a branch the analysis decides (``isinstance(net, list)``
of a module is never true)."""
from helpers import break_tests

FREEZING = """\
    import torch
    import torch.nn as nn


    def set_requires_grad(nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad


    class GAN(nn.Module):
        def __init__(self):
            super().__init__()
            self.gen = nn.Linear(4, 4)
            self.disc = nn.Linear(4, 1)
            self.heads = []

        def forward(self, z):
            set_requires_grad(self.disc, False)
            fake = self.gen(z)
            return self.disc(fake).mean()

        def freeze_named(self, z):
            for _, p in self.gen.named_parameters():
                p.requires_grad = False
            for head in self.heads:
                for p in head.parameters():
                    p.requires_grad = False
            return self.gen(z)


    def main(z):
        torch.compile(GAN(), backend="eager")(z)
        torch.compile(GAN().freeze_named, backend="eager")(z)
"""

test_check, test_dynamo = break_tests(FREEZING, {(11, "DYN105"), (28, "DYN105")}, "[(torch.randn(3, 4),)]")

#: a store under a test the analysis cannot decide stays silent (Dynamo breaks only when it holds)
UNDECIDED = """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, freeze: bool):
            for p in self.lin.parameters():
                if freeze:
                    p.requires_grad = False
            return self.lin(x)


    def main(x):
        return torch.compile(Net(), backend="eager")(x, False)
"""

test_undecided_check, test_undecided_dynamo = break_tests(UNDECIDED, set(), "[(torch.randn(3, 4),)]")
