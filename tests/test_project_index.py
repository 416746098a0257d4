"""The project pass: reach across files, types across files, and the cache that re-analyses
only a changed file and the files that depend on it.

The multi-file package below is also run under real Dynamo: every line the project pass
flags in it must be a line where Dynamo's graph-break log reports a break.
"""
from __future__ import annotations

import os
import sys
import textwrap

import pytest

import dynalint.engine.runner as runner
from conftest import requires_torch
from dynalint.analysis.project import SourceIndex, absolute, module_name_for
from dynalint.engine.runner import check_files
from dynalint.config.settings import Scope, Settings

from helpers import check

LAYERS = '''
import torch
from torch import nn
from typing import Optional

OptTensor = Optional[torch.Tensor]


class Gate:
    """A plain helper object: only compiled code of another file calls it."""

    def pick(self, scores):
        if scores.max() > 0.5:
            return scores * 2
        return scores


class Base(nn.Module):
    def forward(self, x):
        return self.post(x)

    def post(self, x):
        return x
'''

MODEL = '''
import torch
from .layers import Base, Gate, OptTensor


class Net(Base):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def post(self, x):
        return self.gate.pick(x)


class Masked(Base):
    def forward(self, x, mask: OptTensor = None):
        if mask is not None:
            n = mask.sum().item()
            return x * n
        return x
'''

UNRELATED = '''
def version():
    return "1.0"
'''


@pytest.fixture
def package(tmp_path):
    root = tmp_path / "src"
    pkg = root / "cross_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(LAYERS.lstrip())
    (pkg / "model.py").write_text(MODEL.lstrip())
    (pkg / "about.py").write_text(UNRELATED.lstrip())
    return {name: str(pkg / f"{name}.py") for name in ("layers", "model", "about")}


def _diagnostics(paths, settings=Settings(), cache_dir=None):
    results = list(check_files(list(paths), settings, cache_dir=cache_dir))
    assert all(r.error is None for r in results), [r.error for r in results]
    return [d for r in results for d in r.diagnostics]


def _line(path: str, text: str) -> int:
    with open(path) as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


def _breaks(diagnostics):
    return sorted((d.line, d.code) for d in diagnostics if d.kind == "graph-break")


def _flagged(diagnostics, path):
    return {(d.line, d.code) for d in diagnostics if d.path == path and d.kind == "graph-break"}


# --------------------------------------------------------------------------- names


def test_module_names_and_relative_imports(package):
    assert module_name_for(package["model"]) == "cross_pkg.model"
    assert absolute(".layers.Gate", "cross_pkg.model", False) == "cross_pkg.layers.Gate"
    assert absolute("..ops.nms", "a.b.c", False) == "a.ops.nms"
    assert absolute(".", "a.b", True) == "a.b"
    project = SourceIndex(package.values())
    resolved = project.resolve("cross_pkg.layers.Gate")
    assert resolved is not None and resolved.cls is not None and resolved.cls.name == "Gate"
    assert project.resolve("cross_pkg.layers.missing") is None
    assert project.resolve("torch.nn.Module") is None


# --------------------------------------------------------------------------- reach


@pytest.mark.parametrize("scope", [Scope.COMPILED, Scope.AUTO])
def test_helpers_in_other_files_are_reached(package, scope):
    found = _diagnostics(package.values(), Settings(scope=scope))
    # Gate.pick is a method of a plain class: only Net.post (via Base.forward, inherited from
    # another file) calls it, with the tensor forward receives
    assert (_line(package["layers"], "if scores.max()"), "DYN101") in _flagged(found, package["layers"])
    # an alias imported from another file types the parameter, narrowed by `is not None`
    assert (_line(package["model"], "mask.sum().item()"), "DYN102") in _flagged(found, package["model"])


def test_a_file_alone_does_not_see_its_callers(package):
    with open(package["layers"]) as fh:
        alone = check(fh.read(), scope=Scope.COMPILED)
    assert not [d for d in alone if d.code == "DYN101"]


