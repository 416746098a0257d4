"""Finding the Python files to check."""
from __future__ import annotations

import fnmatch
import os
from typing import Iterable, Iterator

#: Directory names never descended into.
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
    ".nox", ".venv", "build", "dist", "node_modules", ".eggs", "site-packages",
    ".dynalint_cache", ".ipynb_checkpoints",
)


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _excluded(path: str, name: str, patterns: Iterable[str]) -> bool:
    norm = path.replace(os.sep, "/")
    for pat in patterns:
        if fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(norm, pat) or fnmatch.fnmatch(norm, f"*/{pat}"):
            return True
    return False


def iter_python_files(paths: Iterable[str], exclude: Iterable[str] = (), *,
                      force_exclude: bool = False) -> Iterator[str]:
    """Python files under ``paths``.

    Directories are walked recursively in a stable order, skipping VCS folders,
    virtual environments, caches, build outputs and ``exclude`` glob patterns.
    Files given explicitly are always yielded, unless ``force_exclude`` (for tools
    such as pre-commit, which pass every file by name).
    """
    patterns = tuple(exclude)
    seen: set[str] = set()
    for root in paths:
        if os.path.isfile(root) or not os.path.exists(root):
            if force_exclude and _excluded(root, os.path.basename(root), patterns):
                continue
            if root not in seen:
                seen.add(root)
                yield root
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames
                if d not in DEFAULT_EXCLUDES and not d.endswith(".egg-info")
                and not _is_virtualenv(os.path.join(dirpath, d))
                and not _excluded(os.path.join(dirpath, d), d, patterns)
            )
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                full = os.path.join(dirpath, name)
                if _excluded(full, name, patterns) or full in seen:
                    continue
                seen.add(full)
                yield full
