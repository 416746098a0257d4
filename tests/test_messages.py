"""Rule messages say what real Dynamo does (torch 2.13, measured): no recompile is overstated."""
from __future__ import annotations

from helpers import check


def _message(code: str, source: str, **settings) -> str:
    found = [d.message for d in check(source, **settings) if d.code == code]
    assert found, code
    return found[0]


def test_dyn203_int_counter_on_a_module_recompiles_every_call():
    message = _message("DYN203", """
        import torch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                return x * self.calls
    """)
    assert "on every call" in message


def test_dyn203_float_and_plain_object_recompile_once():
    float_message = _message("DYN203", """
        import torch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.eps = 1.0

            def forward(self, x):
                self.eps *= 0.5
                return x * self.eps
    """)
    assert "on every call" not in float_message and "once" in float_message
    plain = _message("DYN203", """
        import torch

        class Stepper:
            def __init__(self):
                self.calls = 0

            @torch.compile
            def step(self, x):
                self.calls += 1
                return x * self.calls
    """)
    assert "on every call" not in plain and "once" in plain


def test_dyn206_says_what_each_kind_of_value_costs():
    template = """
        import torch

        @torch.compile
        def head(x, t):
            return x * 2 if t else x

        def use(x):
            return head(x, {a}), head(x, {b})
    """
    numbers = _message("DYN206", template.format(a="1.0", b="0.5"))
    assert "each value recompiles" not in numbers and "second value recompiles" in numbers
    assert "one graph per value" in _message("DYN206", template.format(a="True", b="False"))
    assert "each new value recompiles" in _message("DYN206", template.format(a="'a'", b="'b'"))


def test_dyn204_on_a_branch_names_the_value_once_and_says_once():
    message = _message("DYN204", """
        import torch

        @torch.compile
        def f(x):
            m = x.max()
            if m.item() > 0:
                return x * 2
            return x - 1
    """)
    assert message.count("`m.item()`") == 1
    assert "recompiles once when it first changes" in message


UNTRACEABLE = {
    "rnn": """
        import torch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(4, 4)

            def forward(self, x):
                return self.rnn(x)[0]
    """,
    "print": "import torch\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n",
    "logger": "import logging, torch\nlog = logging.getLogger(__name__)\n@torch.compile\ndef f(x):\n"
              "    log.info('x')\n    return x\n",
    "clock": "import time, torch\n@torch.compile\ndef f(x):\n    return x * time.time()\n",
    "backward": "import torch\n@torch.compile\ndef f(x):\n    x.sum().backward()\n    return x\n",
    "deepcopy": "import copy, torch\n@torch.compile\ndef f(x):\n    return copy.deepcopy(x)\n",
    "disabled": "import torch\n@torch.compiler.disable\ndef g(x):\n    return x\n@torch.compile\n"
                "def f(x):\n    return g(x) + 1\n",
}


def test_dyn105_hint_fits_each_cause():
    """The logging remedy only where the call logs; every other cause gets its own."""
    hints = {}
    for cause, source in UNTRACEABLE.items():
        [d] = [d for d in check(source) if d.code == "DYN105"]
        hints[cause] = d.hint
    logging = {c for c, h in hints.items() if "logging" in h}
    assert logging == {"print", "logger"}, hints
    assert "allow_rnn" in hints["rnn"]
    assert "clock" in hints["clock"] and "optimizer" in hints["backward"] and ".clone()" in hints["deepcopy"]
    assert len({h for c, h in hints.items() if c not in logging}) == len(hints) - len(logging), hints
