"""Finding the Python files to check."""
from __future__ import annotations

import os
import stat
from typing import Iterable, Iterator

from dynalint.config.resolver import Configuration
from dynalint.config.gitignore import Pattern, parse_lines, verdict
from dynalint.core.source import IMPORT_LINE, SourceError, read_bytes

#: Directory names never descended into.
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
    ".nox", ".venv", "build", "dist", "node_modules", ".eggs", "site-packages",
    ".dynalint_cache", ".ipynb_checkpoints",
)


CHECKED_SUFFIXES = (".py", ".ipynb")
"""Files a directory walk yields: Python modules and Jupyter notebooks (their code cells)."""


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


class GitIgnore:
    """What git ignores: ``.gitignore`` files, ``.git/info/exclude`` and the user's global excludes
    (``$XDG_CONFIG_HOME/git/ignore``, else ``~/.config/git/ignore``), read in-process with git's
    semantics (:mod:`dynalint.config.gitignore`).  git itself is never run, so no program a repository
    configures (``core.fsmonitor`` and the like) runs while it is linted.  Outside a repository
    nothing is ignored."""

    def __init__(self) -> None:
        self._tops: dict[str, str | None] = {}
        self._patterns: dict[str, list[Pattern]] = {}
        self._base: dict[str, list[Pattern]] = {}
        self._verdicts: dict[str, bool] = {}

    def _toplevel(self, directory: str) -> str | None:
        """The repository root of ``directory``: the nearest folder at or above it with a ``.git``."""
        between = []
        current = directory
        top: str | None = None
        while True:
            if current in self._tops:
                top = self._tops[current]
                break
            between.append(current)
            if os.path.exists(os.path.join(current, ".git")):
                top = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for d in between:
            self._tops[d] = top
        return top

    @staticmethod
    def _read(path: str, follow: bool = True) -> list[Pattern]:
        """The patterns of one ignore file: none when it is missing, unreadable, too large or not a
        regular file (a FIFO is never waited on).  ``follow=False``: a symbolic link is not followed
        (git does not follow a ``.gitignore`` that is a link in the working tree)."""
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        if not follow:
            flags |= getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)
        except OSError:
            return []
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IGNORE_FILE:
                return []
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read(MAX_IGNORE_FILE + 1)
        except OSError:
            return []
        finally:
            os.close(fd)
        return parse_lines(data[:MAX_IGNORE_FILE].decode("utf-8", "surrogateescape"))

    def _directory_patterns(self, directory: str) -> list[Pattern]:
        if directory not in self._patterns:
            path = os.path.join(directory, ".gitignore")
            self._patterns[directory] = self._read(path, follow=False)
        return self._patterns[directory]

    def _repository_patterns(self, top: str) -> list[Pattern]:
        """The global excludes, then ``info/exclude`` (lowest precedence first), anchored at ``top``."""
        if top not in self._base:
            config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
            self._base[top] = self._read(os.path.join(config, "git", "ignore")) + \
                self._read(os.path.join(_git_common_dir(top), "info", "exclude"))
        return self._base[top]

    def ignored(self, path: str) -> bool:
        """Whether git ignores ``path`` or a folder above it (within its repository)."""
        path = os.path.abspath(path)
        is_dir = os.path.isdir(path)
        top = self._toplevel(path if is_dir else os.path.dirname(path))
        if top is None or path == top:
            return False
        parts = path[len(top):].lstrip(os.sep).split(os.sep)
        current = top
        for i, name in enumerate(parts):
            parent, current = current, os.path.join(current, name)
            if name == ".git":
                return True
            known = self._verdicts.get(current)
            if known is None:
                known = self._decide(top, parent, current, is_dir or i < len(parts) - 1)
                self._verdicts[current] = known
            if known:
                return True
        return False

    def _decide(self, top: str, parent: str, path: str, is_dir: bool) -> bool:
        """The last matching pattern decides: deeper ``.gitignore`` files over shallower ones, any
        ``.gitignore`` over ``info/exclude`` over the global excludes."""
        directory = parent
        while True:  # deepest first: the first level with a match decides
            patterns = self._directory_patterns(directory)
            if patterns:
                found = verdict(patterns, _relative(path, directory), is_dir)
                if found is not None:
                    return found
            if len(directory) <= len(top):
                break
            directory = os.path.dirname(directory)
        return bool(verdict(self._repository_patterns(top), _relative(path, top), is_dir))


