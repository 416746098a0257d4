"""The allow-rnn fixer: a call of an nn.LSTM/GRU/RNN module in code the file compiles gets Dynamo's
``allow_rnn``, scoped with ``torch._dynamo.config.patch`` to that compile call (merged into a patch already
there); files that compile nothing are left alone.  Checked as text and through real Dynamo."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

SCRIPT = """\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, batch_first=True)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        out, (h, _) = self.rnn(x)
        return self.head(h[-1]) + out.mean()


def main(xs):
    torch.manual_seed(0)
    model = Encoder()
    step = torch.compile(model, backend="eager")
    outs = [step(x) for x in xs]
    sum(o.sum() for o in outs).backward()
    return outs, [p.grad for p in model.parameters()]
"""
RNN_LINE = 12
COMPILE = 'step = torch.compile(model, backend="eager")'
PATCHED = 'step = torch._dynamo.config.patch(allow_rnn=True)(torch.compile(model, backend="eager"))'


def fixed(code: str):
    return fix_source(textwrap.dedent(code), "train.py", Settings(), unsafe=True)


def test_the_compile_call_that_reaches_the_rnn_is_patched_once():
    result = fixed(SCRIPT)
    assert result.source == SCRIPT.replace(COMPILE, PATCHED)
    assert [(f.fixer, f.code, f.line, f.safety) for f in result.applied] == [
        ("allow-rnn", "DYN105", RNN_LINE, "unsafe")]
    again = fixed(result.source)
    assert again.source == result.source and not again.applied


def test_a_capture_patch_already_there_gets_the_flag_added():
    code = SCRIPT.replace(COMPILE, 'step = torch._dynamo.config.patch(capture_scalar_outputs=True)'
                                   '(torch.compile(model, backend="eager"))')
    assert fixed(code).source == SCRIPT.replace(
        COMPILE, 'step = torch._dynamo.config.patch(capture_scalar_outputs=True, allow_rnn=True)'
                 '(torch.compile(model, backend="eager"))')


def test_the_decorator_form_gets_a_patch_above_it():
    code = """\
        import torch

        rnn = torch.nn.GRU(4, 8)

        @torch.compile
        def encode(x):
            return rnn(x)[0].sum()
        """
    assert "@torch._dynamo.config.patch(allow_rnn=True)\n@torch.compile\ndef encode" in fixed(code).source


def test_a_file_that_compiles_nothing_is_untouched():
    library = SCRIPT[:SCRIPT.index("def main")]
    result = fixed(library)
    assert result.source == library and not result.applied
    assert any(r.fixer == "allow-rnn" and "calls no `torch.compile`" in r.reason for r in result.refused)


def test_other_breaks_of_the_category_are_not_taken_for_an_rnn():
    code = """\
        import torch

        def f(x):
            print("x", x)
            return x * 2

        f = torch.compile(f)
        """
    assert "allow_rnn" not in fixed(code).source


@requires_torch
def test_dynamo_the_patched_call_traces_the_lstm_with_equal_outputs_and_gradients(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    inputs = [([torch.randn(2, 5, 4), torch.randn(2, 5, 4)],)]
    before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, SCRIPT, fixed(SCRIPT).source, "main",
                                                                    inputs)
    assert RNN_LINE in seen_before.break_lines(before.__file__)
    assert not seen_after.break_lines(after.__file__)
    (outs_b, grads_b), (outs_a, grads_a) = seen_before.outputs[0], seen_after.outputs[0]
    assert all(torch.equal(a, b) for a, b in zip(outs_b, outs_a))
    assert all(torch.equal(a, b) for a, b in zip(grads_b, grads_a))
    assert torch._dynamo.config.allow_rnn is False  # held only while the patched callable ran


def test_refused_when_the_function_breaks_in_a_loop_anyway():
    """A break in a loop of the same function makes Dynamo run the frame eagerly, the LSTM included: the
    flag would only move the reported break."""
    code = SCRIPT.replace("        return self.head(h[-1]) + out.mean()\n",
                          "        for _ in range(2):\n            print(\"step\")\n"
                          "        return self.head(h[-1]) + out.mean()\n")
    result = fixed(code)
    assert "allow_rnn" not in result.source
    assert any(r.fixer == "allow-rnn" and "in a loop of the same function" in r.reason for r in result.refused)


def test_check_reads_the_patch_on_the_fixed_script(tmp_path, capsys):
    """Once patched, the call is traced (the Dynamo test above), and ``check`` no longer reports it."""
    from helpers import checked_breaks

    fixed = fix_source(SCRIPT, "script.py", Settings(), unsafe=True).source
    assert (RNN_LINE, "DYN105") in checked_breaks(tmp_path, capsys, SCRIPT)
    assert not checked_breaks(tmp_path, capsys, fixed)
    set_globally = SCRIPT.replace("def main(xs):", "torch._dynamo.config.allow_rnn = True\n\n\ndef main(xs):")
    assert not checked_breaks(tmp_path, capsys, set_globally)
