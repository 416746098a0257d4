"""DYN206 where Dynamo skips the frame that would read an argument: after a call of an
``nn.LSTM``/``GRU``/``RNN`` at the top of a function (Dynamo skips the whole function, "Failed to handle graph
break gracefully"), or after ``model.parameters()`` of a model holding one (a generator it cannot rebuild to
resume), an argument is never guarded, also when it is handed to the RNN itself; a function under
``@torch.no_grad()`` whose loop breaks runs eagerly inside the wrapper, and the ``range()`` it counts is not
guarded either, unless the call passes it by keyword (the wrapper's ``**kwargs``, whose values Dynamo guards).
The same read before a skip in one branch only (``if clip is not None:``) is guarded on the calls that do not
take it.  Each script also runs under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

HANDED_TO_THE_RNN = """\
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.rnn = nn.LSTM(8, 8, batch_first=True)
        self.head = nn.Linear(8, 10)

    def forward(self, x, hidden=None):
        out, hidden = self.rnn(self.emb(x), hidden)
        return self.head(out), hidden


if __name__ == "__main__":
    model = torch.compile(LM(), backend="eager")
    logits, hidden = model(torch.randint(0, 10, (1, 4)))
    for _ in range(3):
        logits, hidden = model(logits[:, -1].argmax(-1, keepdim=True), hidden)
"""

CLIPPED = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 4, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


model = Net()


def train_step(x, clip=5.0):
    loss = model(x).pow(2).mean()
    loss.backward()
    {clipping}
    return loss.detach()


if __name__ == "__main__":
    fn = torch.compile(train_step, backend="eager")
    for clip in ({values}):
        fn(torch.randn(2, 3, 4), clip)
"""

UNDER_NO_GRAD = """\
import torch

EOS = 2


@torch.no_grad()
def greedy(w, h, max_len):
    out = []
    for _ in range(max_len):
        tok = (h @ w).argmax(-1)
        out.append(tok)
        if (tok == EOS).all():
            break
    return torch.stack(out, 1)


if __name__ == "__main__":
    w, h = torch.randn(8, 5), torch.randn(3, 8)
    decode = torch.compile(greedy, backend="eager")
    for n in (6, 8, 4):
        decode(w, h, n)
"""

test_check, test_dynamo = script_case_tests({
    "handed-to-the-rnn": (HANDED_TO_THE_RNN, [], 0),
    "clipped-after-a-walk": (CLIPPED.format(clipping="nn.utils.clip_grad_norm_(model.parameters(), clip)",
                                            values="5.0, 5.0, 1.0, 0.5"), [], 0),
    "clipped-in-a-branch": (CLIPPED.format(
        clipping="if clip is not None:\n        nn.utils.clip_grad_norm_(model.parameters(), clip)",
        values="None, None, 1.0"), [17], 1),
    "under-no-grad": (UNDER_NO_GRAD, [], 0),
    "under-no-grad-by-keyword": (UNDER_NO_GRAD.replace("decode(w, h, n)", "decode(w, h, max_len=n)"), [7], 1),
}, "DYN206")