def _relative(path: str, base: str) -> str:
    """``path`` (under ``base``) relative to it, ``/``-separated."""
    rel = path[len(base):].lstrip(os.sep)
    return rel if os.sep == "/" else rel.replace(os.sep, "/")


MAX_IGNORE_FILE = 16 * 1024 * 1024
"""Larger ignore files are not read (a hostile repository must not exhaust memory)."""


def _git_common_dir(top: str) -> str:
    """The git directory holding ``info/exclude``: ``.git``, or for a linked worktree (``.git`` is a
    file saying ``gitdir: ...``) its ``commondir``."""
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as fh:
            line = fh.read(4096).strip()
    except OSError:
        return dot_git
    if not line.startswith("gitdir:"):
        return dot_git
    gitdir = os.path.join(top, line[len("gitdir:"):].strip())
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as fh:
            return os.path.normpath(os.path.join(gitdir, fh.read(4096).strip()))
    except OSError:
        return gitdir


def _display(path: str) -> str:
    """``./a/b.py`` -> ``a/b.py`` (paths print as the user would type them)."""
    return os.path.normpath(path) if path.startswith("." + os.sep) else path


def iter_python_files(paths: Iterable[str], config: Configuration, *, force_exclude: bool = False) -> Iterator[str]:
    """Python files under ``paths``.

    Directories are walked recursively in a stable order, skipping VCS folders, virtual environments,
    caches, build outputs, what git ignores (``respect-gitignore``) and ``exclude`` patterns (resolved
    against the project root, so the result does not depend on the current directory).  Files given
    explicitly are always yielded (a named pipe or a device too: reading reports it), unless
    ``force_exclude`` (for tools such as pre-commit, which pass every file by name).
    """
    gitignore = GitIgnore() if config.settings.respect_gitignore else None

    def skipped(path: str) -> bool:
        return config.excluded(path) or (gitignore is not None and gitignore.ignored(path))

    seen: set[str] = set()
    for root in paths:
        if not os.path.isdir(root):  # a file, or what is no file (a pipe, a device): reported when read
            if force_exclude and skipped(root):
                continue
            if root not in seen:
                seen.add(root)
                yield root
            continue
        if skipped(root) and os.path.abspath(root) != config.root:
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames
                if d not in DEFAULT_EXCLUDES and not d.endswith(".egg-info")
                and not _is_virtualenv(os.path.join(dirpath, d))
                and not skipped(os.path.join(dirpath, d))
            )
            for name in sorted(filenames):
                if not name.endswith(CHECKED_SUFFIXES):
                    continue
                full = _display(os.path.join(dirpath, name))
                if full in seen or skipped(full):
                    continue
                seen.add(full)
                yield full


def imported_siblings(path: str) -> list[str]:
    """The modules beside the script at ``path`` that its import lines name (``from _utils import
    warmup_cosine``, ``import helpers``): Python finds them there when it runs the script, a quick scan of
    its lines finds them here."""
    try:
        text = read_bytes(path).decode("utf-8", "replace")
    except SourceError:
        return []
    names = set()
    for m in IMPORT_LINE.finditer(text):
        if m.group(1) is not None:
            names.add(m.group(1).split(".")[0])
        else:
            names.update(n.split()[0].split(".")[0] for n in m.group(3).split(","))
    folder = os.path.dirname(os.path.abspath(path))
    found = (os.path.join(folder, f"{name}.py") for name in sorted(names) if name)
    return [sibling for sibling in found if os.path.isfile(sibling) and sibling != os.path.abspath(path)]
