"""What ``verify`` may claim: nothing a target starts outlives its measurement, a run where
Dynamo never compiled is no verification, and a run where every compiled call raised is an error."""
from __future__ import annotations

import io
import os
import subprocess
import textwrap
import time

import pytest

from conftest import requires_torch
from dynalint.core.processes import children
from dynalint.config.settings import Settings
from dynalint.verify.api import Options, verify_targets
from dynalint.verify.report_text import write
from dynalint.verify.targets import Ref

pytestmark = requires_torch

INPUTS = textwrap.dedent("""

    def dynalint_inputs():
        return [(torch.ones(3),), (torch.ones(4),)]
""")


def _target(tmp_path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\n" + textwrap.dedent(body) + INPUTS)
    return str(path)


def _verify(path: str):
    return verify_targets([Ref(path, "f")], Settings(), Options())


def render(reports) -> str:
    out = io.StringIO()
    write(reports, out)
    return out.getvalue()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("zygote", [True, False])
def test_what_a_target_starts_ends_with_its_measurement(tmp_path, monkeypatch, zygote):
    if not zygote:
        monkeypatch.setenv("DYNALINT_VERIFY_NO_ZYGOTE", "1")
    pids = tmp_path / "pids"
    path = _target(tmp_path, "spawner", f"""
        import os
        import subprocess
        import time

        def _note(pid):
            with open({str(pids)!r}, "a") as fh:
                fh.write(f"{{pid}}\\n")

        _note(subprocess.Popen(["sleep", "300"]).pid)           # in the worker's process group
        _daemon = os.fork()
        if _daemon == 0:                                        # a daemon: its own session, double fork
            os.setsid()
            if os.fork() == 0:
                _note(os.getpid())
                time.sleep(300)
            os._exit(0)
        os.waitpid(_daemon, 0)

        def f(x):
            return x * 2
    """)
    report = _verify(path)
    m = report[0].devices[0].original
    assert m.status == "ok", m.message
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) >= 6  # two per phase that imports the target
    deadline = time.monotonic() + 5
    while any(map(_alive, started)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in started if _alive(p)]
    for p in left:
        os.kill(p, 9)
    assert not left, f"{len(left)} of {len(started)} processes the target started outlived verify"


def test_a_daemon_of_a_target_that_timed_out_is_ended(tmp_path):
    """The worker is killed at its deadline; the daemon its target started (own session, double fork)
    is ended too."""
    pids = tmp_path / "pids"
    path = _target(tmp_path, "hangs", f"""
        import os
        import time

        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                with open({str(pids)!r}, "a") as fh:
                    fh.write(f"{{os.getpid()}}\\n")
                time.sleep(300)
            os._exit(0)

        def f(x):
            time.sleep(300)
            return x
    """)
    report = verify_targets([Ref(path, "f")], Settings(), Options(timeout=8.0))
    assert report[0].devices[0].original.status == "timeout"
    started = [int(p) for p in pids.read_text().split()]
    assert started
    deadline = time.monotonic() + 5
    while any(map(_alive, started)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in started if _alive(p)]
    for p in left:
        os.kill(p, 9)
    assert not left


def test_a_replaced_torch_compile_is_not_a_verification(tmp_path):
    path = _target(tmp_path, "fake", """
        torch.compile = lambda fn=None, **kw: fn if fn is not None else (lambda g: g)

        def f(x):
            if x.sum() > 0:
                return x * 2
            return x
    """)
    report = _verify(path)
    m = report[0].devices[0].original
    assert m.status == "error"
    assert "Dynamo never ran: torch.compile was replaced" in m.message
    assert "original: error: Dynamo never ran" in render(report)


def test_every_compiled_call_raising_is_an_error(tmp_path):
    path = _target(tmp_path, "raises", """
        def f(x):
            if torch.compiler.is_compiling():
                return x.view(7, -1)  # fails only when traced
            return x * 2
    """)
    report = _verify(path)
    m = report[0].devices[0].original
    assert all(c.error for c in m.calls) and len(m.calls) == 2
    assert m.status == "error" and m.message.startswith("every compiled call raised (call 0: ")
    assert "original: error: every compiled call raised" in render(report)


def test_children_lists_what_this_process_started():
    with subprocess.Popen(["sleep", "5"]) as child:
        try:
            assert child.pid in children(os.getpid())
        finally:
            child.kill()