def test_entry_point_patterns_make_roots(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent('''
        import torch

        def train_step(batch, limit):
            if batch.sum() > limit:
                return batch
            return batch * 2
    '''))
    assert not [d for d in _diagnostics([str(path)], Settings(scope=Scope.COMPILED)) if d.code == "DYN101"]
    found = _diagnostics([str(path)], Settings(scope=Scope.COMPILED, entry_points=("*.train_step",)))
    assert [d.line for d in found if d.code == "DYN101"] == [5]


def test_torch_compile_of_an_instance_reaches_its_forward(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "blocks.py").write_text(textwrap.dedent('''
        import torch

        class Scaler:
            def __init__(self, factor):
                self.factor = factor

            def forward(self, x):
                return x * x.max().item()
    '''))
    (pkg / "main.py").write_text(textwrap.dedent('''
        import torch
        from proj.blocks import Scaler

        def main():
            model = Scaler(2)
            fast = torch.compile(model.forward)
            return fast
    '''))
    found = _diagnostics([str(pkg / "blocks.py"), str(pkg / "main.py")], Settings(scope=Scope.COMPILED))
    assert [(os.path.basename(d.path), d.line, d.code) for d in found if d.kind == "graph-break"] == [
        ("blocks.py", 9, "DYN102")]


# --------------------------------------------------------------------------- types


def test_containers_of_tensors():
    found = check('''
        import torch
        from torch import nn

        class Loss(nn.Module):
            def forward(self, preds, targets: list[dict[str, torch.Tensor]]):
                for t in targets:
                    if t["boxes"].sum() > 0:
                        preds = preds + 1
                return preds


        class Peak(nn.Module):
            def forward(self, preds):
                by_name = {"a": preds}
                for v in by_name.values():
                    n = v.max().item()
                return preds
    ''')
    assert _breaks(found) == [(7, "DYN101"), (16, "DYN102")]


def test_isinstance_narrowing_and_type_comments():
    found = check('''
        import torch
        from typing import Union

        def f(x: Union[torch.Tensor, float], y):
            # type: (Union[torch.Tensor, float], Tensor) -> Tensor
            if isinstance(x, torch.Tensor):
                if x.sum() > 0:
                    return y
            return y.max().item()
    ''', scope=Scope.ALL)
    assert _breaks(found) == [(7, "DYN101"), (9, "DYN102")]


def test_returned_values_keep_their_declared_type():
    found = check('''
        import torch
        from torch import nn
        from typing import Optional

        def prepare(images, targets) -> tuple[torch.Tensor, Optional[list[dict[str, torch.Tensor]]]]:
            return images, targets

        class Det(nn.Module):
            def forward(self, images, targets: Optional[list[dict[str, torch.Tensor]]] = None):
                images, targets = prepare(images, targets)
                if targets is not None:
                    for t in targets:
                        if t["boxes"].any():
                            raise ValueError("degenerate")
                return images
    ''')
    assert [(d.line, d.code) for d in found if d.kind == "graph-break"] == [(13, "DYN101")]


def test_unknown_values_stay_silent():
    found = check('''
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, extra: dict):
                if extra["flag"]:
                    x = x + 1
                return x
    ''')
    assert not [d for d in found if d.kind == "graph-break"]


# --------------------------------------------------------------------------- cache


@pytest.fixture
def counted(monkeypatch):
    calls: list[str] = []
    real = runner._analyse

    def analyse(source, path, *args):
        calls.append(os.path.basename(path))
        return real(source, path, *args)

    monkeypatch.setattr(runner, "_analyse", analyse)
    return calls


