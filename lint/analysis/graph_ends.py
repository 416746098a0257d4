"""A tensor where a torch op takes a Python number or size, decided from values alone.

The break classification (:mod:`dynalint.analysis.breaks`) reads it and decides, under the capture
settings, whether the graph ends there; the module depends only on events, values and torch's
number-parameter table.
"""
from __future__ import annotations

from typing import Callable

from dynalint.analysis import knowledge as K, number_args
from dynalint.analysis.events import CallEvent
from dynalint.analysis.values import Kind, Value


def _holds_data(v: Value) -> bool:
    """A tensor computed from data in this graph, or a tuple/list written with one in it (``(n, 4)``).

    A tensor that entered the frame (an argument, module state, a value live across a break) is a
    graph input Dynamo reads as a size without breaking, and torch functions of Python numbers are
    constants; neither is reported.
    """
    if v.kind is Kind.SEQUENCE:
        return any(_holds_data(i) for i in v.items) if v.items is not None else v.elements().data_dependent
    return v.data_dependent


def _signature(call: CallEvent) -> tuple[tuple, int] | None:
    """The number-parameter entry of a torch op call and the position of its first argument."""
    q = call.qualname
    if q is not None:
        module, _, name = q.rpartition(".")
        if module == "torch":
            entry = number_args.TORCH.get(name)
        elif module == "torch.nn.functional":
            entry = number_args.FUNCTIONAL.get(name) or number_args.TORCH.get(name)
        elif module in ("torch.fft", "torch.linalg", "torch.special"):
            entry = number_args.TORCH.get(f"{module[6:]}_{name}")  # (aten's `fft_rfft` is `torch.fft.rfft`)
        else:
            return None
        return (entry, 0) if entry is not None else None
    if call.method is not None and call.receiver is not None and call.receiver.is_tensor:
        entry = number_args.TORCH.get(call.method)
        if entry is not None and entry[3]:
            return entry, 1  # the receiver is the op's first (tensor) parameter
    return None


def tensor_for_number(call: CallEvent, holds: Callable[[Value], bool] = _holds_data) -> str | None:
    """Which argument of a torch op is a tensor where the op takes a Python number or size
    (``torch.zeros(n)``, ``x.narrow(0, s, length)``, ``F.pad(x, pads)``), if one is; ``holds``: what such
    an argument is (a tensor computed from data, by default)."""
    found = _signature(call)
    if found is None:
        return None
    (positions, varargs, keywords, _), first = found
    last = max(positions) if positions else -1
    shaping = call.qualname is None and call.method in _SHAPE_METHODS
    for i, v in enumerate(call.args):
        pos = first + i
        if (pos in positions or (varargs and pos >= last >= 0)) and holds(v) \
                and not (shaping and v.qualname == K.NUMPY_ARRAY):
            return f"argument {i + 1}"
    for name, v in call.kwargs.items():
        if name in keywords and holds(v):
            return f"`{name}=`"
    return None


#: tensor methods that take a NumPy array among the sizes of the shape they make without a break (measured
#: on torch 2.13: ``x.reshape(n, np.prod(x.shape[1:]))``, ``x.view(-1, np.maximum(c, 2))``; ``torch.zeros``
#: and ``x.new_ones`` of one break)
_SHAPE_METHODS = frozenset({"reshape", "view"})
