"""What verify spends besides Dynamo's own work, kept down: the torch import starts as soon as the
usage is known to be sound, every fork starts from a heap the garbage collector leaves alone, the
process that imported torch for the workers ends without finalising it, and identical outputs are
compared without the error arithmetic (with the same result)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from conftest import requires_torch

pytestmark = requires_torch


def test_a_phase_starts_from_a_frozen_heap():
    import gc

    from dynalint.verify import phases

    if not phases.can_fork():
        pytest.skip("phases run in this process without fork")
    try:
        assert phases.run(gc.get_freeze_count) > 0
    finally:
        gc.unfreeze()  # the test process forked: give its objects back to the collector


_ZYGOTE = textwrap.dedent("""
    import atexit, gc, runpy, sys
    from dynalint.verify import worker

    out = sys.argv[3]
    def fake_worker(spec):
        with open(out, "a") as fh:
            fh.write(f"worker frozen={gc.get_freeze_count() > 0}\\n")
        return 0
    worker.run_in_this_process = fake_worker
    atexit.register(lambda: open(out, "a").write("teardown\\n"))
    sys.argv = sys.argv[:3]
    runpy.run_module("dynalint.verify.zygote", run_name="__main__")
""")


def test_the_zygote_forks_from_a_frozen_heap_and_ends_without_teardown(tmp_path):
    from dynalint.verify.spec import MeasureSpec

    spec = tmp_path / "spec.json"
    MeasureSpec(target="t.py::f", module_path=str(tmp_path / "t.py"), name="f",
                origin_path=str(tmp_path / "t.py")).dump(str(spec))
    out = tmp_path / "out"
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", _ZYGOTE, str(to_child_r), str(from_child_w), str(out)],
                            pass_fds=(to_child_r, from_child_w))
    os.close(to_child_r)
    os.close(from_child_w)
    watchdog = threading.Timer(120, proc.kill)  # a hung zygote closes its pipe, failing the reads below
    watchdog.start()
    with os.fdopen(from_child_r, "rb") as answers, os.fdopen(to_child_w, "wb") as requests:
        assert json.loads(answers.readline()) == {"ready": True}
        requests.write(json.dumps({"id": 0, "spec": str(spec)}).encode() + b"\n")
        requests.flush()
        assert json.loads(answers.readline())["id"] == 0  # the worker started
        assert json.loads(answers.readline()) == {"id": 0, "exit": 0, "signal": 0}
    assert proc.wait(timeout=60) == 0
    watchdog.cancel()
    assert out.read_text().splitlines() == ["worker frozen=True"]  # no "teardown": atexit never ran


_CLI = textwrap.dedent("""
    import sys
    from dynalint.verify import isolation

    def start_early():
        print("analysis imported" if "dynalint.engine.pipeline" in sys.modules else "analysis not imported")
        sys.stdout.flush()
        raise SystemExit(0)  # measuring is not the point here
    isolation.start_early = start_early
    from dynalint.adapters.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_verify_starts_the_torch_import_before_it_loads_the_analysis_and_only_for_a_sound_usage(tmp_path):
    target = tmp_path / "model.py"
    target.write_text("def f(x):\n    return x + 1\n\n\ndef dynalint_inputs():\n    return [(1,)]\n")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _CLI, "verify", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=120)

    done = run(f"{target}::f")
    assert done.stdout.strip() == "analysis not imported", done.stderr
    bad = run(f"{target}::missing")
    assert bad.returncode == 2 and "analysis" not in bad.stdout and "missing" in bad.stderr


def test_identical_outputs_skip_the_error_arithmetic_with_the_same_result(monkeypatch):
    import math

    import torch

    from dynalint.verify.outputs import compare, flatten

    checks = []
    allclose = torch.allclose
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: checks.append(1) or allclose(*a, **k))
    x = torch.tensor([1.0, float("nan"), -0.0])
    same = compare(flatten((x, torch.ones(2, dtype=torch.float16))), flatten((x.clone(), torch.ones(2).half())))
    assert (same.equal, same.bitwise, same.max_abs, same.max_rel, same.rtol) == (True, True, 0.0, 0.0, 1e-3)
    infinite = compare(flatten(torch.tensor([float("inf"), 2.0])), flatten(torch.tensor([float("inf"), 2.0])))
    assert infinite.equal and infinite.bitwise and infinite.max_abs == math.inf  # inf - inf counts as infinite
    assert compare(flatten(torch.tensor([complex(float("inf"), float("nan"))])),
                   flatten(torch.tensor([complex(float("inf"), float("nan"))]))).max_abs == 0.0  # a NaN in both
    assert checks == []
    close = compare(flatten(x + torch.tensor([1e-7, 0.0, 0.0])), flatten(x))
    assert close.equal and not close.bitwise and close.max_abs > 0 and checks == [1]


def test_the_progress_file_is_rewritten_in_place_and_reads_as_the_last_record(tmp_path):
    """Every call of every phase writes where it is: one file opened once, one record of a fixed width
    rewritten in place (no truncation), which the parent reads as the last one written."""
    from dynalint.verify.isolation import _progress
    from dynalint.verify.worker import ProgressFile, _progress_call

    path = tmp_path / "progress"
    progress = ProgressFile(str(path))
    try:
        inode = os.stat(path).st_ino
        progress("what-if capture_flags", 123456)
        progress("eager", 7)  # shorter: nothing of the longer record may show through
        assert _progress(str(path)) == ("eager", 7) and _progress_call(str(path)) == 7
        assert os.stat(path).st_ino == inode and os.path.getsize(path) == ProgressFile.WIDTH
        progress("x" * 500, -1)  # a name longer than the record is cut, the call kept
        assert _progress(str(path)) == ("x" * (ProgressFile.WIDTH - 24), -1)
    finally:
        progress.close()


def test_reseeding_before_each_call_queues_nothing_for_devices_that_have_not_started():
    """``torch.manual_seed`` queues a seeding (with the caller's stack) for every device type that has
    not started; the reseeding before each call seeds the same generators that are live without it."""
    import random

    import torch

    from dynalint.verify.stream import seed_all

    if torch.cuda.is_initialized():
        pytest.skip("CUDA has started in this process")
    queued = len(torch.cuda._queued_calls)
    seed_all(5, started_devices_only=True)
    first = (torch.rand(3), random.random())
    assert len(torch.cuda._queued_calls) == queued
    seed_all(5)
    assert torch.equal(first[0], torch.rand(3)) and first[1] == random.random()