def test_cache_reanalyses_a_changed_file_and_its_dependents(package, tmp_path, counted):
    cache = str(tmp_path / "cache")
    first = _diagnostics(package.values(), cache_dir=cache)
    assert set(counted) == {"layers.py", "model.py", "about.py"}
    counted.clear()
    assert _diagnostics(package.values(), cache_dir=cache) == first
    assert counted == [], "a cached run analyses nothing"

    # layers.py changes: model.py read it (its classes and alias), about.py did not
    with open(package["layers"], "a") as fh:
        fh.write("\n\nLIMIT = 3\n")
    again = _diagnostics(package.values(), cache_dir=cache)
    assert "about.py" not in counted
    assert {"layers.py", "model.py"} <= set(counted)
    assert {(d.line, d.code) for d in again} == {(d.line, d.code) for d in first}

    # model.py no longer calls Gate.pick: layers.py loses that entry, and the break in it
    counted.clear()
    with open(package["model"]) as fh:
        text = fh.read()
    with open(package["model"], "w") as fh:
        fh.write(text.replace("return self.gate.pick(x)", "return x"))
    after = _diagnostics(package.values(), Settings(scope=Scope.COMPILED), cache_dir=cache)
    assert not _flagged(after, package["layers"])
    counted.clear()
    _diagnostics(package.values(), Settings(scope=Scope.COMPILED), cache_dir=cache)
    assert counted == []


# --------------------------------------------------------------------------- aliases of modules not checked

ALIASES = '''
from typing import Optional

from torch import Tensor

OptTensor = Optional[Tensor]
'''

NORM = '''
import torch
from torch import nn

from alias_pkg.typing import OptTensor


class GraphNorm(nn.Module):
    def forward(self, x, batch: OptTensor = None, batch_size=None):
        if batch is None:
            batch = x.new_zeros(x.size(0), dtype=torch.long)
            batch_size = 1
        if batch_size is None:
            batch_size = int(batch.max()) + 1
        return x * batch_size
'''


@pytest.fixture
def alias_package(tmp_path):
    pkg = tmp_path / "src" / "alias_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "typing.py").write_text(ALIASES.lstrip())
    (pkg / "norm.py").write_text(NORM.lstrip())
    return {name: str(pkg / f"{name}.py") for name in ("typing", "norm")}


def test_an_alias_of_a_module_not_checked_types_the_parameter(alias_package, tmp_path):
    """Checked alone, ``norm.py`` still reads what ``OptTensor`` promises from the package's module that
    binds it (not checked itself): ``batch`` is a tensor on both paths, so ``int(batch.max())`` breaks.
    Unknown, the join with ``new_zeros`` on the other path would be unknown and the line silent."""
    norm = alias_package["norm"]
    cache = str(tmp_path / "cache")
    found = _diagnostics([norm], Settings(scope=Scope.COMPILED), cache_dir=cache)
    assert _flagged(found, norm) == {(_line(norm, "int(batch.max())"), "DYN102")}
    # the cached entry depends on the module the alias came from
    with open(alias_package["typing"], "w") as fh:
        fh.write(ALIASES.lstrip().replace("Optional[Tensor]", "Optional[int]"))
    assert not _flagged(_diagnostics([norm], Settings(scope=Scope.COMPILED), cache_dir=cache), norm)


@requires_torch
def test_the_alias_of_a_module_not_checked_matches_dynamo(alias_package):
    import torch

    from dynalint.verify.probe import observe

    norm = alias_package["norm"]
    found = _diagnostics([norm], Settings(scope=Scope.COMPILED))
    src = os.path.dirname(os.path.dirname(norm))
    sys.path.insert(0, src)
    try:
        from alias_pkg.norm import GraphNorm

        layer = GraphNorm()
        obs = observe(lambda x, b: layer(x, b), [(torch.rand(4, 3), torch.tensor([0, 0, 1, 1]))],
                      files_of_interest=[norm])
        assert not obs.errors, obs.errors
        assert {line for line, _ in _flagged(found, norm)} == obs.break_lines(norm)
    finally:
        sys.path.remove(src)
        for name in [m for m in sys.modules if m.startswith("alias_pkg")]:
            del sys.modules[name]


