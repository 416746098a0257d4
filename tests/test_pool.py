"""The worker pool: an interrupt ends it without a traceback from its threads."""
from __future__ import annotations

import threading
import time
from concurrent.futures import InvalidStateError

import pytest

from dynalint.engine.pool import _quiet_manager, worker_pool


def _square(n: int) -> int:
    return n * n


def _hook_args(exc: BaseException, thread: threading.Thread) -> "threading.ExceptHookArgs":
    return threading.ExceptHookArgs([type(exc), exc, None, thread])  # type: ignore[call-arg]


def test_the_manager_thread_stays_quiet_about_tasks_an_interrupt_cancelled(capsys, monkeypatch) -> None:
    """CPython 3.11's manager thread raises InvalidStateError when it marks a cancelled task broken
    (the workers were ended, an interrupted ``map`` cancelled its tasks): not shown.  Any other error,
    or one of another thread, still is."""
    monkeypatch.setattr(threading, "excepthook", threading.__excepthook__)
    with worker_pool(2) as pool:
        assert pool.submit(_square, 3).result() == 9
        manager = pool._executor_manager_thread  # type: ignore[attr-defined]
        assert manager is not None
        _quiet_manager(pool)
        threading.excepthook(_hook_args(InvalidStateError("CANCELLED"), manager))
        assert capsys.readouterr().err == ""
        threading.excepthook(_hook_args(ValueError("other"), manager))
        assert "ValueError: other" in capsys.readouterr().err
        threading.excepthook(_hook_args(InvalidStateError("elsewhere"), threading.current_thread()))
        assert "InvalidStateError: elsewhere" in capsys.readouterr().err


def test_an_interrupt_inside_the_pool_ends_its_workers() -> None:
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            assert list(pool.map(_square, range(4))) == [0, 1, 4, 9]
            processes = list(pool._processes.values())  # type: ignore[attr-defined]
            raise KeyboardInterrupt
    deadline = time.monotonic() + 10  # a loaded machine may take a while to reap them
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes and not any(p.is_alive() for p in processes)
