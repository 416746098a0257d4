"""The project index: the modules of the files being checked, and how a
qualified name used in one of them resolves to a class, a function or a
module-level name defined in another.

Modules are parsed lazily, the first time another module's analysis needs one
of their definitions, and kept for the rest of the run.  Package
``__init__.py`` files that are not themselves checked are read with
:mod:`ast` for their re-exports only (``from .boxes import nms``).
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator

import libcst as cst

from dynalint.analysis.custom_ops import may_ask_fresh_size
from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex, build_index
from dynalint.core.source import IMPORT_LINE, SourceError, parse_module, read_bytes, read_source

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.values import Value

MAX_LOADED_SOURCE = 12_000_000
"""Characters of source whose parsed trees are kept in memory (about 50 bytes of tree per
character; the least recently used trees are dropped beyond it)."""
_MAX_RESOLVE_DEPTH = 8
MAX_SCANNED_FILES = 5_000
"""Python files read when looking for the custom ops of the checked files' packages."""
_TOP_LEVEL_NAME = re.compile(
    r"^(?:async[ \t]+)?def[ \t]+(\w+)|^class[ \t]+(\w+)|^(\w+)[ \t]*(?::(?!=)|=(?!=))", re.MULTILINE)
"""``def f``, ``class C``, ``x = …`` and ``x: T`` at the start of a line."""


@dataclass(frozen=True)
class Resolved:
    """What a qualified name denotes inside the project."""

    index: ModuleIndex | None
    """The module that defines it (None for a module itself)."""
    name: str
    module: str
    """Dotted name of the defining module (or of the module itself)."""

    @property
    def function(self) -> FunctionInfo | None:
        return self.index.functions.get(self.name) if self.index is not None else None

    @property
    def cls(self) -> ClassInfo | None:
        return self.index.classes.get(self.name) if self.index is not None else None