def test_a_tensor_of_a_python_number_stays_one_across_files(tmp_path):
    """``torch.tensor(n)`` passed to a helper of another file indexes there without reading data, as it does
    where it is made (Dynamo's fake tensor keeps its value; measured on torch 2.13: no break)."""
    pkg = tmp_path / "lifted_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("import torch\n\n\ndef pick(boxes: torch.Tensor, k):\n    return boxes[k] * 2\n")
    (pkg / "main.py").write_text(textwrap.dedent("""
        import torch

        from lifted_pkg.helpers import pick


        @torch.compile(backend="eager")
        def step(boxes: torch.Tensor, n: int):
            return pick(boxes, torch.tensor(n))
    """).lstrip())
    paths = [str(pkg / "helpers.py"), str(pkg / "main.py")]
    assert _breaks(_diagnostics(paths, Settings(scope=Scope.COMPILED))) == []
    # an index from data is reported there
    with open(paths[1], "a") as fh:
        fh.write("\n\n@torch.compile(backend=\"eager\")\ndef pick_max(boxes: torch.Tensor):\n"
                 "    return pick(boxes, boxes.sum(1).argmax())\n")
    assert _breaks(_diagnostics(paths, Settings(scope=Scope.COMPILED))) == [(5, "DYN102")]


# --------------------------------------------------------------------------- real Dynamo


@requires_torch
def test_cross_file_predictions_match_dynamo(package):
    import torch

    from dynalint.verify.probe import observe

    found = _diagnostics(package.values(), Settings(scope=Scope.COMPILED))
    src = os.path.dirname(os.path.dirname(package["model"]))
    sys.path.insert(0, src)
    try:
        from cross_pkg.model import Masked, Net

        x = torch.rand(4)
        net = Net()
        obs = observe(lambda t: net(t), [(x,)], files_of_interest=list(package.values()))
        assert not obs.errors, obs.errors
        assert {line for line, _ in _flagged(found, package["layers"])} == obs.break_lines(package["layers"])
        masked = Masked()
        obs = observe(lambda t, m: masked(t, m), [(x, x > 0.5)], files_of_interest=list(package.values()))
        assert not obs.errors, obs.errors
        assert {line for line, _ in _flagged(found, package["model"])} == obs.break_lines(package["model"])
    finally:
        sys.path.remove(src)
        for name in [m for m in sys.modules if m.startswith("cross_pkg")]:
            del sys.modules[name]


def test_properties_and_attributes_set_in_other_methods():
    found = check('''
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(3))

            @property
            def scale(self):
                return self.weight.abs()

            def reset(self):
                self.cache = torch.zeros(3)

            def forward(self, x):
                if self.scale.sum() > 0:
                    x = x + 1
                return x * self.cache.max().item()
    ''')
    assert _breaks(found) == [(17, "DYN101"), (19, "DYN102")]


def test_calls_too_deep_to_analyse_keep_their_qualified_name(tmp_path):
    """A logger made by a helper of another checked file is still a logger where the analysis
    does not follow the helper (module-level code is evaluated without entering calls)."""
    pkg = tmp_path / "logpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "log.py").write_text(textwrap.dedent('''
        import logging

        def get_logger(name):
            return logging.getLogger(name)
    '''))
    (pkg / "model.py").write_text(textwrap.dedent('''
        import torch
        from . import log

        logger = log.get_logger(__name__)

        @torch.compile
        def f(x):
            logger.warning("step")
            return x + 1
    '''))
    found = _diagnostics([str(pkg / "log.py"), str(pkg / "model.py")])
    assert [(os.path.basename(d.path), d.line) for d in found if d.kind == "graph-break"] == [("model.py", 9)]


def test_capture_state_helpers_of_another_file_fold_to_constants(tmp_path):
    """A helper of another file answering ``is_compiling()`` (with a fallback for a missing torch)
    is true under compile: the code it guards away is never traced (measured: no break)."""
    pkg = tmp_path / "state_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(textwrap.dedent('''
        import torch

        def compiling() -> bool:
            try:
                import torch
                return torch.compiler.is_compiling()
            except Exception:
                return False

        def exporting() -> bool:
            try:
                import torch
                return torch.compiler.is_exporting()
            except Exception:
                return False

        def capturing(tensor=None) -> bool:
            captured = compiling() or torch.jit.is_tracing()
            if tensor is not None:
                captured |= isinstance(tensor, torch.fx.Proxy)
            return captured
    '''))
    model = pkg / "model.py"
    model.write_text(textwrap.dedent('''
        import torch
        from .state import capturing, exporting

        def can_skip(mask, n: int) -> bool:
            if exporting() or (mask is not None and capturing(mask)):
                return False
            if n == 1 and (mask is None or mask.all()):
                return True
            return False

        @torch.compile
        def scale(x, mask):
            if can_skip(mask, x.shape[0]):
                return x
            return x * 2
    '''))
    paths = [str(pkg / "__init__.py"), str(pkg / "state.py"), str(model)]
    assert _breaks(_diagnostics(paths)) == []
    # the same guard with a helper that is not known to be true leaves `mask.all()` reachable
    model.write_text(model.read_text().replace("capturing(mask)", "bool(n)"))
    assert _breaks(_diagnostics(paths)) == [(_line(str(model), "mask.all()"), "DYN101")]


CARRIED_HELPERS = '''
import torch


