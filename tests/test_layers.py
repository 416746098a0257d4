"""The layers show in the folders and the imports: core < config < analysis < rules < fixers < engine <
adapters/verify.  A module imports only from its own layer or the ones below (deferred imports
inside functions included), and no modules import each other in a circle."""
from __future__ import annotations

import ast
import configparser
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _package_dir() -> dict[str, str]:
    """setup.cfg's ``package_dir``: where each top package of the install lives in the tree."""
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, "setup.cfg"))
    lines = parser["options"]["package_dir"].strip().splitlines()
    return dict(tuple(part.strip() for part in line.split("=")) for line in lines)


PACKAGES = _package_dir()
#: bottom to top; a module's layer is the first folder under the package (``dynalint.core.source``
#: is in ``core``), or the top package for ``dynalint.rules``, ``dynalint.fixers`` and ``dynalint.verify``
LAYERS = ("core", "config", "analysis", "rules", "fixers", "engine", "adapters")
FOLDER_LAYERS = {"verify": "adapters", "__main__": "adapters"}


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2:
        return LAYERS[0]
    folder = parts[1]
    return FOLDER_LAYERS.get(folder, folder)


def modules() -> dict[str, str]:
    """Module name -> file, for every module of the installed packages."""
    found = {}
    for package, directory in PACKAGES.items():
        base = os.path.join(ROOT, directory)
        for dirpath, dirnames, filenames in os.walk(base):
            rel_dir = os.path.relpath(dirpath, base)
            if package == "dynalint" and rel_dir.split(os.sep)[0] in ("rules", "fixers", "verify"):
                continue  # a folder of its own package
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if name.endswith(".py"):
                    parts = [] if rel_dir == "." else rel_dir.split(os.sep)
                    if name != "__init__.py":
                        parts.append(name[:-3])
                    found[".".join([package, *parts])] = os.path.join(dirpath, name)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its code."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name and name not in (module, "dynalint"):
                    targets.add(name)
        graph[module] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def test_every_module_sits_in_a_layer_folder():
    """``lint/`` holds only the layer folders (and the package's ``__init__``/``__main__``), so a
    module's layer is where it lives."""
    stray = sorted(m for m in modules() if layer(m) not in LAYERS)
    assert stray == []
    assert sorted(n for n in os.listdir(os.path.join(ROOT, "lint")) if n.endswith(".py")) == ["__init__.py", "__main__.py"]


def test_the_graph_is_the_real_one():
    graph = import_graph()
    assert len(graph) > 80
    assert "dynalint.engine.pipeline" in graph["dynalint.engine.runner"]
    assert "dynalint.adapters.console" in graph["dynalint.adapters.fix_cli"]  # a deferred import counts
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_imports_go_down_the_layers():
    order = {name: i for i, name in enumerate(LAYERS)}
    upward = sorted((a, b) for a, targets in import_graph().items() for b in targets
                    if order[layer(b)] > order[layer(a)])
    assert upward == [], "\n".join(f"{a} ({layer(a)}) imports {b} ({layer(b)})" for a, b in upward)


def test_no_import_circles():
    found = [sorted(c) for c in circles(import_graph())]
    assert found == []


#: what walks or rebuilds a syntax tree: the analysis does it once, rules read its events and breaks
TREE_WALKERS = {"walk", "children", "parent_map", "simple_statements", "contains_exit", "CSTVisitor",
                "CSTTransformer", "MatcherDecoratableVisitor", "visit", "findall", "extractall"}


def test_rules_never_walk_the_tree():
    walking = []
    for module, path in modules().items():
        if layer(module) != "rules":
            continue
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            walking += [(module, n) for n in names if n in TREE_WALKERS]
    assert walking == []
