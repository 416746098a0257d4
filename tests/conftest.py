import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

HAS_TORCH = importlib.util.find_spec("torch") is not None

requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A fixer's tests answer to ``-k`` with the codes of the rules it serves, as a rule's tests answer to
    its code (their ids carry it): the tests of ``test_fixer_<fixer>.py``, those whose ``fixer``
    parameter is one, and those of the fixing tests whose name names one (``test_check_in_graph_refusals``)."""
    from dynalint.fixers.support.base import all_fixers

    fixers = {f.name: f for f in all_fixers()}
    snakes = {name.replace("-", "_"): f for name, f in fixers.items()}
    for item in items:
        callspec = getattr(item, "callspec", None)
        param = callspec.params.get("fixer") if callspec is not None else None
        fixer = fixers.get(param) if isinstance(param, str) else param if isinstance(param, type) else None
        stem = item.path.stem
        if fixer is None and stem.startswith("test_fixer_"):
            fixer = snakes.get(stem[len("test_fixer_"):])
        if fixer is None and stem.startswith("test_fix"):
            name = getattr(item, "originalname", item.name)
            fixer = next((f for snake, f in snakes.items() if snake in name), None)
        if fixer is not None and hasattr(fixer, "codes"):
            item.extra_keyword_matches.update(fixer.codes)


@pytest.fixture
def counted(monkeypatch):
    """The files a project pass actually analyses (its cache misses), in order."""
    from dynalint.engine import runner

    calls: list[str] = []
    real = runner._analyse

    def analyse(source, path, *args):
        calls.append(path)
        return real(source, path, *args)

    monkeypatch.setattr(runner, "_analyse", analyse)
    return calls
