"""The result cache and the parallel runner: hits, invalidation, corruption, --no-cache."""
from __future__ import annotations

import glob
import os
import tempfile
import textwrap

import pytest

import dynalint.engine.runner as runner
from dynalint.adapters.cli import main
from dynalint.engine.runner import CACHE_DIR_NAME, check_files
from dynalint.config.settings import Settings

MODEL = textwrap.dedent("""
    import torch


    @torch.compile
    def step(x):
        if x.sum() > 0:
            x = x * 2
        return x.max().item()
""").lstrip()


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return str(path)


def _run(paths, settings=Settings(), cache_dir=None, jobs=1):
    results = list(check_files(paths, settings, jobs=jobs, cache_dir=cache_dir))
    assert all(r.error is None for r in results), [r.error for r in results]
    return [d for r in results for d in r.diagnostics]


def test_cache_hit_returns_identical_diagnostics(model, tmp_path, counted):
    cache = str(tmp_path / "cache")
    first = _run([model], cache_dir=cache)
    assert {d.code for d in first} == {"DYN101", "DYN102"}
    assert counted == [model]
    second = _run([model], cache_dir=cache)
    assert counted == [model], "the second run must not analyse again"
    assert second == first
    assert [d.to_json() for d in second] == [d.to_json() for d in first]


def test_hit_reports_the_path_it_was_asked_for(model, tmp_path, counted, monkeypatch):
    cache = str(tmp_path / "cache")
    _run([model], cache_dir=cache)
    monkeypatch.chdir(tmp_path)
    diagnostics = _run(["model.py"], cache_dir=cache)
    assert len(counted) == 1  # the same file, named otherwise: a hit
    assert {d.path for d in diagnostics} == {"model.py"}


def test_changed_content_invalidates(model, tmp_path, counted):
    cache = str(tmp_path / "cache")
    before = _run([model], cache_dir=cache)
    with open(model, "a") as fh:
        fh.write("\n\n@torch.compile\ndef other(x):\n    return x.nonzero()\n")
    after = _run([model], cache_dir=cache)
    assert len(counted) == 2
    assert {d.code for d in after} == {d.code for d in before} | {"DYN104"}


def test_changed_settings_invalidate(model, tmp_path, counted):
    cache = str(tmp_path / "cache")
    _run([model], cache_dir=cache)
    ignored = _run([model], Settings(ignore=("DYN101",)), cache_dir=cache)
    assert len(counted) == 2
    assert {d.code for d in ignored} == {"DYN102"}
    captured = _run([model], Settings(capture_scalar_outputs=True), cache_dir=cache)
    assert len(counted) == 3
    assert "DYN102" not in {d.code for d in captured}
    _run([model], Settings(ignore=("DYN101",)), cache_dir=cache)
    assert len(counted) == 3  # that combination is cached now


def test_changed_dynalint_source_invalidates(model, tmp_path, counted, monkeypatch):
    cache = str(tmp_path / "cache")
    _run([model], cache_dir=cache)
    monkeypatch.setattr(runner, "code_fingerprint", lambda: "another-build")
    _run([model], cache_dir=cache)
    assert len(counted) == 2


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"[1, 2]", b'{"a": 1}', b"\xff\xfe\x00",
                                     b'[{"path": "x", "line": "one"}]'])
def test_corrupt_entries_are_ignored_and_rewritten(model, tmp_path, counted, garbage):
    cache = str(tmp_path / "cache")
    expected = _run([model], cache_dir=cache)
    entries = [p for p in glob.glob(os.path.join(cache, "*", "*.json"))]
    assert len(entries) == 1
    with open(entries[0], "wb") as fh:
        fh.write(garbage)
    assert _run([model], cache_dir=cache) == expected
    assert len(counted) == 2
    assert _run([model], cache_dir=cache) == expected
    assert len(counted) == 2  # the entry was rewritten


def test_unwritable_cache_only_costs_time(model, tmp_path, counted):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    assert _run([model], cache_dir=str(blocker)) == _run([model])


def test_parallel_results_match_serial_order(tmp_path):
    paths = []
    for i in range(6):
        p = tmp_path / f"m{i}.py"
        p.write_text(MODEL.replace("x * 2", f"x * {i}") + ("\n" * i))
        paths.append(str(p))
    serial = _run(paths)
    parallel = _run(paths, jobs=2, cache_dir=str(tmp_path / "cache"))
    assert parallel == serial
    assert _run(paths, jobs=2, cache_dir=str(tmp_path / "cache")) == serial


