"""The standard-library calls Dynamo breaks on: the committed table matches the installed torch, and
``dynalint check`` reports a listed call as an untraceable call and stays silent on calls Dynamo
handles, where Dynamo itself breaks and does not."""
from __future__ import annotations

import pytest
from conftest import requires_torch
from dynalint.rules.base import Example

import dynalint.analysis.skipped_calls as committed
from helpers import assert_generated_module_current, checked_breaks, run_example_under_dynamo

CODE = """\
    import collections
    import math
    import operator
    import os
    import threading
    import time
    import torch

    @torch.compile
    def f(x):
        y = x * math.sqrt(2.0) + operator.add(1, 2)
        os.getcwd()
        y = y + 1
        time.perf_counter()
        seen = collections.OrderedDict()
        state = threading.local()
        with torch.backends.cuda.sdp_kernel(enable_flash=False):
            y = y - 1
        return y * 2
"""
INPUTS = "[(torch.randn(4),)]"
BREAK_LINES = {12, 14, 16, 17}


@requires_torch
@pytest.mark.table_generator("dynalint.verify.skipped_calls_table")
def test_committed_table_is_current(generated_table: str) -> None:
    assert_generated_module_current(generated_table, committed)


def test_the_table_lists_skipped_calls_and_not_handled_ones() -> None:
    assert {"os.getcwd", "time.perf_counter", "warnings.warn", "cmath.exp"} <= committed.BREAKING_CALLS.keys()
    # in Dynamo's skip rules, but handled before they are asked
    assert not {"math.sqrt", "operator.add", "os.path.join"} & committed.BREAKING_CALLS.keys()
    # classes: one Dynamo cannot construct, and one it can
    assert "threading.local" in committed.BREAKING_CALLS and "collections.OrderedDict" not in committed.BREAKING_CALLS


def test_check_reports_listed_calls_only(tmp_path, capsys) -> None:
    assert checked_breaks(tmp_path, capsys, CODE) == {(line, "DYN105") for line in BREAK_LINES}


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    obs, module = run_example_under_dynamo(Example(CODE, inputs=INPUTS), tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == BREAK_LINES


ARGUMENT_CODE = """\
    import heapq
    import statistics
    import zlib
    import torch

    @torch.compile
    def f(x, beams):
        best = heapq.nlargest(1, beams, key=lambda b: b[0])
        mid = statistics.median([1.0, 2.0, 4.0])
        spread = statistics.stdev([1.0, 2.0, 4.0])
        bucket = zlib.crc32(b"user=42") % 64
        return x * best[0][0] + mid + spread + bucket
"""
ARGUMENT_INPUTS = "[(torch.randn(4), [(1.5, 0), (0.5, 1)])]"
ARGUMENT_BREAK_LINES = {8, 10, 11}


def test_functions_probed_with_arguments() -> None:
    """Those of ``ARGUMENT_PROBES`` that broke with the arguments given there, and not one that did not."""
    assert {"heapq.nlargest", "heapq.nsmallest", "statistics.mean", "zlib.crc32"} <= committed.BREAKING_CALLS.keys()
    assert "statistics.median" not in committed.BREAKING_CALLS


def test_check_reports_probed_calls(tmp_path, capsys) -> None:
    assert checked_breaks(tmp_path, capsys, ARGUMENT_CODE) == {(line, "DYN105") for line in ARGUMENT_BREAK_LINES}


@requires_torch
def test_dynamo_breaks_on_the_probed_calls(tmp_path) -> None:
    obs, module = run_example_under_dynamo(Example(ARGUMENT_CODE, inputs=ARGUMENT_INPUTS), tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == ARGUMENT_BREAK_LINES


def test_checkpoint_forms() -> None:
    """``checkpoint_sequential`` is skipped; ``checkpoint`` itself Dynamo traces (a higher-order op)."""
    assert "torch.utils.checkpoint.checkpoint_sequential" in committed.BREAKING_CALLS
    assert "torch.utils.checkpoint.checkpoint" not in committed.BREAKING_CALLS