def pad(h, n):
    return h.new_zeros(n, h.shape[1])


def span(h, pair):
    return h.reshape(-1).narrow(0, 0, pair[1])


def rows(h, parts):
    return h.new_zeros(parts["n"], 2)


def grow(h, n):
    return h.new_zeros(n, 2)
'''

CARRIED_MODEL = '''
import torch
from .helpers import grow, pad, rows, span


def blocks(h, count: torch.Tensor):
    folded = pad(h, torch.div(h.shape[1], 4, rounding_mode="trunc"))
    kept = rows(h, {"h": h * 2, "n": count})
    return folded, kept, span(h, [h, count]), grow(h, (h > 0).sum())


compiled = torch.compile(blocks)
'''


@requires_torch
def test_sizes_handed_to_another_file_keep_their_provenance(tmp_path):
    """A 0-d tensor argument of the compiled function, or a torch function of sizes, is a size
    Dynamo reads without a break also in a helper of another file (passed as it is, in a list or in a
    dict);
    one computed from tensor data in the graph breaks there (measured on torch 2.13)."""
    import torch

    from dynalint.verify.probe import observe

    pkg = tmp_path / "carried_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(CARRIED_HELPERS.lstrip())
    (pkg / "model.py").write_text(CARRIED_MODEL.lstrip())
    paths = [str(pkg / f"{name}.py") for name in ("helpers", "model")]
    found = _diagnostics(paths)
    assert _flagged(found, paths[0]) == {(_line(paths[0], "new_zeros(n, 2)"), "DYN102")}
    assert _flagged(found, paths[1]) == set()
    sys.path.insert(0, str(tmp_path))
    try:
        from carried_pkg.model import blocks

        inputs = [(torch.randn(4, 8), torch.tensor(2)), (torch.randn(4, 8), torch.tensor(3))]
        obs = observe(blocks, inputs, files_of_interest=paths)
        assert not obs.errors, obs.errors
        assert obs.break_lines(paths[0]) == {line for line, _ in _flagged(found, paths[0])}
        assert obs.break_lines(paths[1]) == set()
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("carried_pkg")]:
            del sys.modules[name]


def test_values_handed_to_another_file_keep_what_decides_a_break():
    """What an outgoing entry carries: a tensor's provenance (an input, folded from sizes, 0-d) and a
    dict's keys with their values; joining two callers keeps only what both pass."""
    from dynalint.analysis.project import decode_value, encode_value, join_encoded
    from dynalint.analysis.values import mapping, python, tensor

    arg = tensor(entered=True, zero_dim=True)
    folded = tensor(constant=True, zero_dim=True)
    table = mapping(tensor(), {"h": tensor(), "n": folded})
    project = SourceIndex([])
    for v in (arg, folded, tensor(assumed=True, maybe_none=True)):
        assert decode_value(encode_value(v), project) == v
    back = decode_value(encode_value(table), project)
    assert back.entry("n") == folded and back.entry("h") == tensor()
    joined = decode_value(join_encoded(encode_value(arg), encode_value(folded)), project)
    assert joined.is_tensor and not joined.entered and not joined.constant and joined.zero_dim
    assert decode_value(join_encoded(encode_value(table), encode_value(mapping(python(1), {"k": python(1)}))),
                        project).keys is None


def _pass_in_a_child(tmp_path, text: str, copies: int, script: str) -> list[str]:
    """What ``script`` prints (split on whitespace), run in a process of its own with the paths of ``copies``
    files holding ``text`` as its arguments: what a garbage collection finds after a pass is then the pass's
    alone, not what earlier tests of this process left."""
    import subprocess

    paths = []
    for k in range(copies):
        p = tmp_path / f"m{k}.py"
        p.write_text(text)
        paths.append(str(p))
    done = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_the_project_pass_leaves_its_trees_to_reference_counting(tmp_path) -> None:
    """An analysis frees its tree and index as it ends (no cycle through the program, its run, the
    break classification, or an index no other file reads): a garbage collection after the pass finds
    a few objects per file, not the trees (thousands of nodes each).  Measured in a process of its own:
    entries that earlier analyses in the same process left in the caches of recent modules are dropped
    during a later pass, and are not that pass's trees."""
    with open(os.path.join(os.path.dirname(__file__), "..", "examples", "model.py"), encoding="utf-8") as fh:
        text = fh.read()
    script = textwrap.dedent("""
        import gc, sys
        from dynalint.config.settings import Settings
        from dynalint.engine.runner import check_files
        paths = sys.argv[1:]
        list(check_files(paths, Settings(), cache_dir=None))  # the caches of recent modules filled
        gc.collect()
        gc.disable()
        results = list(check_files(paths, Settings(), cache_dir=None))
        left = gc.collect()
        print(all(r.diagnostics for r in results), left)
    """)
    found, left = _pass_in_a_child(tmp_path, text, 4, script)
    assert found == "True"
    nodes = text.count("\n") * 10  # a tree has tens of nodes per line
    assert int(left) < nodes, (left, nodes)


def test_the_project_pass_leaves_no_analysis_to_a_collection(tmp_path) -> None:
    """What an analysis made (its programs, their parts, events and values) goes as the analysis ends:
    a garbage collection after the pass finds none of it.  A script's calls of what it compiles are
    searched, and the memo of that search holds the calls with the program they were found in: the
    program held itself (about 15,000 objects per file of transformers left to a collection)."""
    text = textwrap.dedent("""
        import torch


        def best(boxes, scores):
            j = scores.argmax()
            return boxes[j]


        def main():
            return torch.compile(best)(torch.rand(5, 4), torch.rand(5))
    """)
    script = textwrap.dedent("""
        import gc, sys
        from dynalint.config.settings import Settings
        from dynalint.engine.runner import check_files
        list(check_files(sys.argv[1:], Settings(), cache_dir=None))  # the caches of recent modules filled
        gc.collect()
        gc.disable()
        results = list(check_files(sys.argv[1:], Settings(), cache_dir=None))
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        made = {type(o).__module__.split(".")[1] for o in gc.garbage
                if type(o).__module__.startswith("dynalint.analysis.")}
        print(all(r.diagnostics for r in results), ",".join(sorted(made)) or "-")
    """)
    assert _pass_in_a_child(tmp_path, text, 3, script) == ["True", "-"]


def test_a_nested_function_leaves_no_cycle_behind(tmp_path) -> None:
    """A function defined inside analysed code keeps the names around its definition (its closure),
    and they name it in turn: the pass lets go of the closures as each analysis ends, so a garbage
    collection after it finds nothing of the nested functions' trees (hundreds of nodes each).  More
    files than the callers search keeps the trees of, so that the trees are not alive anyway."""
    from dynalint.analysis.number_callers import KEEP_MODULES

    body = "\n".join(f"        y = y * {k} + {k}" for k in range(40))
    text = f"import torch\n\n\n@torch.compile\ndef step(x):\n    def inner(y):\n{body}\n        return y\n\n" \
        "    return inner(x).sum().item()\n"
    script = textwrap.dedent("""
        import gc, sys
        from dynalint.config.settings import Settings
        from dynalint.engine.runner import check_files
        gc.collect()
        gc.disable()
        results = list(check_files(sys.argv[1:], Settings(), cache_dir=None))
        print(all(r.diagnostics for r in results), gc.collect())
    """)
    copies = KEEP_MODULES + 4
    found, left = _pass_in_a_child(tmp_path, text, copies, script)
    assert found == "True"  # the `.item()` in each compiled function
    assert int(left) < 10 * copies, left
