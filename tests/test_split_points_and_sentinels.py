"""Calls model code makes that Dynamo does not trace, each measured on torch 2.13: ``tensor_split`` at a tensor of
split points reads them as Python numbers ("Data dependent operator"; traced with ``capture_scalar_outputs``), a
bare ``object()`` sentinel and ``fnmatch`` on parameter names ("Failed to trace builtin operator"),
``torch.testing.assert_close`` ("Data-dependent branching"), ``default_collate`` and ``zlib.crc32`` (skipped).  A
``tensor_split`` at Python numbers, or at a list the analysis only assumed to be a tensor, is traced."""
from __future__ import annotations

from helpers import break_tests, checked_breaks

CODE = """\
    import fnmatch

    import torch
    from torch.utils.data import default_collate


    @torch.compile(backend="eager")
    def pages(tokens: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        parts = torch.tensor_split(tokens, starts[1:], dim=0)
        halves = tokens.tensor_split(starts)
        fixed = torch.tensor_split(tokens, 2)
        return torch.stack([p.mean(0) for p in parts]).sum() + halves[0].sum() + fixed[0].sum()


    @torch.compile(backend="eager")
    def checked(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        missing = object()
        scale = {"a": 2.0}.get("b", missing)
        torch.testing.assert_close(x, ref)
        decay = fnmatch.fnmatch("blocks.0.weight", "*.weight")
        batch = default_collate([x, ref])
        return batch.sum() * (1.0 if scale is missing else scale) * (0.5 if decay else 1.0)


    def main(x):
        return pages(x, torch.tensor([0, 4, 7])), checked(x, x.clone())
"""
BREAKS = {(9, "DYN102"), (10, "DYN102"), (17, "DYN105"), (19, "DYN105"), (20, "DYN105"), (21, "DYN105")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.randn(10, 4),)]")


def test_capture_flag_keeps_the_splits(tmp_path, capsys) -> None:
    lines = {line for line, _ in checked_breaks(tmp_path, capsys, CODE, "--capture-scalar-outputs")}
    assert not lines & {9, 10} and {17, 19, 20, 21} <= lines
