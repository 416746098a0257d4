import concurrent.futures
import functools
import importlib.util
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

HAS_TORCH = importlib.util.find_spec("torch") is not None

requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _worker(config) -> bool:
    """This process is one of pytest-xdist's workers (``-n``): the tests are spread over processes."""
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test answers to ``-k`` with the codes of the rules it is about, as ruff keys its fixtures by
    code, so ``-k DYN102`` finds the rule's tests and those of every fixer that serves it, whatever
    their file (:func:`codes_under_test`).

    Spread over processes, the tests that wait for a table's generator (minutes) come first, so the
    other processes run the rest meanwhile rather than wait for the last one."""
    for item in items:
        item.extra_keyword_matches.update(codes_under_test(item))
    if _worker(config):
        items.sort(key=lambda item: item.get_closest_marker("table_generator") is None)  # (a stable sort)


class _Generators:
    """The generators of tables of the selected tests (``@pytest.mark.table_generator``), run one after
    another in a child process each from the end of the collection on: in one pytest process, the probes
    of torch (minutes) then run beside the other tests, on a core of their own. Spread over processes
    (``-n``), each generator runs when its test does, in the process that runs it."""

    def __init__(self) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="table-generator")
        self.results: dict[str, concurrent.futures.Future] = {}
        self.running: subprocess.Popen | None = None
        self.stopped = False

    def start(self, module: str) -> None:
        if module not in self.results:
            self.results[module] = self.pool.submit(self._run, module)

    def output(self, module: str) -> str:
        self.start(module)
        out, err, code = self.results[module].result(timeout=1800)
        assert code == 0, f"python -m {module} failed:\n{err[-4000:]}"
        return out

    def _run(self, module: str) -> tuple[str, str, int]:
        """``python -m module`` as a user runs it to regenerate the table (without pytest's variables)."""
        if self.stopped:
            return "", "the session ended", 1
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        self.running = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        encoding="utf-8", env=env)
        out, err = self.running.communicate()
        return out, err, self.running.returncode

    def stop(self) -> None:
        self.stopped = True
        if self.running is not None and self.running.poll() is None:
            self.running.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)


_GENERATORS = _Generators()


def pytest_configure(config):
    config.addinivalue_line("markers",
                            "table_generator(module): the test reads what `python -m module` prints")


def pytest_collection_finish(session):
    if HAS_TORCH and not _worker(session.config):
        for item in session.items:
            marker = item.get_closest_marker("table_generator")
            if marker is not None:
                _GENERATORS.start(marker.args[0])


def pytest_sessionfinish(session):
    _GENERATORS.stop()


@pytest.fixture
def generated_table(request) -> str:
    """What the test's table generator (``@pytest.mark.table_generator(module)``) printed."""
    return _GENERATORS.output(request.node.get_closest_marker("table_generator").args[0])


@functools.lru_cache(maxsize=None)
def _subjects() -> dict[object, tuple[str, ...]]:
    """Each fixer and rule - the class, its name (as written and in snake case), a rule's code and
    module name - to the codes it serves."""
    from dynalint.fixers.support.base import all_fixers
    from dynalint.rules.base import all_rules

    subjects: dict[object, tuple[str, ...]] = {}
    for fixer in all_fixers():
        for key in (fixer, fixer.name, fixer.name.replace("-", "_")):
            subjects[key] = tuple(fixer.codes)
    for rule in all_rules():
        for key in (rule, rule.code, rule.name, rule.name.replace("-", "_"), rule.__module__.rpartition(".")[2]):
            subjects[key] = (rule.code,)
    return subjects


def _served(value: object) -> tuple[str, ...]:
    """The codes ``value`` serves when it is a fixer or a rule (:func:`_subjects`), or a string
    ``<fixer>:<variant>`` naming a variant of a fixer's case."""
    if not isinstance(value, (str, type)):
        return ()
    subjects = _subjects()
    found = subjects.get(value)
    if found is None and isinstance(value, str):
        found = subjects.get(value.partition(":")[0])
    return found or ()


def codes_under_test(item) -> set[str]:
    """The codes of the fixers and rules ``item`` tests: each parameter that is one or holds one in a
    ``fixer`` or ``rule`` attribute (a differential case); the module ``test_<rule>.py`` or
    ``test_fixer_<fixer>.py`` (snake case); and, in the fixing tests (``test_fix*.py``) when nothing
    else names one, a test whose name names a fixer (``test_check_in_graph_refusals``)."""
    codes: set[str] = set()
    callspec = getattr(item, "callspec", None)
    for value in (callspec.params.values() if callspec is not None else ()):
        codes.update(_served(value))
        if not isinstance(value, (str, type)):
            codes.update(c for attr in ("fixer", "rule") for c in _served(getattr(value, attr, None)))
    stem = item.path.stem
    codes.update(_served(stem[len("test_fixer_"):] if stem.startswith("test_fixer_") else stem[len("test_"):]))
    if not codes and stem.startswith("test_fix"):
        name = getattr(item, "originalname", item.name)
        codes.update(next((served for key, served in _subjects().items()
                           if isinstance(key, str) and key in name), ()))
    return codes


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
