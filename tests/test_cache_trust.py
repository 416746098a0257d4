"""The cache serves only what it wrote for this very file: an entry of another file, an entry
of another shape, a link, a FIFO or a huge file is a miss, and results equal ``--no-cache``."""
from __future__ import annotations

import glob
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynalint.engine.runner as runner
from dynalint.adapters.reporters import REPORTERS
from dynalint.engine.cache_entry import seal, valid_entry
from dynalint.engine.runner import check_files, source_digest
from dynalint.config.settings import Settings

MODEL = textwrap.dedent("""\
    import torch
    from .helpers import h


    @torch.compile
    def f(x):
        y = h(x)
        if y > 0:
            return x
        return -x


    @torch.compile
    def g(x):
        return x.item()
""")


def _package(root, name: str, helper_returns: str) -> str:
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(f"import torch\n\n\ndef h(x):\n    return {helper_returns}\n")
    (pkg / "m.py").write_text(MODEL)
    return str(pkg / "m.py")


def _check(paths, cache_dir=None):
    return [d.to_json() for r in check_files(paths, Settings(), cache_dir=cache_dir) for d in r.diagnostics]


def _entries(cache: str) -> list[str]:
    return sorted(glob.glob(os.path.join(cache, "*", "*.json")))


def _key_of(entry: str) -> str:
    return os.path.basename(os.path.dirname(entry)) + os.path.basename(entry)[:-len(".json")]


def test_identical_files_in_different_packages_keep_their_own_results(tmp_path):
    one = _package(tmp_path, "pkg1", "x.sum()")
    two = _package(tmp_path, "pkg2", "3")
    cache = str(tmp_path / "cache")
    expected = {p: _check([p, os.path.join(os.path.dirname(p), "helpers.py")]) for p in (one, two)}
    assert expected[one] != [{**d, "path": one} for d in expected[two]]  # the helpers make a difference
    for p in (one, two, one):
        assert _check([p, os.path.join(os.path.dirname(p), "helpers.py")], cache) == expected[p]


def test_an_entry_belongs_to_the_set_of_checked_files(tmp_path):
    """``check pkg/m.py`` cannot see into helpers.py, ``check pkg/m.py pkg/helpers.py`` can: each run
    gets what it would get without a cache, whichever ran first."""
    path = _package(tmp_path, "pkg", "x.sum()")
    alone, together = [path], [path, os.path.join(os.path.dirname(path), "helpers.py")]
    expected = {len(paths): _check(paths) for paths in (alone, together)}
    assert expected[1] != expected[2]
    cache = str(tmp_path / "cache")
    for paths in (alone, together, alone, together):
        assert _check(paths, cache) == expected[len(paths)]


@pytest.fixture
def cached_model(tmp_path):
    """A model file, its results without a cache, and the cache directory holding its one entry."""
    path = _package(tmp_path, "pkg", "x.sum()")
    cache = str(tmp_path / "cache")
    expected = _check([path])
    assert _check([path], cache) == expected
    assert len(_entries(cache)) == 1
    return path, expected, cache


def _payload(entry: str) -> dict:
    with open(entry, "rb") as fh:
        return json.loads(fh.read().partition(b"\n")[2])


@pytest.mark.parametrize("change", [
    lambda e: e["diagnostics"][0].update(kind=["graph-break"]),
    lambda e: e["diagnostics"][0].update(line="x"),
    lambda e: e["diagnostics"][0].update(code=None),
    lambda e: e["diagnostics"][0].update(message=7),
    lambda e: e["diagnostics"][0].update(fix={"applicability": "safe"}),
    lambda e: e.update(outgoing={"helpers.py": {"h": {"x": ["T", "yes", 0]}}}),
    lambda e: e.update(outgoing={"helpers.py": {"h": {"x": ["T", 0, 0]}}}),
    lambda e: e.update(outgoing={"helpers.py": {"h": {"x": ["D", ["N"], [[1, ["N"]]]]}}}),
    lambda e: e.update(outgoing={"helpers.py": {"h": {"x": ["R", "pkg.m", "Pack"]}}}),
    lambda e: e.update(outgoing=[1]),
    lambda e: e.update(deps={"a": 1}),
    lambda e: e.update(extra=1),
], ids=["kind-list", "line-str", "code-null", "message-int", "fix-partial", "outgoing-bad-value",
        "outgoing-short-tensor", "outgoing-dict-int-key", "outgoing-record-no-fields", "outgoing-list",
        "deps-int", "extra-key"])
def test_entries_of_another_shape_are_misses_even_when_sealed(cached_model, change):
    path, expected, cache = cached_model
    entry = _entries(cache)[0]
    data = _payload(entry)
    change(data)
    assert not valid_entry(data)
    with open(entry, "wb") as fh:
        fh.write(seal(_key_of(entry), json.dumps(data).encode()))
    assert _check([path], cache) == expected


def test_an_edited_entry_is_a_miss(cached_model):
    """A well-formed entry whose content was changed (another outgoing map, another message) is not
    the one this run wrote for this key."""
    path, expected, cache = cached_model
    entry = _entries(cache)[0]
    data = _payload(entry)
    data["diagnostics"][0]["message"] = "something else"
    data["outgoing"] = {path: {"f": {"x": ["N"]}}}
    assert valid_entry(data)
    with open(entry, "wb") as fh:
        fh.write(b"dynalint-cache-1 0\n" + json.dumps(data).encode())
    assert _check([path], cache) == expected
    os.replace(_entries(cache)[0], entry)  # an entry moved under another key: a miss as well
    other = os.path.join(cache, "00", "1" * 62 + ".json")
    os.makedirs(os.path.dirname(other), exist_ok=True)  # (the entry's own key may begin with 00)
    os.replace(entry, other)
    assert runner.Cache(cache).get(_key_of(other), path) is None


