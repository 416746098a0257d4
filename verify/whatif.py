"""What-ifs on the user's stream: the two standard remedies for recompiles caused by changing
sizes, and Dynamo's own settings for graph breaks on data-dependent values.

The stream is rerun compiled (fresh module, reset Dynamo, each rerun a phase
of its own) once with the
dimensions whose size changes across input sets marked dynamic
(``torch._dynamo.mark_dynamic``) and once with those dimensions padded with
zeros to a multiple of 8; the recompiles each run needs are set against the
original run's.  Padding changes what the code computes (the user must mask
or slice), so only recompiles are compared, not outputs.

When the compiled run broke the graph on a data-dependent value (a break Dynamo itself calls
data-dependent or points to those settings for, and does not call fundamental, as it does a
branch on a tensor's value), the stream is rerun once more with
``capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops`` on (those not
already on): ``.item()`` and data-dependent output shapes (``nonzero``,
``x[mask]``) then stay in the graph as symbolic values.  Break sites,
recompiles and outputs (against eager) are reported, so a user learns whether
a setting beats a rewrite.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch._dynamo
import torch.nn.functional as F

from dynalint.verify import outputs
from dynalint.verify.probe import DynamoLog
from dynalint.verify.results import WhatIf
from dynalint.verify.spec import MeasureSpec
from dynalint.verify.stream import Call, Stream, map_tensors, tensor_leaves
from dynalint.verify.tracebacks import describe, is_user_file

PAD_MULTIPLE = 8

#: Words of Dynamo's break types and explanations for breaks on data-dependent values and shapes:
#: the breaks its capture settings are for (the others, a ``print``, an unsupported builtin,
#: are not worth a rerun of the stream).
_DATA_DEPENDENT = ("data-dependent", "data dependent", "capture_scalar_outputs", "capture_dynamic_output_shape_ops",
                   "depends on input tensor data", "dynamic shape operator")


def data_dependent(site: Any) -> bool:
    """Whether a break site (``BreakSite``) is one Dynamo's capture settings may keep in the graph:
    not one Dynamo calls fundamental (a branch on a tensor's value breaks under them too)."""
    if site.fundamental:
        return False
    text = f"{site.gb_type} {site.explanation}".lower()
    return any(word in text for word in _DATA_DEPENDENT)


def varying_dims(calls: list[Call]) -> list[tuple[str, int]]:
    """(argument path, dim) of the tensors whose size at that dim is not the same in every input set."""
    shapes: dict[str, list[tuple[int, ...]]] = {}
    for call in calls:
        for path, t in tensor_leaves((call.args, call.kwargs)):
            shapes.setdefault(path, []).append(tuple(t.shape))
    out = []
    for path, seen in shapes.items():
        if len(seen) != len(calls) or len({len(s) for s in seen}) != 1:
            continue
        for dim in range(len(seen[0])):
            if len({s[dim] for s in seen}) > 1:
                out.append((path, dim))
    return out


def _label(path: str, dim: int) -> str:
    args_or_kwargs, _, rest = path.partition("]")
    where = "args" if args_or_kwargs == "[0" else "kwargs"
    return f"{where}{rest} dim {dim}"


def _rerun(spec: MeasureSpec, transform: Callable[[int, tuple, dict], tuple[tuple, dict]],
           progress: Callable[[str, int], None], phase: str) -> int:
    """Recompiles over the stream with each call's arguments transformed (raises on a user error)."""
    torch._dynamo.reset()
    stream = Stream(spec)
    wrap = lambda obj: torch.compile(obj, backend=spec.backend)  # noqa: E731
    with DynamoLog([spec.module_path]) as log:
        for i, call in enumerate(stream.calls):
            progress(phase, i)
            stream.before_call(i)
            log.input_index = i
            _, fn = stream.instance(call, wrap=wrap)
            args, kwargs = transform(i, *stream.prepared_args(call))
            with torch.enable_grad() if spec.mode == "train" else torch.no_grad():
                fn(*args, **kwargs)
    torch._dynamo.reset()
    return len(log.recompiles)


REMEDIES = ("mark_dynamic", "pad8")


def what_if(spec: MeasureSpec, calls: list[Call], baseline: int, remedy: str,
            progress: Callable[[str, int], None]) -> WhatIf | None:
    """The stream rerun with one remedy (None when no dimension changes size across the input sets)."""
    dims = varying_dims(calls)
    if not dims:
        return None
    labels = [_label(p, d) for p, d in dims]
    wanted: dict[str, list[int]] = {}
    for p, d in dims:
        wanted.setdefault(p, []).append(d)

    def per_leaf(args: tuple, kwargs: dict, fn: Callable[[torch.Tensor, list[int]], Any]) -> tuple[tuple, dict]:
        leaves = {id(t): p for p, t in tensor_leaves((args, kwargs))}
        def apply(t: torch.Tensor) -> Any:
            path = leaves.get(id(t))
            return fn(t, wanted[path]) if path in wanted else t
        return map_tensors(args, apply), map_tensors(kwargs, apply)

    def mark(i: int, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        def do(t: torch.Tensor, ds: list[int]) -> torch.Tensor:
            for d in ds:
                torch._dynamo.mark_dynamic(t, d)
            return t
        return per_leaf(args, kwargs, do)

    def pad(i: int, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        def do(t: torch.Tensor, ds: list[int]) -> torch.Tensor:
            for d in ds:
                extra = -t.shape[d] % PAD_MULTIPLE
                if extra:
                    spec_ = [0, 0] * (t.dim() - 1 - d) + [0, extra]
                    t = F.pad(t.detach(), spec_).requires_grad_(t.requires_grad)
            return t
        return per_leaf(args, kwargs, do)

    transform = mark if remedy == "mark_dynamic" else pad
    try:
        n = _rerun(spec, transform, progress, f"what-if {remedy}")
        return WhatIf(remedy, labels, n, baseline - n)
    except (Exception, SystemExit) as exc:  # sys.exit() in user code is an error too
        torch._dynamo.reset()
        return WhatIf(remedy, labels, None, None, describe(exc))


#: Dynamo's settings that keep data-dependent values in the graph.
CAPTURE_FLAGS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")


def capture_flags_what_if(spec: MeasureSpec, eager_outputs: list, break_sites: int, baseline: int,
                          progress: Callable[[str, int], None]) -> WhatIf | None:
    """The stream rerun with Dynamo's capture settings on (None when they are on already)."""
    from dynalint.verify.measure import run_call

    off = [name for name in CAPTURE_FLAGS if not spec.dynamo_config.get(name)]
    if not off:
        return None
    try:
        torch._dynamo.reset()
        stream = Stream(spec)
        wrap = lambda obj: torch.compile(obj, backend=spec.backend)  # noqa: E731
        equal = True
        with torch._dynamo.config.patch(**{name: True for name in off}), DynamoLog(is_user=is_user_file) as log:
            for i, call in enumerate(stream.calls):
                progress("what-if capture_flags", i)
                stream.before_call(i)
                log.input_index = i
                obj, fn = stream.instance(call, wrap=wrap)
                leaves, _ = run_call(stream, i, call, fn, obj)
                expected = eager_outputs[i] if i < len(eager_outputs) else None
                if expected is None or not outputs.compare(leaves, expected).equal:
                    equal = False
        torch._dynamo.reset()
    except (Exception, SystemExit) as exc:
        torch._dynamo.reset()
        return WhatIf("capture_flags", off, None, None, describe(exc))
    sites = len({(b.file, b.line, b.gb_type) for b in log.breaks})
    return WhatIf("capture_flags", off, len(log.recompiles), baseline - len(log.recompiles),
                  breaks=sites, breaks_saved=break_sites - sites, outputs_equal=equal)
