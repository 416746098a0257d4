"""Gitignore matching in-process (``dynalint.config.gitignore``, ``files.GitIgnore``): git's own answers on
generated trees are the reference, and linting a repository never runs a program it configures."""
from __future__ import annotations

import os
import random
import subprocess

import pytest

from helpers import run, write

from dynalint.config.files import GitIgnore
from dynalint.config.gitignore import compile_pattern, parse_lines, verdict


def _git_env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), GIT_CONFIG_NOSYSTEM="1")
    return env


def _git(cwd, *args, home):
    return subprocess.run(["git", *args], cwd=cwd, env=_git_env(str(home)), capture_output=True, check=True)


# -- the pattern language -------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, path, is_dir, expected", [
    ("*.py", "a/b/c.py", False, True),
    ("*.py", "c.pyc", False, False),
    ("/top.py", "top.py", False, True),
    ("/top.py", "a/top.py", False, False),
    ("a/*.py", "a/b/c.py", False, False),      # * never crosses /
    ("a/**/c.py", "a/c.py", False, True),      # /**/: zero directories
    ("a/**/c.py", "a/x/y/c.py", False, True),
    ("**/c.py", "x/c.py", False, True),
    ("a/**", "a/x/y", False, True),
    ("a/**", "a", True, False),
    ("a**b", "a/b", False, False),             # ** not at a boundary: a plain *
    ("build/", "build", False, False),         # directories only
    ("build/", "x/build", True, True),
    ("[ab]?.py", "b1.py", False, True),
    ("[!ab].py", "c.py", False, True),
    ("[!ab].py", "a.py", False, False),
    ("[[:digit:]]*", "7z", False, True),
    ("\\#h.py", "#h.py", False, True),
    ("foo\\ ", "foo ", False, True),
    ("foo   ", "foo", False, True),            # unescaped trailing spaces are dropped
    ("[ab", "[ab", False, False),              # an unclosed class never matches
    ("a**/x", "a/q/x", False, True),           # git compares the literal prefix `a` first: the **
    ("a**/x", "ax", False, True),              # then begins the rest of the pattern and crosses /
    ("/p/q**", "p/qr/s/t", False, True),
    ("a/b**c", "a/bx/c", False, False),        # not followed by /: a plain *
])
def test_patterns(pattern, path, is_dir, expected):
    compiled = compile_pattern(pattern)
    assert (compiled is not None and compiled.match(path, is_dir)) is expected


def test_no_pattern_makes_matching_slow():
    """Matching is linear in the pattern times the name: a hostile ``.gitignore`` cannot hang a run
    (a backtracking translation of ``*a*a*...*b`` takes minutes on a 60-character name)."""
    import time

    start = time.perf_counter()
    for stars in range(1, 60):
        assert not compile_pattern("*a" * stars + "*b").match("a" * 250)
    assert not compile_pattern("/" + "**/a/" * 30 + "b").match("/".join(["a"] * 400))
    assert compile_pattern("/" + "**/a/" * 30 + "b").match("/".join(["a"] * 400 + ["b"]))
    assert time.perf_counter() - start < 5


def test_comments_blank_lines_and_negation():
    assert compile_pattern("# comment") is None and compile_pattern("   ") is None
    patterns = parse_lines("\ufeff*.py\r\n!keep.py\n\n# x\n")
    assert [p.text for p in patterns] == ["*.py", "!keep.py"]
    assert verdict(patterns, "a.py") is True and verdict(patterns, "keep.py") is False
    assert verdict(patterns, "a.txt") is None


# -- against git ------------------------------------------------------------------------------------

NAMES = ["a", "b", "c.py", "d.py", "x.log", "sp ace.py", "#h.py", "!b.py", "build", "ab.py"]
PARTS = ["a", "b", "*", "*.py", "?.py", "[ab]*", "[!a]*", "**", "build", "c.py", "x.*", "\\#h.py", "\\!b.py",
         "*a*", "*.p*", "*b*.py", "a**", "*?*y"]


def _random_tree(rng: random.Random, root: str, depth: int = 0) -> None:
    for name in rng.sample(NAMES, rng.randint(1, 5)):
        path = os.path.join(root, name)
        if depth < 3 and not name.endswith((".py", ".log")) and rng.random() < 0.8:
            os.makedirs(path, exist_ok=True)
            _random_tree(rng, path, depth + 1)
        elif not os.path.exists(path):
            with open(path, "w") as fh:
                fh.write("x = 1\n")
    if rng.random() < 0.6:
        with open(os.path.join(root, ".gitignore"), "w") as fh:
            fh.write("".join(_random_pattern(rng) + "\n" for _ in range(rng.randint(1, 4))))


