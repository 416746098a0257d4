"""Outputs flattened to comparable leaves, and compared within a dtype's tolerance.

The tolerance depends on the dtype because a compiled graph may reorder or
fuse floating-point operations: what is noise in float16 is a bug in float64.
The rule is ``torch.testing.assert_close``'s at its default tolerances, with
NaN and inf in the same places and the same shapes and dtypes; integers,
booleans and Python values must match exactly.  Whether the outputs are also
identical bit for bit is recorded beside it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import os
import sys
from typing import Any, Iterator

import torch

from dynalint.verify.results import OutputDiff

#: (rtol, atol) per floating dtype; the defaults of torch.testing.assert_close.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}
_DEFAULT_TOL = (1.3e-6, 1e-5)

Leaves = dict[str, Any]


def flatten(value: Any, path: str = "out") -> Leaves:
    """Leaves by path: detached CPU tensors and plain Python values (other objects by type name)."""
    out: Leaves = {}
    _flatten(value, path, out, 0)
    return out


def _flatten(value: Any, path: str, out: Leaves, depth: int) -> None:
    if depth > 50:
        out[path] = "<too deep>"
    elif isinstance(value, torch.Tensor):
        out[path] = value.detach().to("cpu", copy=True)
    elif value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        out[path] = value
    elif isinstance(value, (torch.dtype, torch.device, torch.Size)):
        out[path] = str(value)
    elif isinstance(value, dict) or (hasattr(value, "keys") and hasattr(value, "__getitem__")):
        for k in list(value.keys()):
            _flatten(value[k], f"{path}[{k!r}]", out, depth + 1)
    elif isinstance(value, (tuple, list)):
        out[f"{path}#len"] = len(value)
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", out, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _flatten(getattr(value, f.name), f"{path}.{f.name}", out, depth + 1)
    else:
        out[path] = f"<{type(value).__module__}.{type(value).__qualname__}>"


#: Leaf-name prefixes of what a call leaves behind besides its return value.
STATE, STDOUT, INPUT = "state:", "stdout", "input"


class _Tee(io.StringIO):
    """Keeps what is written (to be compared) and passes it on to the stream it stands in for, so
    what the target prints also reaches the measurement's output log."""

    def __init__(self, through: Any) -> None:
        super().__init__()
        self.through = through

    def write(self, text: str) -> int:
        try:
            self.through.write(text)
        except (OSError, ValueError, AttributeError):
            pass  # a closed or replaced stream: what is kept for the comparison is what counts
        return super().write(text)


@contextlib.contextmanager
def capture_output() -> Iterator[io.StringIO]:
    """What the call prints (``print`` and writes to ``sys.stdout``), kept to be compared and
    passed on to ``sys.stdout``."""
    saved = sys.stdout
    buf = _Tee(saved)
    sys.stdout = buf
    try:
        yield buf
    finally:
        sys.stdout = saved


def state_leaves(obj: Any, printed: str, args: Any = ()) -> Leaves:
    """What a call leaves behind: the module's parameters, buffers and plain Python attributes
    (every submodule's), the tensors it was given (in-place updates), and what it printed."""
    out: Leaves = {STDOUT: printed}
    if isinstance(obj, torch.nn.Module):
        tensors = list(obj.named_parameters()) + list(obj.named_buffers())
        whole = sum(t.numel() for _, t in tensors) <= STATE_COPY_LIMIT
        for name, t in tensors:
            out[f"{STATE}{name}"] = t.detach().to("cpu", copy=True) if whole or t.dim() == 0 else _fingerprint(t)
        for prefix, mod in obj.named_modules():
            for name, value in vars(mod).items():
                if not name.startswith("_") and name != "training" and (
                        value is None or isinstance(value, (bool, int, float, str))):
                    out[f"{STATE}{prefix + '.' if prefix else ''}{name}"] = value
    from dynalint.verify.stream import tensor_leaves

    for path, t in tensor_leaves(args):
        out[f"{INPUT}{path}"] = t.detach().to("cpu", copy=True)
    return out


#: Module state up to this many elements is kept whole after every call; a larger model's tensors are
#: kept as fingerprints (see _fingerprint), so that verifying a big model does not copy it per call.
STATE_COPY_LIMIT = 4_000_000


def _fingerprint(t: torch.Tensor) -> torch.Tensor:
    """Sum, sum of absolute values and sum of squares in float64: any change beyond rounding moves one."""
    x = t.detach().to(torch.float64)
    if x.is_complex():
        x = torch.view_as_real(x)
    return torch.stack([x.sum(), x.abs().sum(), (x * x).sum()]).cpu()


def _as_number(value: Any) -> Any:
    """A 0-d tensor read as the Python number it holds (module state kept as a buffer or as an attribute)."""
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_complex():
        return value.item()
    return value