def module_name_for(path: str) -> str:
    """Dotted module name of a file, from the packages (``__init__.py``) that contain it."""
    path = os.path.abspath(path)
    directory, base = os.path.split(path)
    parts = [] if base == "__init__.py" else [os.path.splitext(base)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, pkg = os.path.split(directory)
        parts.append(pkg)
        if not pkg:
            break
    return ".".join(reversed(parts))


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


class _Trees:
    """Parsed files by path (the least recently used dropped beyond :data:`MAX_LOADED_SOURCE`
    characters), for the indexes of one state of the files on disk."""

    def __init__(self) -> None:
        self._by_path: OrderedDict[str, tuple[cst.Module, str, dict]] = OrderedDict()
        """Path -> (tree, text, the bindings of its functions: see :func:`build_index`)."""
        self._chars = 0

    def get(self, path: str) -> tuple[cst.Module, str, dict] | None:
        found = self._by_path.get(path)
        if found is not None:
            self._by_path.move_to_end(path)
        return found

    def put(self, path: str, parsed: tuple[cst.Module, str]) -> tuple[cst.Module, str, dict]:
        before = self._by_path.pop(path, None)
        self._chars += len(parsed[1]) - (len(before[1]) if before is not None else 0)
        kept = self._by_path[path] = (*parsed, {})
        while len(self._by_path) > 1 and self._chars > MAX_LOADED_SOURCE:
            _, dropped = self._by_path.popitem(last=False)
            self._chars -= len(dropped[1])
        return kept


class SourceIndex:
    """The source index: the checked files as one program (module names, paths, parsed modules)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths: dict[str, str] = {}
        """Module name -> path of every checked file."""
        self.names: dict[str, str] = {}
        """Absolute path -> module name."""
        for p in paths:
            name = module_name_for(p)
            if name and name not in self.paths:
                self.paths[name] = p
                self.names[os.path.abspath(p)] = name
        self.packages: dict[str, str] = {}
        """Package name -> its directory, for every package that contains a checked file."""
        for name, p in self.paths.items():
            parts = name.split(".")
            directory = os.path.dirname(os.path.abspath(p))
            if os.path.basename(p) == "__init__.py":
                parts = parts + ["__init__"]
            for i in range(len(parts) - 1, 0, -1):
                self.packages.setdefault(".".join(parts[:i]), directory)
                directory = os.path.dirname(directory)
        self.tops = {n.split(".")[0] for n in self.paths}
        self._loaded: OrderedDict[str, ModuleIndex] = OrderedDict()
        self._sources: dict[str, tuple[str, ModuleIndex]] = {}
        self._exports: dict[str, dict[str, str]] = {}
        self._defined: dict[str, tuple[str, set[str]]] = {}
        """Unchecked package ``__init__.py`` files that define functions or classes: (path, names)."""
        self._resolved: dict[str, tuple[str, str, str] | None] = {}
        self._consulted: dict[str, set[str]] = {}
        """Files read to resolve a name: a later analysis that reuses the answer depends on them too."""
        self._export_files: dict[str, str] = {}
        self._transient: set[str] = set()
        self._imported: set[str] | None = None
        self._graph: dict[str, set[str]] | None = None
        self._edges: dict[str, list[tuple[str, frozenset[str] | None]]] | None = None
        self._importers: dict[str, list[tuple[str, frozenset[str] | None]]] | None = None
        self._top_names: dict[str, frozenset[str]] = {}
        self._assigned: dict[str, frozenset[str]] = {}
        """Path of a module that is not checked -> the names it binds at its top level by assignment (see
        :meth:`assigned_outside`), read once per index."""
        self._dynamic_ops: dict[str, str] | None = None
        """Custom op -> the file that gives it a fake implementation asking for a fresh size."""
        self._trees: _Trees | None = None
        """The trees parsed of the files, shared with the indexes :meth:`fresh` made (None: not kept
        beyond :attr:`_loaded`)."""
        self._loaded_chars = 0
        """Modules remembered only while their own analysis runs."""
        self.read: set[str] = set()
        """Paths of other files the current analysis looked into (its dependencies)."""

    def fresh(self) -> "SourceIndex":
        """An index of the same files that shares what this one read of them (their module names, the
        scan of their import lines and the names they define: none is changed once read), and none of
        the trees it parsed or the names it resolved.  An editor analyses each version of a document
        with an index of its own; made anew, that index read every file of the project again, per edit."""
        other = SourceIndex(())
        other.paths, other.names, other.packages, other.tops = self.paths, self.names, self.packages, self.tops
        other._edges, other._importers = self.import_edges(), self._importers
        other._top_names = self._top_names
        # the trees its analyses parse too (immutable; each index builds its own index of a tree): the
        # modules a document imports were parsed again on every edit, most of an edit's cost in a project
        if self._trees is None:
            self._trees = _Trees()
        other._trees = self._trees
        return other

    # ------------------------------------------------------------------ modules
    def module_of(self, path: str) -> str | None:
        return self.names.get(os.path.abspath(path))

    def index_for(self, path: str, module: cst.Module, source: str, reuse: ModuleIndex | None = None
                  ) -> ModuleIndex:
        """The index of a checked file being analysed (the one other modules' references point to);
        ``reuse``: the index of the text an edit was spliced from (see :func:`build_index`)."""
        name = self.module_of(path) or ""
        idx = self._loaded.get(name)
        if idx is not None and idx.module is module:
            return idx
        idx = build_index(module, reuse)
        idx.name = name
        idx.path = path
        idx.source = source
        self._remember(name, idx)
        self._transient.add(name)
        link_classes(self, idx)
        return idx

    def release(self, path: str) -> ModuleIndex | None:
        """The analysis of a checked file is over: forget its tree unless other checked files
        import it (keeping every tree alive would make each garbage collection walk them all); the
        index forgotten, if any (no other file's analysis reaches into it)."""
        name = self.module_of(path) or ""
        if name in self._transient:
            self._transient.discard(name)
            if name not in self.imported():
                return self._loaded.pop(name, None)
        return None

    def imported(self) -> set[str]:
        """Checked modules that some checked file imports."""
        if self._imported is None:
            self._imported = {dep for deps in self.import_graph().values() for dep in deps}
        return self._imported

    def import_graph(self) -> dict[str, set[str]]:
        """Module -> the checked modules it imports (a quick scan of import lines)."""
        if self._graph is None:
            self._graph = {name: {target for target, _ in edges} for name, edges in self.import_edges().items()}
        return self._graph

    def import_edges(self) -> dict[str, list[tuple[str, frozenset[str] | None]]]:
        """Module -> (checked module it imports, the names it takes from it: None for the whole
        module, as ``import m`` or ``from pkg import m`` take it). A quick scan of import lines,
        read once per index."""
        if self._edges is None:
            edges: dict[str, list[tuple[str, frozenset[str] | None]]] = {}
            for name, path in self.paths.items():
                try:
                    text = read_bytes(path).decode("utf-8", "replace")
                except SourceError:  # not a regular file, too large, unreadable: reported when checked
                    continue
                is_package = path.endswith("__init__.py")
                found = edges.setdefault(name, [])
                for m in IMPORT_LINE.finditer(text):
                    if m.group(3):
                        found.extend((n.split()[0], None) for n in m.group(3).split(","))
                        continue
                    base = absolute(m.group(1), name, is_package)
                    names = frozenset(n.split()[0] for n in re.sub(r"#[^\n]*", "", m.group(2)).strip("()").split(",")
                                      if n.strip())
                    found.append((base, names))
                    found.extend((f"{base}.{n}", None) for n in names)
                edges[name] = [(t, n) for t, n in found if t in self.paths and t != name]
            self._edges = edges
        return self._edges

    def importers_of(self, name: str) -> list[tuple[str, frozenset[str] | None]]:
        """The checked modules that import module ``name``, each with the names it takes from it
        (None: the whole module), from the same scan as :meth:`import_edges`."""
        if self._importers is None:
            found: dict[str, list[tuple[str, frozenset[str] | None]]] = {}
            for module, edges in self.import_edges().items():
                for target, names in edges:
                    found.setdefault(target, []).append((module, names))
            self._importers = found
        return self._importers.get(name, [])

    def defined_names(self, name: str) -> frozenset[str]:
        """The names a checked module binds at its top level (``def``, ``class``, assignments),
        from a quick scan of its lines: what an importer can take from it."""
        found = self._top_names.get(name)
        if found is None:
            path = self.paths.get(name)
            try:
                text = read_bytes(path).decode("utf-8", "replace") if path else ""
            except SourceError:
                text = ""
            found = frozenset(m.group(1) or m.group(2) or m.group(3) for m in _TOP_LEVEL_NAME.finditer(text))
            self._top_names[name] = found
        return found

    def cached_index(self, path: str, code: str) -> ModuleIndex | None:
        """A module already parsed for another file's analysis, if its text is ``code``."""
        name = self.module_of(path)
        idx = self._loaded.get(name) if name else None
        if idx is not None and idx.source == code:
            return idx
        return None

    def load(self, name: str, path: str | None = None) -> ModuleIndex | None:
        """The index of a checked module (or of the package ``__init__.py`` at ``path``),
        parsing it on first use."""
        idx = self._loaded.get(name)
        if idx is not None:
            self._loaded.move_to_end(name)
            self.read.add(idx.path)
            return idx
        path = path or self.paths.get(name)
        if path is None:
            return None
        bindings = None
        try:
            kept = self._trees.get(path) if self._trees is not None else None
            if kept is None:
                module, source = parse_module(read_source(path), path)  # as the engine reads and parses
                if self._trees is not None:
                    kept = self._trees.put(path, (module, source))
            if kept is not None:
                module, source, bindings = kept
        except Exception:  # unreadable or invalid: the name stays unresolved
            self._loaded[name] = idx = ModuleIndex(module=cst.Module(body=[]))
            idx.name, idx.path = name, path
            return idx
        idx = build_index(module, bindings=bindings)
        idx.name, idx.path, idx.source = name, path, source
        self.read.add(path)
        self._transient.discard(name)
        self._remember(name, idx)
        link_classes(self, idx)
        return idx

    def _remember(self, name: str, idx: ModuleIndex) -> None:
        self._loaded[name] = idx
        self._loaded.move_to_end(name)
        self._loaded_chars = sum(len(i.source or "") for i in self._loaded.values())
        while len(self._loaded) > 1 and self._loaded_chars > MAX_LOADED_SOURCE:
            _, dropped = self._loaded.popitem(last=False)
            self._loaded_chars -= len(dropped.source or "")

    def dependency_order(self, paths: list[str]) -> list[str]:
        """``paths`` with the modules others import first (depth-first over the import scan), so
        that a module's tree is still loaded when the files that import it are analysed."""
        graph = self.import_graph()
        order: list[str] = []
        state: dict[str, int] = {}
        for start in paths:
            name = self.module_of(start)
            if name is None or name in state:
                continue
            stack = [(name, iter(sorted(graph.get(name, ()))))]
            state[name] = 1
            while stack:
                current, deps = stack[-1]
                nxt = next(deps, None)
                if nxt is None:
                    stack.pop()
                    state[current] = 2
                    order.append(current)
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
        by_name = {self.module_of(p): p for p in paths}
        ordered = [by_name[n] for n in order if n in by_name]
        return ordered + [p for p in paths if self.module_of(p) is None]

    def dynamic_output_op(self, op: str) -> bool:
        """Whether the custom op ``op`` (``torch.ops.ns.name``) gets a fake implementation that asks for
        a fresh size (:mod:`~dynalint.analysis.custom_ops`) in a checked file or in another module of
        the packages that hold them: importing a package registers all its ops, so a call in one module
        breaks on a registration in a module that is not checked."""
        if self._dynamic_ops is None:
            self._dynamic_ops = self._find_dynamic_ops()
        path = self._dynamic_ops.get(op)
        if path is not None:
            self.read.add(path)  # what is found depends on its text
        return path is not None

    def _find_dynamic_ops(self) -> dict[str, str]:
        """Read once per index: the checked files and the modules of their top packages (at most
        :data:`MAX_SCANNED_FILES`), parsing only those whose text names a fresh size."""
        found: dict[str, str] = {}
        seen: set[str] = set()
        packages = [self.packages[t] for t in sorted(self.tops) if t in self.packages]
        for path in _scanned_files(self.paths.values(), packages):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            try:
                data = read_bytes(path)
                if not may_ask_fresh_size(data):
                    continue
                module, _ = parse_module(read_source(path), path)
            except Exception:  # unreadable or invalid: its ops stay unknown
                continue
            for op in sorted(build_index(module).dynamic_output_ops):
                found.setdefault(op, path)
        return found

    def _package_exports(self, package: str) -> dict[str, str]:
        """Names an unchecked package ``__init__.py`` imports (its re-exports), by ast."""
        if package in self._exports:
            if package in self._export_files:
                self.read.add(self._export_files[package])  # this analysis depends on it too
            return self._exports[package]
        out: dict[str, str] = {}
        directory = self.packages.get(package)
        if directory is not None:
            init = os.path.join(directory, "__init__.py")
            try:
                tree = ast.parse(read_bytes(init))
                self.read.add(init)
                self._export_files[package] = init
            except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            if tree is not None:
                defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                if defined:
                    self._defined[package] = (init, defined)
                for node in ast.walk(tree):
                    if isinstance(node, ast.ImportFrom):
                        base = absolute("." * node.level + (node.module or ""), package, True)
                        for alias in node.names:
                            if alias.name != "*":
                                out[alias.asname or alias.name] = f"{base}.{alias.name}"
        self._exports[package] = out
        return out

    # ------------------------------------------------------------------ names
    def resolve(self, q: str, depth: int = 0) -> Resolved | None:
        """What an absolute qualified name denotes, following re-exports."""
        if q.split(".", 1)[0] not in self.tops or depth > _MAX_RESOLVE_DEPTH:
            return None
        if q in self._resolved:
            self.read |= self._consulted.get(q, set())
            known = self._resolved[q]
            if known is None:
                return None
            module, name, path = known
            if not path:
                return Resolved(None, "", module)
            idx = self.load(module, path)  # the tree in use (it may have been parsed again since)
            return Resolved(idx, name, module) if idx is not None else None
        self._resolved[q] = None  # cycles resolve to nothing
        outer, self.read = self.read, set()
        try:
            result = self._resolve(q, depth)
        finally:
            self._consulted[q], self.read = self.read, outer | self.read
        # remember where, not the tree: a remembered tree would stay alive after it is dropped
        self._resolved[q] = None if result is None else (
            result.module, result.name, result.index.path if result.index is not None else "")
        return result

    def _resolve(self, q: str, depth: int) -> Resolved | None:
        if q in self.paths or q in self.packages:
            return Resolved(None, "", q)
        head, _, last = q.rpartition(".")
        if not head:
            return None
        if head in self.paths:
            idx = self.load(head)
            if idx is None:
                return None
            if last in idx.functions or last in idx.classes or last in idx.globals:
                return Resolved(idx, last, head)
            target = idx.imports.get(last)
            if target is not None:
                return self.resolve(absolute(target, head, idx.path.endswith("__init__.py")), depth + 1)
            return None
        if head in self.packages:
            exports = self._package_exports(head)
            init, defined = self._defined.get(head, ("", set()))
            if last in defined:
                idx = self.load(head, init)
                if idx is not None and (last in idx.functions or last in idx.classes):
                    return Resolved(idx, last, head)
            target = exports.get(last)
            if target is not None:
                return self.resolve(target, depth + 1)
            return None
        # an attribute of something defined in a module (``Class.method``) is not a module-level name
        return None

    def assigned_outside(self, q: str, depth: int = 0) -> Resolved | None:
        """A module-level name bound by assignment in a module of a checked file's package that is not
        itself checked (``OptTensor = Optional[Tensor]`` in ``pkg/typing.py``), following the package's
        re-exports: the module is parsed for it (once per run).  Only annotation aliases ask this: a
        function or class of an unchecked module stays unknown, as it does for :meth:`resolve`, so what
        checking one file costs does not grow with its package; an alias costs the parse of the one
        small module that binds it, and what it promises decides whether a parameter is a tensor."""
        if q.split(".", 1)[0] not in self.tops or depth > _MAX_RESOLVE_DEPTH:
            return None
        head, _, last = q.rpartition(".")
        if head in self.paths or not head:
            return None  # a checked module: :meth:`resolve` answers
        if head in self.packages:
            target = self._package_exports(head).get(last)
            return self.assigned_outside(target, depth + 1) if target is not None else None
        path = self._module_file(head)
        if path is None:
            return None
        assigned = self._assigned.get(path)
        if assigned is None:
            try:
                text = read_bytes(path).decode("utf-8", "replace")
            except SourceError:
                return None
            assigned = self._assigned[path] = frozenset(
                m.group(3) for m in _TOP_LEVEL_NAME.finditer(text) if m.group(3))
        self.read.add(path)  # what is found depends on its text, found or not
        if last not in assigned:
            return None  # (a quick scan: most names an annotation takes from elsewhere are classes)
        idx = self.load(head, path)
        return Resolved(idx, last, head) if idx is not None and last in idx.globals else None

    def _module_file(self, module: str) -> str | None:
        """The file of an unchecked module inside a package that holds a checked file, if it exists."""
        package, _, rest = module.rpartition(".")
        while package and package not in self.packages:
            package, _, part = package.rpartition(".")
            rest = f"{part}.{rest}"
        if not package:
            return None
        base = os.path.join(self.packages[package], *rest.split("."))
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
        return None


def absolute(q: str, module: str, is_package: bool) -> str:
    """``..ops.boxes.nms`` seen from module ``torchvision.models.detection.rpn``:
    ``torchvision.ops.boxes.nms``."""
    if not q.startswith("."):
        return q
    level = len(q) - len(q.lstrip("."))
    rest = q[level:]
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if not rest:
        return base
    return f"{base}.{rest}" if base else rest


def link_classes(project: SourceIndex, idx: ModuleIndex) -> None:
    """Bases imported from other checked modules become real base classes, and a class
    deriving (through any of them) from ``nn.Module`` is a module."""
    changed = False
    for cls in idx.classes.values():
        for base in cls.bases:
            if base in idx.classes:
                continue
            q = idx.resolve(base)
            if q is None:
                continue
            r = project.resolve(absolute(q, idx.name, idx.path.endswith("__init__.py")))
            other = r.cls if r is not None else None
            if other is not None and other is not cls and other not in cls.base_classes:
                cls.base_classes.append(other)
                changed = True
    if changed:
        for cls in idx.classes.values():
            if not cls.is_module and any(b.is_module for b in cls.mro() if b is not cls):
                cls.is_module = True


# --------------------------------------------------------------------------- entries across files


_BOUND = "@"
"""Separates an incoming entry's function from the subclass whose instance runs it (see :func:`bound_entry`)."""


def bound_entry(qualname: str, cls: ClassInfo) -> str | None:
    """The name of the incoming entry that runs method ``qualname`` of one module on an instance of
    ``cls``, its subclass in another module: ``Base.forward@pkg.b:Sub``.  Run so, the inherited method
    calls the subclass's overrides (``self.hook(x)``), and what they do decides the base module's own
    lines (a comprehension over ``zip`` whose body breaks in the override breaks at the comprehension);
    only the analysis of the subclass's module knows that instance, only the base's reports those lines.
    None when the class's module has no name."""
    owner = cls.owner
    if owner is None or not owner.name:
        return None
    return f"{qualname}{_BOUND}{owner.name}:{cls.name}"


def split_entry(name: str) -> tuple[str, tuple[str, str] | None]:
    """An incoming entry's function and, for one made by :func:`bound_entry`, the (module, class) of the
    instance it runs on."""
    qualname, mark, bound = name.partition(_BOUND)
    module, _, cls = bound.partition(":")
    return qualname, ((module, cls) if mark and module and cls else None)


# --------------------------------------------------------------------------- values across files


TENSOR_FLAGS = ("is_bool", "maybe_none", "entered", "constant", "zero_dim", "assumed", "lifted")
"""What an encoded tensor carries: its provenance decides whether a use as a size needs its data."""
_JOIN_ANY = frozenset({"maybe_none", "assumed"})
"""Flags a joined tensor has when either side has them (the others: when both have them)."""


def encode_value(v: "Value") -> list:
    """A value as plain data (what an incoming entry carries between analyses of two files)."""
    from dynalint.analysis.values import Kind

    k = v.kind
    if k is Kind.TENSOR:
        # an instance of a tensor subclass of the checked code also carries its class: what Dynamo cannot
        # do with one (read its `__dict__`, resume in its methods) holds in the other file too
        made = [v.cls.owner.name, v.cls.name] if v.cls is not None and v.cls.owner is not None \
            and v.cls.owner.name else []
        return ["T", *(int(getattr(v, f)) for f in TENSOR_FLAGS), *made]
    if k is Kind.PYTHON:
        if v.has_const and v.const is None:
            return ["N"]
        if v.qualname == "builtins.dict" and v.element is not None:
            entries = [[key, encode_value(item)] for key, item in zip(v.keys, v.items)] \
                if v.keys is not None and v.items is not None and len(v.keys) <= 8 else None
            return ["D", encode_value(v.element), entries]
        return ["P", int(v.is_bool)]
    if k is Kind.SIZE:
        return ["S"]
    if k is Kind.SEQUENCE:
        items = [encode_value(i) for i in v.items] if v.items is not None and len(v.items) <= 8 else None
        return ["L", encode_value(v.element) if v.element is not None else None, items]
    if k is Kind.MODULE and v.cls is not None and v.cls.owner is not None and v.cls.owner.name:
        return ["M", v.cls.owner.name, v.cls.name]
    if v.cls is not None and v.cls.owner is not None and v.cls.owner.name and v.keys is not None \
            and v.items is not None and len(v.keys) <= 8:
        # a record built in compiled code, with the values of its fields
        return ["R", v.cls.owner.name, v.cls.name, [[key, encode_value(item)] for key, item in zip(v.keys, v.items)]]
    return ["U"]


def decode_value(code: list, project: SourceIndex) -> "Value":
    from dynalint.analysis.values import (NONE_VALUE, SIZE_VALUE, UNKNOWN_VALUE, Kind, Value, mapping,
                                          python, sequence, tensor)

    try:
        tag = code[0]
        if tag == "T":
            n = len(TENSOR_FLAGS) + 1
            value = tensor(**{f: bool(x) for f, x in zip(TENSOR_FLAGS, code[1:n], strict=True)})
            if len(code) == n + 2:
                idx = project.load(code[n])
                cls = idx.classes.get(code[n + 1]) if idx is not None else None
                return value.with_(cls=cls) if cls is not None else value
            return value
        if tag == "N":
            return NONE_VALUE
        if tag == "P":
            return python(is_bool=bool(code[1]))
        if tag == "D":
            entries = {str(key): decode_value(item, project) for key, item in code[2]} if code[2] is not None \
                else None
            return mapping(decode_value(code[1], project), entries)
        if tag == "S":
            return SIZE_VALUE
        if tag == "L":
            element = decode_value(code[1], project) if code[1] is not None else None
            items = [decode_value(i, project) for i in code[2]] if code[2] is not None else None
            return sequence(items=items, element=element)
        if tag in ("M", "R"):
            idx = project.load(code[1])
            cls = idx.classes.get(code[2]) if idx is not None else None
            if cls is not None and tag == "R" and not cls.is_module:
                fields = {str(key): decode_value(item, project) for key, item in code[3]}
                return Value(Kind.UNKNOWN, cls=cls, keys=tuple(fields), items=tuple(fields.values()))
            if cls is not None:
                return Value(Kind.MODULE if cls.is_module else Kind.UNKNOWN, cls=cls)
    except (IndexError, TypeError, KeyError, ValueError):
        pass
    return UNKNOWN_VALUE


def join_encoded(a: list | bool, b: list | bool) -> list | bool:
    """Join of two encoded values (a parameter is a tensor only when every caller passes one)."""
    if a == b:
        return a
    if isinstance(a, bool) or isinstance(b, bool):
        return True
    for x, y in ((a, b), (b, a)):
        n = len(TENSOR_FLAGS) + 1
        if x[0] == "T" and y[0] == "N":
            return ["T", *(1 if f == "maybe_none" else x[i] for i, f in enumerate(TENSOR_FLAGS, 1)), *x[n:]]
        if x[0] == "T" and y[0] == "T":
            return ["T", *(int((x[i] or y[i]) if f in _JOIN_ANY else (x[i] and y[i]))
                           for i, f in enumerate(TENSOR_FLAGS, 1)), *(x[n:] if x[n:] == y[n:] else [])]
        if x[0] == "P" and y[0] in ("P", "N"):
            return ["P", int(x[1] and y[0] == "P" and y[1])]
        if x[0] == "R" and y[0] == "R" and x[1:3] == y[1:3]:
            if [k for k, _ in x[3]] == [k for k, _ in y[3]]:
                return [*x[:3], [[k, join_encoded(a, b)] for (k, a), (_, b) in zip(x[3], y[3])]]
            return ["M", *x[1:3]]
        if x[0] == "D" and y[0] == "D":
            entries = [[k, join_encoded(a, b)] for (k, a), (k2, b) in zip(x[2], y[2])] \
                if x[2] is not None and y[2] is not None and [k for k, _ in x[2]] == [k for k, _ in y[2]] else None
            return ["D", join_encoded(x[1], y[1]), entries]
        if x[0] == "L" and y[0] == "L":
            el = join_encoded(x[1], y[1]) if x[1] is not None and y[1] is not None else None
            return ["L", el, None]
    return ["U"]


def _scanned_files(checked: Iterable[str], packages: Iterable[str]) -> Iterator[str]:
    """The checked files, then the Python files under the package folders (hidden folders and
    ``__pycache__`` left out, links not followed), :data:`MAX_SCANNED_FILES` in all."""
    count = 0
    for path in checked:
        yield path
        count += 1
    for top in packages:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                if count >= MAX_SCANNED_FILES:
                    return
                count += 1
                yield os.path.join(dirpath, name)