def test_cli_no_cache_writes_nothing_and_agrees(model, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["check", "-q", "--no-cache", "model.py"]) == 1
    uncached = capsys.readouterr().out
    assert not os.path.exists(CACHE_DIR_NAME)
    assert main(["check", "-q", "model.py"]) == 1
    cached_first = capsys.readouterr().out
    assert os.path.isdir(CACHE_DIR_NAME)
    with open(os.path.join(CACHE_DIR_NAME, ".gitignore")) as fh:
        assert fh.read().splitlines()[-1] == "*"
    assert main(["check", "-q", "model.py"]) == 1
    cached_second = capsys.readouterr().out
    assert uncached == cached_first == cached_second
    assert "DYN101" in uncached


# -- a cache that cannot be written -----------------------------------------------------------------

def _check_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["check", "-q", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _leftovers(cache: str) -> list[str]:
    """What a failed cache write left: empty folders, temporary files, files not complete."""
    found = []
    for dirpath, dirnames, filenames in os.walk(cache):
        if not dirnames and not filenames:
            found.append(dirpath)
        for name in filenames:
            full = os.path.join(dirpath, name)
            if name.endswith(".tmp") or os.path.getsize(full) == 0:
                found.append(full)
    return found


@pytest.mark.parametrize("where", ["a file", "under a file", "/proc"])
def test_a_cache_that_cannot_be_written_is_reported_once(tmp_path, monkeypatch, capsys, where):
    monkeypatch.chdir(tmp_path)
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(MODEL)
    (tmp_path / "blocker").write_text("")
    cache = {"a file": "blocker", "under a file": "blocker/cache", "/proc": "/proc/dynalint-cache"}[where]
    expected = _check_cli(capsys, "--no-cache", ".")
    code, out, err = _check_cli(capsys, "--cache-dir", cache, ".")
    assert (code, out) == expected[:2]
    assert err.count("warning: cannot write the cache") == 1, err
    assert f"dynalint: warning: cannot write the cache in {cache}: " in err


def _full_disk(monkeypatch) -> None:
    """Every temporary file can be created but not written: writes fail with ENOSPC."""
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        os.dup2(os.open("/dev/full", os.O_WRONLY), fd)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


def test_a_full_disk_is_reported_once_and_leaves_nothing_half_written(tmp_path, monkeypatch, capsys):
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(MODEL.replace("x * 2", f"x * {i}"))
    cache = tmp_path / "cache"
    expected = _check_cli(capsys, "--no-cache", str(tmp_path))
    _full_disk(monkeypatch)
    code, out, err = _check_cli(capsys, "--cache-dir", str(cache), str(tmp_path))
    assert (code, out) == expected[:2]
    assert err.count("warning: cannot write the cache") == 1, err
    assert f"cannot write the cache in {cache}: No space left on device" in err
    assert not os.path.exists(cache) or not _leftovers(str(cache)), _leftovers(str(cache))


def test_a_full_file_system_is_reported_and_left_clean(tmp_path):
    """The same on a real file system that is full (a small tmpfs, where mounts are permitted)."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare and mount")
    (tmp_path / "m.py").write_text(MODEL)
    full = tmp_path / "full"
    full.mkdir()
    script = (f'mount -t tmpfs -o size=16k tmpfs "{full}" || exit 99; '
              f'head -c 12288 /dev/zero > "{full}/fill"; '
              f'"{sys.executable}" -m dynalint check -q --cache-dir "{full}/cache" "{tmp_path}/m.py"; rc=$?; '
              f'echo "--- left:"; find "{full}/cache" -mindepth 1 \\( -empty -o -name "*.tmp" \\) 2>/dev/null; '
              'exit $rc')
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    if done.returncode == 99 or "unshare:" in done.stderr:
        pytest.skip("tmpfs mounts are not permitted here")
    assert done.returncode == 1, done.stderr
    report, _, left = done.stdout.partition("--- left:")
    assert "DYN101" in report
    assert done.stderr.count("warning: cannot write the cache") == 1, done.stderr
    assert "No space left on device" in done.stderr
    assert left.split() == [], "half-written cache files or empty folders were left"
