"""Values the analysis follows through a choice or a container: an attribute set to an object or to ``None``
(``self.flex = Thresh() if use_flex else None``) is that object where it is not ``None``, so its methods are
analysed; ``dict(mean=m, std=s)`` and ``out.pop("loss")`` give the entries they hold; an entry of an
``nn.ParameterDict`` is a parameter.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("an-optional-submodule", """
    import torch
    from torch import nn


    class Thresh(nn.Module):
        def masking(self, probs: torch.Tensor) -> torch.Tensor:
            conf, idx = probs.max(-1)
            if conf.max() > 0.5:  # breaks
                conf = conf * 2
            return conf


    class Model(nn.Module):
        def __init__(self, use_flex: bool = True):
            super().__init__()
            self.flex = Thresh() if use_flex else None

        def forward(self, logits: torch.Tensor) -> torch.Tensor:
            if self.flex is not None:
                return self.flex.masking(logits.softmax(-1))
            return logits


    model = Model()


    def f(x: torch.Tensor):
        return model(x)
    """, "f", "[(torch.randn(8, 4),)]"),
    ("dict-call-and-pop", """
    import torch


    def f(x: torch.Tensor):
        stats = dict(mean=x.mean(), std=x.std())
        if stats["std"] > 1:  # breaks
            x = x / stats["std"]
        out = {"loss": x.sum(), "logits": x}
        loss = out.pop("loss")
        if loss > 1e4:  # breaks
            loss = loss / 1e4
        return loss + out["logits"].mean()
    """, "f", "[(torch.randn(16) * 3,)]"),
    ("parameter-dict-entries", """
    import torch
    from torch import nn

    log_vars = nn.ParameterDict({"seg": nn.Parameter(torch.zeros(())), "depth": nn.Parameter(torch.ones(()))})


    def f(x: torch.Tensor):
        s = log_vars["seg"]
        if s > 2.0:  # breaks
            s = s.clamp(max=2.0)
        return x * torch.exp(-s) + s
    """, "f", "[(torch.randn(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