def compare(actual: Leaves, expected: Leaves) -> OutputDiff:
    """Compare two flattened outputs; the diff holds the largest errors and the tolerance that applied."""
    if actual.keys() != expected.keys():
        missing = sorted(set(expected) ^ set(actual))[:3]
        return OutputDiff(False, math.inf, math.inf, note=f"different structure ({', '.join(missing)})")
    diff = OutputDiff(True, bitwise=True)
    for key, exp in expected.items():
        act = actual[key]
        if key.startswith(STATE) and isinstance(exp, torch.Tensor) != isinstance(act, torch.Tensor):
            act, exp = _as_number(act), _as_number(exp)
            if isinstance(act, (int, float)) and isinstance(exp, (int, float)):
                act, exp = float(act), float(exp)
        if isinstance(exp, torch.Tensor) or isinstance(act, torch.Tensor):
            _compare_tensor(key, act, exp, diff)
        elif isinstance(exp, float) and isinstance(act, float):
            _compare_tensor(key, torch.tensor(act, dtype=torch.float64), torch.tensor(exp, dtype=torch.float64), diff)
        elif act != exp:
            diff.equal = diff.bitwise = False
            diff.note = diff.note or f"{key}: {_short(act)} != {_short(exp)}"
    return diff


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The same dtype, shape and bytes (NaN payloads included): what a hash of the output compares."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    a, b = a.detach().cpu().contiguous().reshape(-1), b.detach().cpu().contiguous().reshape(-1)
    if a.dtype == torch.bool:
        return torch.equal(a, b)
    return torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def _compare_tensor(key: str, act: Any, exp: Any, diff: OutputDiff) -> None:
    identical = isinstance(act, torch.Tensor) and isinstance(exp, torch.Tensor) and bitwise_equal(act, exp)
    if not identical:
        diff.bitwise = False
    if not (isinstance(act, torch.Tensor) and isinstance(exp, torch.Tensor)):
        diff.equal = False
        diff.note = diff.note or f"{key}: a tensor against {type(act if isinstance(exp, torch.Tensor) else exp).__name__}"
        return
    if act.shape != exp.shape or act.dtype != exp.dtype:
        diff.equal = False
        diff.max_abs = diff.max_rel = math.inf
        diff.note = diff.note or f"{key}: {act.dtype}{list(act.shape)} != {exp.dtype}{list(exp.shape)}"
        return
    if not (exp.is_floating_point() or exp.is_complex()):
        if not torch.equal(act, exp):
            diff.equal = False
            wrong = int((act != exp).sum())
            diff.note = diff.note or f"{key}: {wrong} of {exp.numel()} values differ"
            diff.max_abs = max(diff.max_abs, float((act.double() - exp.double()).abs().max()))
        return
    rtol, atol = TOLERANCES.get(exp.dtype, _DEFAULT_TOL)
    diff.rtol, diff.atol = max(diff.rtol, rtol), max(diff.atol, atol)
    if exp.numel() == 0:
        return
    if identical:  # the same bytes: within any tolerance, no error (see _identical_error)
        diff.max_abs = max(diff.max_abs, _identical_error(exp))
        return
    a, e = act.to(torch.complex128 if exp.is_complex() else torch.float64), \
        exp.to(torch.complex128 if exp.is_complex() else torch.float64)
    both_nan = torch.isnan(a) & torch.isnan(e)
    err = torch.where(both_nan, torch.zeros_like(a.real if a.is_complex() else a), (a - e).abs())
    err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
    rel = err / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    rel = torch.where(err == 0, torch.zeros_like(rel), rel)
    diff.max_abs = max(diff.max_abs, float(err.max()))
    diff.max_rel = max(diff.max_rel, float(rel.max()))
    if not torch.allclose(act, exp, rtol=rtol, atol=atol, equal_nan=True):
        diff.equal = False
        diff.note = diff.note or f"{key}: max abs error {float(err.max()):.3g} > tolerance (rtol {rtol:g}, atol {atol:g})"


def _identical_error(t: torch.Tensor) -> float:
    """The largest absolute error the general computation below finds between a floating tensor and
    an identical copy: 0, or infinity where both hold the same infinity (``inf - inf`` is NaN, which
    counts as infinite; a NaN in both places counts as no error).  Most compared outputs are
    identical (the eager backend replays the same kernels): a few tensor operations instead of twenty."""
    return math.inf if bool((torch.isinf(t) & ~torch.isnan(t)).any()) else 0.0


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def save(path: str, outputs: list[Leaves | None]) -> None:
    """Write outputs for another worker to compare against (temporary file, then rename)."""
    tmp = path + ".tmp"
    torch.save(outputs, tmp)
    os.replace(tmp, path)


def load(path: str) -> list[Leaves | None]:
    return torch.load(path, weights_only=False)
