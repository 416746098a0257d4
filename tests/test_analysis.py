"""The dataflow analysis: what it considers a tensor, a size, a data-dependent scalar, or unknown."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from dynalint.analysis.events import ConditionEvent
from dynalint.analysis.program import Program, Scope
from dynalint.analysis.values import Kind

from conftest import requires_torch
from helpers import check, codes


def condition_kinds(code: str, scope: Scope = Scope.AUTO) -> list[str]:
    program = Program(cst.parse_module(textwrap.dedent(code)), scope=scope).run()
    return [e.value.kind.value for e in program.events if isinstance(e, ConditionEvent)]


MODULE = """
import torch
import torch.nn as nn

class M(nn.Module):
    def __init__(self, flag=True):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.flag = flag
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x, mask=None, training_step: int = 0):
        {body}
"""


@pytest.mark.parametrize("expr, kind", [
    ("x.sum() > 0", "tensor"),
    ("self.fc(x).mean() > 0", "tensor"),
    ("(self.scale > 1).any()", "tensor"),
    ("x.shape[0] > 2", "size"),
    ("x.dim() == 3", "size"),
    ("len(x) > 1", "size"),
    ("x.numel()", "size"),
    ("x.dtype == torch.float16", "python"),
    ("x.is_cuda", "python"),
    ("self.training", "python"),
    ("self.flag", "python"),
    ("training_step > 10", "python"),
    ("mask is None", "python"),
    ("isinstance(x, torch.Tensor)", "python"),
])
def test_condition_kinds_in_forward(expr, kind):
    body = f"if {expr}:\n            x = x + 1\n        return x"
    kinds = condition_kinds(MODULE.format(body=body))
    assert kinds and kinds[0] == kind


def test_unknown_values_are_silent():
    # `cfg` could be anything: an attribute of an unknown object is unknown, and nothing is flagged
    assert codes("""
        import torch

        def helper(cfg, x):
            if cfg.threshold > 0:
                return x
            return cfg.fallback(x)
    """) == []


def test_forward_parameter_used_as_a_flag_is_not_a_tensor():
    assert codes("""
        import torch.nn as nn

        class Head(nn.Module):
            def forward(self, x, return_features):
                if return_features:
                    return x, x
                return x
    """) == []


def test_optional_tensor_parameter_is_a_tensor_after_none_check():
    diags = check("""
        import torch.nn as nn

        class Block(nn.Module):
            def forward(self, x, attn_mask=None):
                if attn_mask is not None:
                    if (attn_mask.sum(-1) == 0).any():
                        attn_mask = attn_mask | 1
                return x
    """)
    assert [d.code for d in diags] == ["DYN101"] and diags[0].line == 6


def test_helper_called_with_tensors_is_analysed_with_them():
    diags = check("""
        import torch.nn as nn

        def fuse(a, b):
            if a.abs().mean() > b.abs().mean():
                return a
            return b

        class M(nn.Module):
            def forward(self, x, y):
                return fuse(x, y)
    """, scope=Scope.COMPILED)
    assert [(d.code, d.line) for d in diags] == [("DYN101", 4)]


def test_compile_predicates_skip_code_dynamo_never_traces():
    assert codes("""
        import torch
        from transformers.utils import is_torchdynamo_compiling

        @torch.compile
        def f(x):
            if not is_torchdynamo_compiling() and x.sum() > 0:
                print(x.item())
            if torch.compiler.is_compiling():
                return x
            return x.item()
    """) == []


def test_handlers_of_a_try_that_only_asks_torch_never_run_under_compile():
    helper = """
        import torch

        def compiling() -> bool:
            try:
                {body}
                return torch.compiler.is_compiling()
            except Exception:
                return False

        @torch.compile
        def f(x):
            if compiling():
                return x
            return x.item()
    """
    assert codes(helper.replace("{body}", "import torch")) == []
    # another library may be missing: the handler may run, and then `.item()` does
    assert codes(helper.replace("{body}", "import numpy")) == ["DYN102"]


def test_dtype_specialised_paths_are_silent():
    assert codes("""
        import torch

        @torch.compile
        def clamp_fp16(h):
            if h.dtype == torch.float16 and not torch.isfinite(h).all():
                h = h.clamp(-1000, 1000)
            return h
    """) == []


def test_scope_compiled_ignores_plain_helpers_and_all_includes_methods():
    code = """
        import torch

        def helper(x):
            return x.sum().item()

        class Tracker:
            def update(self, x: torch.Tensor):
                return x.mean().item()
    """
    assert codes(code, scope=Scope.COMPILED) == []
    # a public method of a plain class that takes a tensor is a library helper, like `helper`
    assert sorted(codes(code, scope=Scope.AUTO)) == ["DYN102", "DYN102"]
    assert sorted(codes(code, scope=Scope.ALL)) == ["DYN102", "DYN102"]


def test_loop_carried_values_are_seen():
    diags = check("""
        import torch

        @torch.compile
        def f(x, n: int):
            acc = 0
            for _ in range(n):
                if acc > 1:
                    break
                acc = x.sum()
            return acc
    """)
    assert [d.code for d in diags] == []  # acc is 0 or a tensor: unknown, so silent


def test_boolean_masks_are_tracked_through_operations():
    assert codes("""
        import torch

        @torch.compile
        def f(x, y):
            keep = (x > 0) & ~torch.isnan(y)
            return y[keep]
    """) == ["DYN104"]
    assert codes("""
        import torch

        @torch.compile
        def f(x, idx):
            sel = torch.argsort(x)[:3]
            return x[sel]
    """) == []


def test_tuple_unpacking_of_multi_output_ops():
    assert codes("""
        import torch

        @torch.compile
        def f(x):
            values, indices = x.max(-1)
            if values.sum() > 0:
                return indices
            return values
    """) == ["DYN101"]


def test_internal_values_have_the_documented_kinds():
    assert Kind.TENSOR.value == "tensor" and Kind.SCALAR.value == "scalar" and Kind.SIZE.value == "size"


def test_forward_parameter_unpacked_into_names_is_not_a_tensor():
    assert codes("""
        import torch.nn as nn

        class Block(nn.Module):
            def forward(self, x, dims):
                height, width = dims
                if height % 2 == 1 or width > 8:
                    x = x * 2
                return x
    """) == []


def test_one_graph_break_diagnostic_per_statement_the_first_dynamo_hits():
    diags = check("""
        import torch

        @torch.compile
        def f(x):
            print("value", x.sum().item())
            return x
    """)
    # the .item() runs before print: one graph-break diagnostic for the statement; the value then
    # crosses the break into print's arguments, which Dynamo guards on (measured: one recompile)
    assert [d.code for d in diags if d.kind == "graph-break"] == ["DYN102"]
    assert [d.code for d in diags if d.kind == "recompile"] == ["DYN204"]


def test_attribute_set_before_it_is_read_in_forward_is_not_a_recompile_hazard():
    code = """
        import torch
        import torch.nn as nn

        class Router(nn.Module):
            def __init__(self):
                super().__init__()
                self.input_dtype = torch.float32
                self.calls = 0

            def forward(self, x):
                self.input_dtype = x.dtype
                self.calls += 1
                return x.float().softmax(-1).to(self.input_dtype)
    """
    assert [d.message.split("`")[1] for d in check(code) if d.code == "DYN203"] == ["self.calls"]


def test_scope_all_includes_functions_defined_inside_others():
    # a decorator's wrapper and a hook are never called where they are defined
    code = """
        import functools
        import logging
        import torch

        logger = logging.getLogger(__name__)

        def warn_on_cache(func):
            @functools.wraps(func)
            def wrapper(self, *args, **kwargs):
                if kwargs.get("use_cache"):
                    logger.warning("use_cache is ignored")
                return func(self, *args, **kwargs)
            return wrapper

        def add_hook(module):
            def hook(mod, inputs, output):
                output.requires_grad_(True)
                noise = torch.zeros_like(output)
                noise.requires_grad_()
                return output + noise
            module.register_forward_hook(hook)
    """
    found = check(code, scope=Scope.ALL)
    # the logger call in the wrapper; requires_grad_ on the fresh tensor, not on the hook's argument
    assert [(d.code, d.line) for d in found] == [("DYN105", 11), ("DYN105", 19)]
    # a forward hook runs inside the module's call: an entry point as `forward` is, under the default scope too
    assert [(d.code, d.line) for d in check(code, scope=Scope.AUTO)] == [("DYN105", 19)]


def test_a_tensor_built_from_a_parameter_is_no_evidence_that_it_is_a_tensor():
    """``new_zeros(n, d)`` is a tensor whatever ``n`` is: joined with an unknown value round a loop
    and then used as a tensor, it must not make the size parameter ``n`` a tensor."""
    code = """
        import torch

        def cluster(samples, num_clusters, sample_fn, iters: int = 3):
            means = sample_fn(samples)
            for _ in range(iters):
                buckets = torch.argmax(samples, dim=-1)
                new_means = buckets.new_zeros(num_clusters, 4)
                means = torch.where(buckets.sum() > 0, means, new_means)
            return means, torch.zeros(num_clusters, 3)
    """
    assert codes(code, scope=Scope.ALL) == []


def test_fields_of_records_hold_what_they_are_annotated_with():
    code = """
        from dataclasses import dataclass, field
        from typing import Dict, NamedTuple, Optional

        import torch

        class Beams(NamedTuple):
            tokens: torch.Tensor
            width: int

        @dataclass
        class Batch:
            labels: torch.Tensor
            weights: Optional[torch.Tensor] = None
            names: Dict[str, int] = field(default_factory=dict)

        def finalize(beams: Beams):
            if beams.width > 1:
                return beams.tokens.tolist()
            return []

        def weigh(batch: Batch, x):
            if batch.weights is not None and batch.names:
                x = x * batch.weights
            if (batch.labels > 0).any():
                return x
            return -x
    """
    # a parameter annotated with a record of tensors makes a helper a library entry point (scope auto)
    assert codes(code) == ["DYN102", "DYN101"]
    assert codes(code, scope=Scope.COMPILED) == []



def test_containers_on_self_report_only_changes_of_length_or_keys():
    code = """
        import torch
        import torch.nn as nn

        class Tracker(nn.Module):
            def __init__(self):
                super().__init__()
                self.history = [torch.zeros(2), torch.zeros(2)]
                self.stats = {"mean": torch.zeros(())}
                self.seen = {}
                self.trace = []

            def forward(self, x):
                self.history[0] = x.mean(0)
                self.stats["mean"] = x.mean()
                self.seen[x.shape[0]] = True
                self.trace = []
                self.trace.append(x)
                return x * 2
    """
    diagnostics = check(code)
    assert [(d.code, d.line) for d in diagnostics] == [("DYN203", 15)]


# --- provenance: what enters the frame, what is computed from data, what is a constant ---------

def test_a_tensor_argument_used_as_a_size_is_a_graph_input_but_arithmetic_on_it_is_data():
    found = check("""
        import torch

        @torch.compile
        def f(h, count: torch.Tensor):
            a = h.new_zeros(count, 3) + h.narrow(0, 0, count).sum() + torch.arange(count.long()).sum()
            return a, h.new_zeros(count + 1, 3)
    """)
    assert [(d.code, d.line) for d in found if d.kind == "graph-break"] == [("DYN102", 6)]


def test_a_size_parameter_nothing_shows_to_be_a_tensor_is_not_reported_as_one():
    found = check("""
        import torch
        import torch.nn as nn

        class Bias(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = nn.Parameter(torch.zeros(10, 4))

            def forward(self, window_size, height, width):
                n = (2 * window_size[0] - 1) * (2 * window_size[1] - 1) + 3
                return self.table.reshape(n - 3, -1).view(height, width, -1)
    """)
    assert [d.code for d in found if d.kind == "graph-break"] == []


def test_torch_functions_of_sizes_fold_but_a_factory_tensor_is_data():
    found = check("""
        import torch

        @torch.compile
        def f(h):
            half = torch.div(h.size(1), 2, rounding_mode="trunc")
            return h.view(2, half, 2, 4), h.new_zeros(torch.ones(3).sum().int(), 2)
    """)
    assert [(d.code, d.line) for d in found if d.kind == "graph-break"] == [("DYN102", 6)]


def test_a_module_flag_bound_once_decides_the_branch_and_a_rebound_one_does_not():
    code = """
        import torch

        TRACE = False

        @torch.compile
        def f(x):
            if TRACE:
                print("x", x.shape)
            return x * 2
    """
    assert [d.code for d in check(code)] == []
    rebound = code + """
        def enable():
            global TRACE
            TRACE = True
    """
    assert "DYN105" in [d.code for d in check(rebound)]


def test_breaks_inside_a_loop_say_the_whole_function_runs_eagerly():
    found = check("""
        import torch

        @torch.compile
        def f(x):
            for _ in range(3):
                kept = x[x > 0]
                x = x.new_zeros((kept > 0).sum(), 2)
            return x
    """)
    messages = {d.code: d.message for d in found if d.kind == "graph-break"}
    # Dynamo gives up the frame at the first break in the loop and never traces the line after it
    assert set(messages) == {"DYN104"}
    assert all("runs it eagerly" in m for m in messages.values())


def test_a_number_from_a_skipped_clock_or_rng_call_is_guarded_by_the_resumed_frame():
    found = check("""
        import random
        import time
        import torch

        @torch.compile
        def f(x):
            now = time.time()
            return x * 2 + now + random.random()
    """)
    guarded = [d for d in found if d.code == "DYN204"]
    assert guarded and all("skipped call" in d.message for d in guarded)
    assert not any("capture_scalar_outputs" in (d.hint or "") for d in guarded)  # the flag leaves a clock call


def test_the_scalar_flag_is_offered_only_where_it_keeps_the_number_in_the_graph():
    found = check("""
        import torch

        STEPS = [torch.relu, torch.tanh, torch.sigmoid]

        @torch.compile
        def pick(x):
            n = int(x.sum().item()) % 3
            return STEPS[n](x)

        @torch.compile
        def scale(x):
            n = x.sum().item()
            return x * n
    """)
    hints = {d.line: d.hint or "" for d in found if d.code == "DYN204"}
    # with the flag on, indexing a Python list with the number fails to compile (GuardOnDataDependentSymNode)
    assert 7 in hints and "capture_scalar_outputs" not in hints[7]
    assert 13 in hints and "capture_scalar_outputs" in hints[13]


def test_a_math_function_of_the_extracted_number_compiles_no_resumed_frame():
    """Measured on torch 2.13: ``-10 * math.log10(mse.item())`` leaves a resumed frame without a graph
    (Dynamo folds ``math`` on Python numbers and skips it): no guard; times a tensor, it recompiles."""
    code = """
        import math
        import torch

        @torch.compile
        def psnr(pred, target):
            mse = ((pred - target) ** 2).mean()
            return -10.0 * math.log10(mse.item())

        @torch.compile
        def scaled(pred, target):
            mse = ((pred - target) ** 2).mean()
            return pred * math.log10(mse.item())
    """
    assert [d.line for d in check(code) if d.code == "DYN204"] == [12]


def test_scope_auto_covers_public_methods_of_plain_classes_that_take_tensors():
    code = """
        import torch
        from torch import Tensor

        class Scheduler:
            def __init__(self, steps: int):
                self.sigmas = torch.linspace(1, 0, steps)

            def step(self, model_output: Tensor, timestep, sample: Tensor):
                return sample - model_output * self.sigmas[timestep].item()

            def _index(self, sample: Tensor):
                return sample.sum().item()

            def describe(self, name):
                print(name)
    """
    assert [(d.code, d.line) for d in check(code) if d.kind == "graph-break"] == [("DYN102", 9)]


# -- graph breaks: one Break per event, in the order Dynamo meets them --------------------------------

def _breaks(code: str, **settings):
    from dynalint.analysis.breaks import find_breaks
    from dynalint.core.positions import node_ranges

    from helpers import settings_for

    source = textwrap.dedent(code).strip("\n") + "\n"
    module = cst.parse_module(source)
    program = Program(module).run()
    breaks = find_breaks(program, settings_for(**settings))
    lines = {key: r.line for key, r in node_ranges(module, source, [b.node for b in breaks]).items()}
    return breaks, lines, source


BREAKING = """
    import torch

    @torch.compile
    def f(x):
        if x.sum() > 0:
            x = x * 2
        n = x.abs().max().item()
        y = x[x > 0]
        print("value", x.sum().item())
        return y * n
"""


def test_one_break_per_event_with_its_dynamo_type_and_cause():
    from dynalint.analysis.breaks import Cause

    breaks, lines, _ = _breaks(BREAKING)
    assert [(lines[id(b.node)], b.cause, b.gb.id) for b in breaks] == [
        (5, Cause.CONDITION, "GB0170"),
        (7, Cause.SCALAR_EXTRACTION, "GB0124"),
        (8, Cause.MASK_INDEX, "GB0036"),
        (9, Cause.SCALAR_EXTRACTION, "GB0124"),
        (9, Cause.UNTRACEABLE_CALL, "GB0059"),
    ]
    print_stmt = breaks.all[-1].statement
    # the `.item()` in the arguments runs first: it is the statement's first break
    assert breaks.first_in_statement(print_stmt).cause is Cause.SCALAR_EXTRACTION
    # print takes the value as its argument: nothing is pending when print breaks
    assert breaks.next_in_statement(breaks.first_in_statement(print_stmt)) is None
    assert [b.cause for b in _breaks(BREAKING, capture_scalar_outputs=True)[0]] == [
        Cause.CONDITION, Cause.MASK_INDEX, Cause.UNTRACEABLE_CALL]


@requires_torch
def test_the_break_list_is_the_one_dynamo_logs(tmp_path):
    """Same lines, same graph-break types, same order as Dynamo's graph-break log (torch 2.13)."""
    from dynalint.rules.base import Example

    from helpers import run_example_under_dynamo

    breaks, lines, source = _breaks(BREAKING)
    obs, module = run_example_under_dynamo(Example(source, inputs="[(torch.randn(6),)]"), tmp_path)
    logged = [(b.line, b.gb_type) for b in obs.breaks if b.file == module.__file__]
    assert logged == [(lines[id(b.node)], b.gb.text) for b in breaks]


def test_a_value_still_pending_at_the_next_break_of_its_statement():
    code = """
        import torch

        def summary(a, b):
            return {"a": a.item(), "b": b.item()}

        @torch.compile
        def f(x, y):
            return summary(x, y), summary(y, x)
    """
    breaks, lines, _ = _breaks(code)
    first, second = breaks.all[:2]
    assert breaks.next_in_statement(first) is second
    # the helper is analysed once per call: its second pass is another frame, not a later break
    assert breaks.next_in_statement(second) is None
    assert [(d.line, d.column) for d in check(code) if d.code == "DYN204"] == [(4, 18)]


_CALLED = """
import torch
from torch import nn

class Scale(nn.Module):
    def forward(self, x, factor):
        if factor > 1.0:
            return x * 2
        return x

class Sampler(nn.Module):
    def __init__(self, factor):
        super().__init__()
        {init}

    def forward(self, x):
        {body}
"""


@pytest.mark.parametrize("init, body, reported", [
    ("self.scale = Scale()", "return self.scale(x, 2)", False),
    ("self.scale = Scale()", "return self.scale(self.scale(x, 2), 0.5)", False),
    # a value whose kind is not known, an instance in a container, spread arguments, a second name
    # for the instance: not every call is known to pass a number
    ("self.scale = Scale(); self.factor = factor", "return self.scale(x, self.factor)", True),
    ("self.scales = nn.ModuleList([Scale()])", "return self.scales[0](x, 2)", True),
    ("self.scale = Scale()", "return self.scale(x, *[2])", True),
    ("self.scale = Scale(); self.other = self.scale", "return self.scale(x, 2)", True),
    ("self.scale = Scale()", "return self.scale(x, x.sum())", True),
])
def test_an_untyped_argument_every_caller_passes_a_number_is_a_number(init: str, body: str, reported: bool):
    found = [d.line for d in check(_CALLED.format(init=init, body=body)) if d.code == "DYN101"]
    assert (found == [6]) == reported and (found == []) != reported


def test_a_compiled_function_called_with_numbers_only_is_not_a_tensor_test():
    code = """
        import torch

        @torch.compile
        def f(x, y):
            if y == 2:
                return x * 2
            return x

        def run(x, steps: int):
            for i in range(3):
                x = f(x, i)
            return f(x, steps)
    """
    assert "DYN101" not in codes(code)
    # handed on as a value: a call may pass anything
    assert "DYN101" in codes(code.replace("f(x, steps)", "list(map(f, [x]))"))