def _random_pattern(rng: random.Random) -> str:
    parts = [rng.choice(PARTS) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    text = "/".join(parts)
    if rng.random() < 0.2:
        text = "/" + text
    if rng.random() < 0.2:
        text += "/"
    if rng.random() < 0.25:
        text = "!" + text
    return text


def _files(root: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        out.extend(os.path.relpath(os.path.join(dirpath, f), root) for f in filenames if f != ".gitignore")
    return sorted(out)


def test_ignored_files_agree_with_git_on_generated_trees(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (home / ".config" / "git").mkdir(parents=True)
    trees = disagreements = files = 0
    for seed in range(120):
        rng = random.Random(seed)
        root = tmp_path / f"t{seed}"
        root.mkdir()
        _git(root, "init", "-q", ".", home=home)
        _random_tree(rng, str(root))
        (root / ".git" / "info").mkdir(exist_ok=True)
        (root / ".git" / "info" / "exclude").write_text(_random_pattern(rng) + "\n" if seed % 3 == 0 else "")
        (home / ".config" / "git" / "ignore").write_text(_random_pattern(rng) + "\n" if seed % 5 == 0 else "")
        out = _git(root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", home=home).stdout
        expected = {os.path.normpath(n) for n in out.decode().split("\0")
                    if n and os.path.basename(n) != ".gitignore"}
        ignore = GitIgnore()
        got = {f for f in _files(str(root)) if ignore.ignored(str(root / f))}
        trees += 1
        files += len(_files(str(root)))
        if got != expected:
            disagreements += 1
            pytest.fail(f"seed {seed}: only git {sorted(expected - got)}, "
                        f"only dynalint {sorted(got - expected)}")
    assert trees == 120 and files > 500 and disagreements == 0


# -- nothing runs -----------------------------------------------------------------------------------

def test_a_hostile_repository_configuration_runs_nothing(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", ".", home=home)
    marker = tmp_path / "marker"
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f"[core]\n\tfsmonitor = \"touch {marker}\"\n\tuntrackedCache = false\n")
    write(repo, ".gitignore", "skipped/\n")
    write(repo, "skipped/m.py", "import torch\n")
    write(repo, "m.py", "x = 1\n")
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "--show-files", ".")
    assert out.splitlines() == ["m.py"]
    run(capsys, "--no-cache", ".")
    assert not marker.exists()
    # the configuration is live: git itself runs the command
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, env=_git_env(str(home)), capture_output=True)
    assert marker.exists()


def test_a_linked_or_odd_gitignore_is_not_read(tmp_path, capsys, monkeypatch):
    """git does not follow a ``.gitignore`` that is a symbolic link; a FIFO is not waited on (git
    itself blocks on one)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, capture_output=True)
    write(tmp_path, "elsewhere", "x.py\n")
    os.symlink("elsewhere", tmp_path / ".gitignore")
    write(tmp_path, "x.py", "x = 1\n")
    write(tmp_path, "sub/y.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    listed = subprocess.run(["git", "ls-files", "-o", "-i", "--exclude-standard"], capture_output=True,
                            text=True, timeout=60).stdout.split()
    assert listed == []
    os.mkfifo(tmp_path / "sub" / ".gitignore")
    assert sorted(run(capsys, "--show-files", ".")[1].splitlines()) == [os.path.join("sub", "y.py"), "x.py"]


def test_nested_gitignore_and_info_exclude_in_a_walk(tmp_path, capsys, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, capture_output=True)
    write(tmp_path, ".gitignore", "gen_*.py\n/vendor/\n")
    write(tmp_path, "pkg/.gitignore", "!gen_keep.py\nlocal.py\n")
    write(tmp_path, ".git/info/exclude", "scratch.py\n")
    for name in ("gen_a.py", "pkg/gen_b.py", "pkg/gen_keep.py", "pkg/local.py", "local.py", "vendor/v.py",
                 "pkg/vendor/v.py", "scratch.py", "pkg/scratch.py", "keep.py"):
        write(tmp_path, name, "x = 1\n")
    monkeypatch.chdir(tmp_path)
    files = sorted(run(capsys, "--show-files", ".")[1].splitlines())
    assert files == sorted(["keep.py", "local.py", os.path.join("pkg", "gen_keep.py"),
                            os.path.join("pkg", "vendor", "v.py")])
