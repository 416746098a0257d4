"""The capture-flags fixer: a break that a Dynamo capture flag removes gets that flag, scoped with
``torch._dynamo.config.patch`` to the compile call of the file that reaches it; files that compile
nothing are left alone.  Checked as text and through real Dynamo."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

SCRIPT = """\
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x):
        n = x.sum().item()
        return self.lin(x) + torch.full((2,), n)

def other(x):
    n = x.sum().item()
    return torch.full((2,), n) - x[:2]

def main(xs):
    torch.manual_seed(0)
    model = Net()
    model = torch.compile(model, backend="eager")
    return [model(x) for x in xs]
"""
ITEM_LINE = 9
OTHER_ITEM_LINE = 13
WRAPPED = 'model = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(model, backend="eager"))'


def fixed(code: str):
    return fix_source(textwrap.dedent(code), "train.py", Settings(), unsafe=True)


def test_the_compile_call_of_the_script_is_wrapped_once():
    result = fixed(SCRIPT)
    assert result.source == SCRIPT.replace('model = torch.compile(model, backend="eager")', WRAPPED)
    assert [(f.fixer, f.code, f.line, f.safety) for f in result.applied] == [
        ("capture-flags", "DYN102", ITEM_LINE, "unsafe")]
    assert "RuntimeError" in result.applied[0].description and "unbacked" in result.applied[0].description
    again = fixed(result.source)
    assert again.source == result.source and not again.applied


def test_a_compiled_function_is_wrapped_where_it_is_assigned():
    code = """\
        import torch

        def step(x):
            n = x.sum().item()
            return torch.full((2,), n) + x[:2]

        step = torch.compile(step)
        """
    wrapped = "step = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(step))"
    assert fixed(code).source == textwrap.dedent(code).replace("step = torch.compile(step)", wrapped)


def test_a_compile_call_reaches_the_forward_of_each_class_a_module_list_mixes():
    code = """\
        import torch
        from torch import nn

        class Plain(nn.Module):
            def forward(self, x):
                return x * 2

        class Counted(nn.Module):
            def forward(self, x):
                n = int((x > 0).sum())
                return x + n

        class Stack(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Counted() if i % 2 else Plain() for i in range(4)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x

        model = torch.compile(Stack())
        """
    wrapped = "model = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Stack()))"
    assert fixed(code).source == textwrap.dedent(code).replace("model = torch.compile(Stack())", wrapped)


def test_only_the_flags_each_compile_call_reaches():
    code = """\
        import torch as th

        def helper(x):
            return th.nonzero(x).sum()

        def f(x):
            return helper(x) + 1

        def g(x):
            n = x.sum().item()
            return th.full((2,), n)

        f_c = th.compile(f)
        g_c = th.compile(g)
        """
    out = fixed(code).source
    assert "f_c = th._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(th.compile(f))" in out
    assert "g_c = th._dynamo.config.patch(capture_scalar_outputs=True)(th.compile(g))" in out


def test_a_patch_already_there_gets_the_missing_flag():
    code = """\
        import torch

        @torch._dynamo.config.patch(capture_scalar_outputs=True)
        @torch.compile
        def f(x):
            n = x.sum().item()
            return torch.nonzero(x).sum() + n
        """
    out = fixed(code).source
    assert "@torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True)\n" \
           "@torch.compile\n" in out
    assert fixed(out).source == out


def test_the_decorator_form_gets_a_patch_above_it():
    code = """\
        import torch

        # the step
        @torch.compile(backend="eager")
        def f(x):
            n = x.sum().item()
            return torch.full((2,), n)
        """
    out = fixed(code).source
    assert out == textwrap.dedent(code).replace(
        '# the step\n', '# the step\n@torch._dynamo.config.patch(capture_scalar_outputs=True)\n')


def test_a_library_file_is_untouched():
    code = SCRIPT[:SCRIPT.index("def main")].rstrip("\n") + "\n"
    result = fixed(code)
    assert result.source == code and not result.applied
    assert any(r.fixer == "capture-flags" and "calls no `torch.compile`" in r.reason for r in result.refused)


def test_refused_for_a_compiled_module_used_other_than_by_calls_and_an_inner_decorator():
    for use in ("model.eval()", "train(model)"):
        module = SCRIPT.replace("    return [model(x)", f"    {use}\n    return [model(x)")
        result = fixed(module)
        assert result.source == module and not result.applied
        assert any("compiles a module" in r.reason for r in result.refused)
    inner = """\
        import functools
        import torch

        @functools.lru_cache
        @torch.compile
        def f(x):
            n = x.sum().item()
            return torch.full((2,), n)
        """
    result = fixed(inner)
    assert result.source == textwrap.dedent(inner)
    assert any("outermost decorator" in r.reason for r in result.refused)


@requires_torch
def test_dynamo_the_patched_call_keeps_the_item_and_other_code_still_breaks(tmp_path):
    import torch

    from dynalint.verify.probe import observe
    from helpers import run_original_and_fixed

    inputs = [([torch.arange(4.0), torch.arange(4.0) + 1],)]
    fixed_source = fixed(SCRIPT).source
    assert WRAPPED in fixed_source
    flag = torch._dynamo.config.capture_scalar_outputs
    before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, SCRIPT, fixed_source, "main", inputs)
    assert ITEM_LINE in seen_before.break_lines(before.__file__)
    assert ITEM_LINE not in seen_after.break_lines(after.__file__)
    assert all(torch.equal(a, b) for a, b in zip(seen_before.outputs[0], seen_after.outputs[0]))
    # the flag held only during the patched call: a function compiled without the patch still breaks
    assert torch._dynamo.config.capture_scalar_outputs == flag
    seen_other = observe(after.other, [(torch.arange(4.0),)], fresh=False)
    assert seen_other.break_lines(after.__file__) == {OTHER_ITEM_LINE}


DECODE = """\
import torch


def decode(logp):
    best = logp.argmax(-1)
    out = []
    for b in range(best.shape[0]):
        seq = torch.unique_consecutive(best[b])
        seq = seq[seq != 0]
        out.append(seq.tolist())
    return out


decode_c = torch.compile(decode, backend="eager")
"""


def test_refused_when_the_flag_keeps_a_size_the_code_then_reads_in_python():
    """``seq[seq != 0]`` stays in the graph under ``capture_dynamic_output_shape_ops``, and ``.tolist()`` of
    it then fails to compile: the flag asked for ``unique_consecutive`` would make the model raise."""
    result = fixed(DECODE)
    assert result.source == DECODE and not result.applied
    assert any(r.fixer == "capture-flags" and "reads its length in Python" in r.reason for r in result.refused)


def _errors_under_flag(tmp_path, source: str, name: str, flag: str, inputs: str) -> list[str]:
    """The errors of ``{name}_c``, compiled by ``source`` with ``flag`` patched on around the compile, over
    ``inputs``; the module as written runs them without one."""
    import torch

    from dynalint.verify.probe import load_module_from_source, observe

    compile_call = f"torch.compile({name}, backend=\"eager\")"
    patched = source.replace(compile_call, f"torch._dynamo.config.patch({flag}=True)({compile_call})")
    args = eval(inputs, {"torch": torch})
    before = load_module_from_source(source, directory=str(tmp_path))
    after = load_module_from_source(patched, directory=str(tmp_path))
    assert not observe(getattr(before, f"{name}_c"), args, compile=False).errors
    return observe(getattr(after, f"{name}_c"), args, compile=False).errors


@requires_torch
def test_dynamo_the_refused_flag_would_make_the_decoder_raise(tmp_path):
    assert _errors_under_flag(tmp_path, DECODE, "decode", "capture_dynamic_output_shape_ops",
                              "[(torch.randn(2, 5, 4),)]")


PICK = """\
import torch

STEPS = (torch.relu, torch.tanh, torch.sigmoid)


def pick(x, order):
    n = x.sum().item()
    y = torch.full((3,), n) + x
    for i in order.tolist():
        y = STEPS[i](y)
    return y


pick_c = torch.compile(pick, backend="eager")
"""


def test_refused_when_the_flag_keeps_a_number_python_needs_as_a_value():
    """``n``'s break is one ``capture_scalar_outputs`` removes, but the flag also keeps ``.tolist()``'s
    numbers symbolic, and ``STEPS[i]`` then fails to compile."""
    result = fixed(PICK)
    assert result.source == PICK and not result.applied
    assert any(r.fixer == "capture-flags" and "where Python needs its value" in r.reason for r in result.refused)


@requires_torch
def test_dynamo_the_refused_scalar_flag_would_make_the_pick_raise(tmp_path):
    errors = _errors_under_flag(tmp_path, PICK, "pick", "capture_scalar_outputs",
                                "[(torch.randn(3), torch.tensor([2, 0, 1]))]")
    assert any("GuardOnDataDependentSymNode" in e for e in errors)


SEGMENTS = """\
import torch


def segments(masks):
    starts = (masks[1:] == 0.0).any(dim=-1).nonzero().squeeze()
    return starts.dim(), starts + 1


segments_c = torch.compile(segments, backend="eager")
"""


def test_refused_when_the_flag_keeps_a_size_that_squeeze_tests():
    """``nonzero().squeeze()`` drops the row dimension when one row is found: with the flag the length is
    unbacked and Dynamo keeps the dimension, so the flag would change what the function returns."""
    result = fixed(SEGMENTS)
    assert result.source == SEGMENTS and not result.applied


@requires_torch
def test_dynamo_the_refused_flag_would_change_the_squeezed_rank(tmp_path):
    import torch

    from dynalint.verify.probe import load_module_from_source

    module = load_module_from_source(SEGMENTS, directory=str(tmp_path))
    one_start = torch.tensor([[1.0], [0.0], [1.0]])
    torch._dynamo.reset()
    try:
        plain = module.segments_c(one_start)
        torch._dynamo.reset()
        with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
            flagged = torch.compile(module.segments, backend="eager")(one_start)
    finally:
        torch._dynamo.reset()
    assert module.segments(one_start)[0] == plain[0] == 0
    assert flagged[0] == 1


SCHEDULE = """\
import torch

ac = torch.linspace(0.99, 0.01, 100)


def sample(x, n):
    ts = torch.linspace(99, 0, n).long().tolist()
    for i, t in enumerate(ts):
        t_prev = ts[i + 1] if i + 1 < len(ts) else -1
        a_prev = ac[t_prev] if t_prev >= 0 else torch.tensor(1.0)
        x = x * ac[t].sqrt() + a_prev
    return x, x.mean().item()


sample_c = torch.compile(sample, backend="eager")
"""


def test_refused_when_the_flag_would_also_keep_a_list_of_numbers_in_the_graph():
    """The flag asked for ``x.mean().item()`` would keep the integer ``.tolist()`` in the graph too, and
    the loop's test of its numbers would then break in the loop (the whole function runs eagerly)."""
    result = fixed(SCHEDULE)
    assert result.source == SCHEDULE and not result.applied
    assert any(r.fixer == "capture-flags" and "would also keep `torch.linspace(99, 0, n).long().tolist()`"
               in r.reason for r in result.refused)


@requires_torch
def test_dynamo_the_flag_moves_the_list_break_into_the_loop(tmp_path):
    from helpers import dynamo_break_lines

    plain = SCHEDULE.replace("sample_c = torch.compile(sample, backend=\"eager\")\n", "") + (
        "\n\ndef main():\n    c = torch.compile(sample, backend=\"eager\")\n"
        "    return [c(torch.ones(3), n) for n in (8, 8, 6)]\n")
    flagged = plain.replace("c = torch.compile(sample, backend=\"eager\")",
                            "c = torch._dynamo.config.patch(capture_scalar_outputs=True)("
                            "torch.compile(sample, backend=\"eager\"))")
    assert 10 not in dynamo_break_lines(tmp_path, plain, "[()]")
    assert 10 in dynamo_break_lines(tmp_path, flagged, "[()]")


RETURNED_LIST = """\
import torch


def report(x):
    worst = x.abs().argsort(descending=True)[:2]
    return {"mean": x.mean().item(), "worst": worst.tolist()}


report_c = torch.compile(report, backend="eager")
"""


def test_a_list_the_compiled_function_returns_leaves_the_graph_and_the_flag_applies():
    result = fixed(RETURNED_LIST)
    assert [a.fixer for a in result.applied] == ["capture-flags"]
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(report" in result.source


@requires_torch
def test_dynamo_the_patched_report_breaks_nowhere_with_the_same_values(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    args = [(torch.tensor([0.5, -3.0, 2.0]),), (torch.tensor([1.0, 4.0, -0.5, 2.0]),)]
    before, after, seen_before, seen_after = run_original_and_fixed(
        tmp_path, RETURNED_LIST, fixed(RETURNED_LIST).source, "report_c", args)
    assert seen_before.break_lines(before.__file__) and not seen_after.break_lines(after.__file__)
    assert seen_after.outputs == seen_before.outputs
