import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

HAS_TORCH = importlib.util.find_spec("torch") is not None

requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


@pytest.fixture
def counted(monkeypatch):
    """The files a project pass actually analyses (its cache misses), in order."""
    from dynalint.engine import runner

    calls: list[str] = []
    real = runner._analyse

    def analyse(source, path, settings, project, entries, with_fixes):
        calls.append(path)
        return real(source, path, settings, project, entries, with_fixes)

    monkeypatch.setattr(runner, "_analyse", analyse)
    return calls
