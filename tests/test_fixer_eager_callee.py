"""eager-callee: a compiled function of the file that ends by calling a function whose graph break in a
loop makes Dynamo run it eagerly compiles only the statements before that call; refused or left alone
where the split would change what runs compiled (measured through real Dynamo, torch 2.13, backend
``eager``)."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

DECODE = """\
import torch


def decode(scores, offset):
    best = []
    for row in scores:
        best.append(row.argmax().tolist() + offset)
    return torch.tensor(best)


@torch.no_grad()
def predict(x, w, offset=0):
    scores = (x @ w).softmax(-1)
    # the labels
    labels = decode(scores, offset)
    return labels, scores.max(-1).values


predict_c = torch.compile(predict, backend="eager")
"""
BREAK_LINE = 7


def _fix(code: str):
    return fix_source(textwrap.dedent(code), "predict.py", Settings(), unsafe=True)


def test_the_caller_compiles_what_comes_before_the_call_and_keeps_its_decorator():
    result = _fix(DECODE)
    assert [(a.fixer, a.line) for a in result.applied] == [("eager-callee", BREAK_LINE)]
    assert "@torch.no_grad()\ndef predict(x, w, offset=0):\n    scores = _predict_compiled(x, w)\n" \
           "    # the labels\n    labels = decode(scores, offset)\n" in result.source
    assert "\n\ndef _predict_compiled(x, w):\n    scores = (x @ w).softmax(-1)\n    return scores\n" in result.source
    assert result.source.endswith('_predict_compiled = torch.compile(_predict_compiled, backend="eager")\n'
                                  "predict_c = predict\n")
    again = _fix(result.source)
    assert again.source == result.source and not again.applied


@pytest.mark.parametrize("caller, reason", [
    ("""
        @torch.compile
        def predict(x, w):
            return decode(x @ w, 0)
    """, "first statement"),
    ("""
        head = torch.nn.Linear(3, 2)

        @torch.compile
        def predict(x, w):
            scores = x @ w
            labels = decode(scores, 0)
            return head(labels.float())
    """, "call the module `head`"),
])
def test_refused(caller, reason):
    code = DECODE[:DECODE.index("@torch.no_grad()")] + textwrap.dedent(caller)
    result = _fix(code)
    assert "_predict_compiled" not in result.source
    assert any(r.fixer == "eager-callee" and reason in r.reason for r in result.refused), result.refused


def test_a_call_in_a_branch_of_the_caller_is_left_alone():
    code = DECODE.replace("    labels = decode(scores, offset)\n",
                          "    labels = decode(scores, offset) if offset else scores.argmax(-1)\n")
    assert "_predict_compiled" not in _fix(code).source


def test_a_break_outside_any_loop_of_the_callee_is_not_this_fixers():
    code = DECODE.replace("    best = []\n    for row in scores:\n        best.append(row.argmax().tolist() + offset)\n"
                          "    return torch.tensor(best)\n",
                          "    return torch.tensor(scores.sum().tolist() + offset)\n")
    assert not any(a.fixer == "eager-callee" for a in _fix(code).applied)


@requires_torch
def test_under_dynamo_the_split_breaks_nowhere_and_gives_the_same_results(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    fixed = _fix(DECODE).source
    torch.manual_seed(0)
    inputs = [(torch.randn(3, 4), torch.randn(4, 5)), (torch.randn(3, 4), torch.randn(4, 5), 2)]
    before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, DECODE, fixed, "predict_c", inputs)
    assert BREAK_LINE in seen_before.break_lines(before.__file__)
    assert not seen_after.break_lines(after.__file__)
    for got, want in zip(seen_after.outputs, seen_before.outputs):
        assert all(torch.equal(a, b) for a, b in zip(got, want)), (got, want)


#: the compile call in `main()` becomes the compiled part's decorator; `@torch.no_grad()` stays on `predict`
IN_MAIN = DECODE.replace('predict_c = torch.compile(predict, backend="eager")\n',
                         'def main(x, w):\n    predict_c = torch.compile(predict, backend="eager")\n'
                         '    return predict_c(x, w)\n')


def test_a_compile_call_in_main_of_a_decorated_function_keeps_its_decorator_on_the_caller():
    result = _fix(IN_MAIN)
    assert [(a.fixer, a.line) for a in result.applied] == [("eager-callee", BREAK_LINE)]
    assert "@torch.no_grad()\ndef predict(x, w, offset=0):\n    scores = _predict_compiled(x, w)\n" \
        in result.source
    assert '\n\n@torch.compile(backend="eager")\ndef _predict_compiled(x, w):\n' in result.source
    assert "    predict_c = predict\n" in result.source
    again = _fix(result.source)
    assert again.source == result.source and not again.applied


@requires_torch
def test_under_dynamo_the_decorated_split_breaks_nowhere_and_keeps_grad_mode(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    fixed = _fix(IN_MAIN).source
    torch.manual_seed(0)
    inputs = [(torch.randn(3, 4), torch.randn(4, 5, requires_grad=True))]
    before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, IN_MAIN, fixed, "main", inputs)
    assert BREAK_LINE in seen_before.break_lines(before.__file__)
    assert not seen_after.break_lines(after.__file__)
    for got, want in zip(seen_after.outputs, seen_before.outputs):
        assert all(torch.equal(a, b) and not a.requires_grad and not b.requires_grad
                   for a, b in zip(got, want))