def _check_in_a_child(path: str, *cache: str) -> subprocess.CompletedProcess:
    """``dynalint check`` in a child with 2 GiB of address space and a minute to finish."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "dynalint", "check", *cache, "-q", path],
                          capture_output=True, timeout=60, preexec_fn=limit)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "deep", "huge"])
def test_odd_entry_files_are_misses(cached_model, kind):
    path, expected, cache = cached_model
    entry = _entries(cache)[0]
    os.unlink(entry)
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", entry)
    elif kind == "directory":
        os.mkdir(entry)
    elif kind == "deep":
        with open(entry, "wb") as fh:
            fh.write(seal(_key_of(entry), b"[" * 200_000 + b"]" * 200_000))
    else:
        with open(entry, "wb") as fh:
            fh.truncate(64 << 30)  # sparse: 64 GiB that take no disk
    done = _check_in_a_child(path, "--cache-dir", cache)
    assert done.returncode == 1, done.stderr.decode()[-2000:]
    assert done.stdout == _check_in_a_child(path, "--no-cache").stdout
    assert done.stdout.count(b"DYN") == len(expected)


def test_a_linked_cache_directory_is_not_written_through(tmp_path):
    """A checkout that ships ``.dynalint_cache`` as a link to another directory gets no file written
    there (results are still right: the cache only costs time)."""
    path = _package(tmp_path, "pkg", "x.sum()")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = tmp_path / "cache"
    cache.symlink_to(elsewhere)
    expected = _check([path])
    assert _check([path], str(cache)) == expected
    assert os.listdir(elsewhere) == []
    cache.unlink()
    assert _check([path], str(cache)) == expected
    (subdir,) = {os.path.dirname(e) for e in _entries(str(cache))}
    shutil.rmtree(subdir)
    os.symlink(elsewhere, subdir)
    for _ in range(2):
        assert _check([path], str(cache)) == expected
    assert os.listdir(elsewhere) == []


# -- generated entries ------------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 1 << 41) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                max_size=3),
                    max_leaves=12)


def _mutated(data, choices, replacement):
    """``data`` with the value at a path picked by ``choices`` replaced."""
    if not isinstance(data, (dict, list)) or not data or not choices:
        return replacement
    keys = list(data) if isinstance(data, dict) else list(range(len(data)))
    k = keys[choices[0] % len(keys)]
    out = dict(data) if isinstance(data, dict) else list(data)
    out[k] = _mutated(data[k], choices[1:], replacement) if len(choices) > 1 else replacement
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(choices=st.lists(st.integers(0, 50), min_size=1, max_size=6), replacement=JSON,
       sealed=st.booleans(), raw=st.none() | st.binary(max_size=64))
def test_generated_entries_never_change_results(cached_model, choices, replacement, sealed, raw):
    path, expected, cache = cached_model
    entry = next(iter(_entries(cache)), None)
    if entry is None:  # the previous example's entry was rewritten under the same key
        _check([path], cache)
        entry = _entries(cache)[0]
    with open(entry, "rb") as fh:
        original = fh.read()
    data = _mutated(_payload(entry), choices, replacement)
    payload = raw if raw is not None else json.dumps(data).encode()
    try:
        with open(entry, "wb") as fh:
            fh.write(seal(_key_of(entry), payload) if sealed else original.partition(b"\n")[0][:-1] + payload)
        got = _check([path], cache)
        if raw is not None or not sealed or not valid_entry(data):
            assert got == expected
        else:  # a well-formed entry sealed for this key: served, and every reporter can show it
            diagnostics = [d for r in check_files([path], Settings(), cache_dir=cache) for d in r.diagnostics]
            for report in REPORTERS.values():
                report(diagnostics, io.StringIO())
    finally:
        with open(entry, "wb") as fh:
            fh.write(original)


# -- the fingerprint of dynalint's own code ------------------------------------------------------

def test_the_code_fingerprint_covers_sub_packages(tmp_path):
    import dynalint

    lint = os.path.dirname(dynalint.__file__)
    evaluator = os.path.join(lint, "analysis", "evaluator")
    assert os.path.isdir(evaluator)
    assert runner.code_fingerprint() == source_digest(runner._package_directories())
    assert lint in runner._package_directories()
    copy = tmp_path / "dynalint"
    (copy / "analysis" / "evaluator").mkdir(parents=True)
    module = sorted(n for n in os.listdir(evaluator) if n.endswith(".py"))[0]
    with open(os.path.join(evaluator, module), "rb") as fh:
        text = fh.read()
    (copy / "analysis" / "evaluator" / module).write_bytes(text)
    before = source_digest([str(copy)])
    (copy / "analysis" / "evaluator" / module).write_bytes(text + b"\n# changed\n")
    assert source_digest([str(copy)]) != before


def test_the_entry_check_counts_the_flags_a_tensor_is_encoded_with() -> None:
    from dynalint.analysis.project import TENSOR_FLAGS
    from dynalint.engine.cache_entry import TENSOR_FLAG_COUNT

    assert TENSOR_FLAG_COUNT == len(TENSOR_FLAGS)
