"""DYN105 at the call of an ``nn.LSTM``/``GRU``/``RNN``, and at a read of one of its attributes
(``self.gru.hidden_size``), or at the first read of the module itself other than its call (``if self.rnn
is not None:``, where the module is optional: ``nn.GRU(...) if use_rnn else None``): Dynamo does not trace
them ("Attempted to wrap RNN, GRU, or LSTM"), and runs the rest of the calling function eagerly, so
nothing after the call breaks there (whether a graph came before it or not). The module may be picked by a
condition (``nn.LSTM(...) if lstm else nn.GRU(...)``) or from a dict of classes: it is a recurrent module
either way. A method of ``nn.Module`` that visits every submodule (``model.train()``,
``model.parameters()``) breaks too on a module that holds one at any depth. Each case is also run under
real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests, marked_case_tests

CASES = [
    ("eager-after", """
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 8, batch_first=True)
            self.rnn2 = nn.LSTM(8, 8, batch_first=True)
            self.lin = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.lin(torch.zeros(2, 3, 8))
            y = self.rnn(x)[0]  # breaks
            print("after")
            return self.rnn2(y)[0] + h
    """, "Encoder", "[(torch.randn(2, 3, 4),)]"),
    ("picked-by-condition", """
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, cell: str = "gru"):
            super().__init__()
            self.rnn = nn.LSTM(4, 8, batch_first=True) if cell == "lstm" else nn.GRU(4, 8, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]  # breaks
    """, "Encoder", "[(torch.randn(2, 3, 4),)]"),
    ("picked-from-dict", """
    import torch
    import torch.nn as nn

    RNN_CLASSES = {"lstm": nn.LSTM, "gru": nn.GRU}


    class Encoder(nn.Module):
        def __init__(self, cell: str = "gru"):
            super().__init__()
            self.rnn = RNN_CLASSES[cell](4, 8, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]  # breaks
    """, "Encoder", "[(torch.randn(2, 3, 4),)]"),
    ("attribute-read", """
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(4, 6, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h0 = x.new_zeros(1, x.shape[0], self.gru.hidden_size)  # breaks
            return h0.sum() + x.sum()
    """, "Encoder", "[(torch.randn(2, 3, 4),)]"),
    ("optional-module-read", """
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, use_rnn: bool = True):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.rnn = nn.GRU(4, 4, batch_first=True) if use_rnn else None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.proj(x)
            if self.rnn is not None:  # breaks
                x, _ = self.rnn(x)
            return x
    """, "Encoder", "[(torch.randn(2, 3, 4),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)


WALKED = """
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.rnn = nn.LSTM(4, 4, batch_first=True)


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.tagger = Tagger()
        self.head = nn.Linear(4, 2)


@torch.compile(backend="eager")
def step(model, x):
    model.train()
    y = model.head(model.tagger.proj(x))
    print("trained")
    return y


def main():
    return step(Wrapper(), torch.randn(2, 4))
"""
"""``model.train()`` visits every submodule, and meets the LSTM two levels down: the graph breaks there,
inside torch's frame, and the function resumes after the call (the ``print`` after it breaks too)."""

test_check_walked, test_dynamo_walked = break_tests(WALKED, {(21, "DYN105"), (23, "DYN105")}, "[()]")


STEPPED = """
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 4, batch_first=True)
        self.head = nn.Linear(4, 1)


@torch.compile(backend="eager")
def update(model, optimizer, x):
    h, _ = model.rnn(x)
    loss = model.head(h).mean()
    loss.backward()
    optimizer.step()
    return loss.detach()


def main():
    model = Tagger()
    return update(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.randn(2, 3, 4))
"""
"""After the RNN's break the rest of ``update`` runs eagerly: ``loss.backward()`` is not met, but
``optimizer.step()`` runs as a frame of its own that Dynamo compiles, and breaks inside it."""

test_check_stepped, test_dynamo_stepped = break_tests(STEPPED, {(14, "DYN105"), (17, "DYN105")}, "[()]")
