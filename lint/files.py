"""Finding the Python files to check."""
from __future__ import annotations

import os
import subprocess
from typing import Iterable, Iterator

from dynalint.config import Project

#: Directory names never descended into.
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
    ".nox", ".venv", "build", "dist", "node_modules", ".eggs", "site-packages",
    ".dynalint_cache", ".ipynb_checkpoints",
)


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


class GitIgnore:
    """What git ignores (``.gitignore`` files, ``.git/info/exclude``, the global excludes), asked of git
    itself once per repository, so its rules are git's own.  Outside a repository, or without git,
    nothing is ignored."""

    def __init__(self) -> None:
        self._tops: dict[str, str | None] = {}
        self._ignored: dict[str, frozenset[str]] = {}

    def _toplevel(self, directory: str) -> str | None:
        """The repository root of ``directory``.  git is asked once per repository: a folder inherits the
        answer of its nearest known ancestor unless a folder in between has its own ``.git``."""
        between = []
        current = directory
        while current not in self._tops:
            between.append(current)
            parent = os.path.dirname(current)
            if parent == current or os.path.exists(os.path.join(current, ".git")):
                break
            current = parent
        if current in self._tops and not any(os.path.exists(os.path.join(d, ".git")) for d in between):
            top = self._tops[current]
        else:
            top = self._ask_git(directory)
        for d in between:
            self._tops[d] = top
        return top

    @staticmethod
    def _ask_git(directory: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", directory, "rev-parse", "--show-toplevel"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return os.path.abspath(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None

    def _listing(self, top: str) -> frozenset[str]:
        if top not in self._ignored:
            try:
                out = subprocess.run(["git", "-C", top, "ls-files", "-z", "--others", "--ignored",
                                      "--exclude-standard", "--directory"], capture_output=True, timeout=120)
                names = out.stdout.decode("utf-8", "surrogateescape").split("\0") if out.returncode == 0 else []
            except (OSError, subprocess.SubprocessError):
                names = []
            self._ignored[top] = frozenset(os.path.join(top, n.rstrip("/")) for n in names if n)
        return self._ignored[top]

    def ignored(self, path: str) -> bool:
        path = os.path.abspath(path)
        directory = path if os.path.isdir(path) else os.path.dirname(path)
        top = self._toplevel(directory)
        if top is None:
            return False
        listing = self._listing(top)
        current = path
        while len(current) > len(top):
            if current in listing:
                return True
            current = os.path.dirname(current)
        return False


def _display(path: str) -> str:
    """``./a/b.py`` -> ``a/b.py`` (paths print as the user would type them)."""
    return os.path.normpath(path) if path.startswith("." + os.sep) else path


def iter_python_files(paths: Iterable[str], project: Project, *, force_exclude: bool = False) -> Iterator[str]:
    """Python files under ``paths``.

    Directories are walked recursively in a stable order, skipping VCS folders, virtual environments,
    caches, build outputs, what git ignores (``respect-gitignore``) and ``exclude`` patterns (resolved
    against the project root, so the result does not depend on the current directory).  Files given
    explicitly are always yielded (a named pipe or a device too: reading reports it), unless
    ``force_exclude`` (for tools such as pre-commit, which pass every file by name).
    """
    gitignore = GitIgnore() if project.settings.respect_gitignore else None

    def skipped(path: str) -> bool:
        return project.excluded(path) or (gitignore is not None and gitignore.ignored(path))

    seen: set[str] = set()
    for root in paths:
        if not os.path.isdir(root):  # a file, or what is no file (a pipe, a device): reported when read
            if force_exclude and skipped(root):
                continue
            if root not in seen:
                seen.add(root)
                yield root
            continue
        if skipped(root) and os.path.abspath(root) != project.root:
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames
                if d not in DEFAULT_EXCLUDES and not d.endswith(".egg-info")
                and not _is_virtualenv(os.path.join(dirpath, d))
                and not skipped(os.path.join(dirpath, d))
            )
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                full = _display(os.path.join(dirpath, name))
                if full in seen or skipped(full):
                    continue
                seen.add(full)
                yield full
