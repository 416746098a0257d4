"""``isinstance(x, torch.Tensor)`` decides, while Dynamo traces, what ``x`` is on each side of the test: a
tensor where it holds, no tensor where it fails, whatever the analysis took ``x`` for (an untyped
parameter, a ``float | Tensor`` argument).  A comparison of ``x`` on the failing side is a Python one and
does not break; on the holding side it still does.  A value known to be a tensor (``isinstance(data,
torch.Tensor)`` held before) keeps its value where the test fails, a side that never runs.  Each case is also
run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("the-failing-side-is-python", """
    from typing import Union

    import torch


    def luts(histos, clip):
        if isinstance(clip, torch.Tensor):
            histos = histos * clip
        elif clip > 0.0:
            histos = histos + 1
        if not isinstance(clip, torch.Tensor) and clip < 1.0:
            histos = histos - 1
        return histos


    def limits(histos, clip: Union[float, torch.Tensor]):
        if not isinstance(clip, torch.Tensor):
            return histos.clamp(max=clip) if clip > 0 else histos
        if clip.sum() > 0:  # breaks
            histos = histos.clamp(max=clip)
        return histos


    def f(x, clip):
        return luts(x, clip) + limits(x, clip)
    """, "f", "[(torch.ones(3), 0.5), (torch.ones(3), torch.tensor(0.5)), (torch.ones(3), 2.0)]"),
    ("a-known-tensor-keeps-its-value", """
    from typing import Any

    import numpy as np
    import torch


    class MetaTensor(torch.Tensor):
        def __init__(self, x, affine=None, meta=None):
            self.affine = affine


    def convert(data: Any, track_meta: bool = False):
        def _convert(tensor: Any):
            if not isinstance(tensor, torch.Tensor):
                if isinstance(tensor, np.ndarray) and tensor.dtype == np.uint16:
                    tensor = tensor.astype(np.int32)
                tensor = torch.as_tensor(tensor)
            if track_meta and not isinstance(tensor, MetaTensor):
                return MetaTensor(tensor)  # breaks
            return tensor

        if isinstance(data, torch.Tensor):
            return _convert(data)
        return data


    def f(x):
        return convert(x, track_meta=True) + 1
    """, "f", "[(torch.ones(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
