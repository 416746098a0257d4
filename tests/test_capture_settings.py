"""``check`` reads the capture flags the checked code turns on itself: a break that
``torch._dynamo.config.capture_scalar_outputs`` / ``capture_dynamic_output_shape_ops`` removes is not
reported for compiled code those flags provably cover (a top-level assignment, one before the compile
call in the same block, a ``torch._dynamo.config.patch`` wrapped around the compile call or next to
``@torch.compile``), and still is where they do not (a patch around the compile call only, ``options=``,
a flag turned off again, a function another compile call reaches without it).  Checked as text, and the
same sources through real Dynamo."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from helpers import check
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source
from dynalint.engine.pipeline import check_source

BREAKING = ("DYN102", "DYN104")

F = """
def f(x):
    n = x.sum().item()
    return torch.full((2,), n) + x[:2]
"""
ITEM = "n = x.sum().item()"

#: name -> (source, whether the `.item()` of `f` still breaks); each source calls the compiled `f` in `main`
CASES = {
    "no flag": (f"import torch\n{F}\nc = torch.compile(f, backend='eager')\n\ndef main(x):\n    return c(x)\n", True),
    "top-level assignment": (
        f"import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n{F}\n"
        "c = torch.compile(f, backend='eager')\n\ndef main(x):\n    return c(x)\n", False),
    "assignment after the compile, before any call": (
        f"import torch\n{F}\nc = torch.compile(f, backend='eager')\n"
        "torch._dynamo.config.capture_scalar_outputs = True\n\ndef main(x):\n    return c(x)\n", False),
    "aliased config module": (
        f"import torch\nfrom torch._dynamo import config as dynamo_config\n\n"
        f"dynamo_config.capture_scalar_outputs = True\n{F}\n"
        "c = torch.compile(f, backend='eager')\n\ndef main(x):\n    return c(x)\n", False),
    "turned off again": (
        f"import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n{F}\n"
        "c = torch.compile(f, backend='eager')\ntorch._dynamo.config.capture_scalar_outputs = False\n\n"
        "def main(x):\n    return c(x)\n", True),
    "assignment before the compile in main": (
        f"import torch\n{F}\ndef main(x):\n    torch._dynamo.config.capture_scalar_outputs = True\n"
        "    c = torch.compile(f, backend='eager')\n    return c(x)\n", False),
    "patch wrapped around the compile call": (
        f"import torch\n{F}\n"
        "c = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(f, backend='eager'))\n\n"
        "def main(x):\n    return c(x)\n", False),
    "patch of the other flag": (
        f"import torch\n{F}\n"
        "c = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(torch.compile(f, backend='eager'))\n\n"
        "def main(x):\n    return c(x)\n", True),
    "patch around the compile call only": (
        f"import torch\n{F}\nwith torch._dynamo.config.patch(capture_scalar_outputs=True):\n"
        "    c = torch.compile(f, backend='eager')\n\ndef main(x):\n    return c(x)\n", True),
    "options of torch.compile": (
        f"import torch\n{F}\nc = torch.compile(f, backend='eager', options={{'capture_scalar_outputs': True}})\n\n"
        "def main(x):\n    return c(x)\n", True),
    "patch decorator on the function that calls it": (
        f"import torch\n{F}\nc = torch.compile(f, backend='eager')\n\n"
        "@torch._dynamo.config.patch(capture_scalar_outputs=True)\ndef main(x):\n    return c(x)\n", False),
    "with patch around the calls": (
        f"import torch\n{F}\ndef main(x):\n    c = torch.compile(f, backend='eager')\n"
        "    with torch._dynamo.config.patch(capture_scalar_outputs=True):\n        return c(x)\n", False),
    "patch decorator above @torch.compile": (
        "import torch\n\n@torch._dynamo.config.patch('capture_scalar_outputs', True)\n"
        f"@torch.compile(backend='eager'){F}\ndef main(x):\n    return f(x)\n", False),
    "patch decorator below @torch.compile": (
        "import torch\n\n@torch.compile(backend='eager')\n"
        f"@torch._dynamo.config.patch({{'capture_scalar_outputs': True}}){F}\ndef main(x):\n    return f(x)\n", False),
}


def item_line(source: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if ITEM in line)


def reported(source: str, **settings) -> set[int]:
    return {d.line for d in check_source(source, "train.py", Settings(**settings)) if d.code in BREAKING}


@pytest.mark.parametrize("name", CASES)
def test_check_reads_the_flags_the_code_sets(name):
    source, breaks = CASES[name]
    assert reported(source) == ({item_line(source)} if breaks else set())


def test_the_flag_covers_only_the_compile_call_it_wraps():
    code = """\
        import torch

        def f(x):
            n = x.sum().item()
            return torch.full((2,), n) + x[:2]

        def g(x):
            n = x.sum().item()
            return torch.full((2,), n) - x[:2]

        def shared(x):
            return torch.nonzero(x).sum()

        def h(x):
            return shared(x) + 1

        def k(x):
            return shared(x) - 1

        cf = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(f))
        cg = torch.compile(g)
        ch = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(torch.compile(h))
        ck = torch.compile(k)
        """
    # g compiled without the flag; `shared` reached by ck without it too
    assert [(d.code, d.line) for d in check(code) if d.code in BREAKING] == [("DYN102", 8), ("DYN104", 12)]
    assert not [d for d in check(code.replace("ck = torch.compile(k)", "")) if d.code == "DYN104"]


@pytest.mark.parametrize("elsewhere", [
    "def warm(x):\n    return c(x)\n",  # a call outside the patch
    "models = [c]\n",  # the compiled object escapes
    "c = torch.compile(f)\n",  # bound again
    "def later(x):\n    with torch._dynamo.config.patch(capture_scalar_outputs=True):\n        return (lambda: c(x))\n",
])
def test_a_patch_around_the_calls_covers_only_when_every_use_is_such_a_call(elsewhere):
    source = (f"import torch\n{F}\nc = torch.compile(f)\n\n"
              "@torch._dynamo.config.patch(capture_scalar_outputs=True)\ndef main(x):\n    return c(x)\n")
    assert reported(source) == set()
    assert reported(source + "\n" + elsewhere) == {item_line(source)}


def test_functions_a_covered_module_calls_are_covered():
    code = """\
        import torch

        def helper(x):
            n = x.sum().item()
            return torch.full((2,), n)

        class Net(torch.nn.Module):
            def forward(self, x):
                return helper(x) + torch.nonzero(x).sum()

        model = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Net()))
        """
    assert [(d.code, d.line) for d in check(code) if d.code in BREAKING] == [("DYN104", 9)]


def test_a_top_level_assignment_after_a_call_of_compiled_code_covers_only_what_follows_it():
    code = """\
        import torch

        def f(x):
            n = x.sum().item()
            return torch.full((2,), n) + x[:2]

        c = torch.compile(f)
        c(torch.ones(3))
        torch._dynamo.config.capture_scalar_outputs = True

        def g(x):
            n = x.sum().item()
            return torch.full((2,), n) - x[:2]

        d = torch.compile(g)
        """
    # `c` may have been traced before the flag was on; `d` is compiled after it
    assert [d.line for d in check(code) if d.code in BREAKING] == [4]


def test_a_branch_on_the_captured_value_still_breaks():
    code = """\
        import torch

        torch._dynamo.config.capture_scalar_outputs = True

        @torch.compile
        def f(x):
            n = x.sum().item()
            if n > 0:
                return x * n
            return x
        """
    assert [(d.code, d.line) for d in check(code) if d.code.startswith("DYN1")] == [("DYN101", 8)]


def test_after_the_unsafe_capture_fix_check_reports_nothing_it_removed():
    code = textwrap.dedent("""\
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 2)

            def forward(self, x):
                n = x.sum().item()
                keep = torch.nonzero(x).sum()
                return self.lin(x) + torch.full((2,), n) + keep

        def main(xs):
            model = torch.compile(Net(), backend="eager")
            return [model(x) for x in xs]
        """)
    assert {d.code for d in check_source(code, "train.py", Settings())} >= {"DYN102", "DYN104"}
    fixed = fix_source(code, "train.py", Settings(), unsafe=True)
    assert "capture-flags" in {a.fixer for a in fixed.applied}
    assert "capture_scalar_outputs=True" in fixed.source and "capture_dynamic_output_shape_ops=True" in fixed.source
    assert not [d for d in check_source(fixed.source, "train.py", Settings()) if d.code in BREAKING]


@requires_torch
def test_dynamo_breaks_where_check_reports(tmp_path):
    """The same sources run: Dynamo breaks at the `.item()` exactly where check reports it."""
    import torch

    from dynalint.verify.probe import dynamo_config, load_module_from_source, observe

    for i, (name, (source, _)) in enumerate(CASES.items()):
        directory = tmp_path / str(i)
        directory.mkdir()
        # the module's own assignments change the global flags: restored after each case
        with dynamo_config(capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False):
            module = load_module_from_source(source, directory=str(directory))
            seen = observe(module.main, [(torch.arange(4.0),)], compile=False)
        assert not seen.errors, name
        assert seen.break_lines(module.__file__) == reported(source), name


TOLIST = """\
import torch

@torch.compile(backend="eager")
def f(x: torch.Tensor, scales: torch.Tensor):
    s1, s2 = scales.tolist()
    return x * s1 + s2
"""


def test_tolist_is_not_claimed_for_the_flag():
    """The dtype is not known, and a floating tensor's `.tolist()` breaks under the flag too."""
    found = [d for d in check_source(TOLIST, "train.py", Settings()) if d.code == "DYN102"]
    assert [(d.line, d.remedy) for d in found] == [(5, None)]


@requires_torch
def test_dynamo_a_floating_tolist_breaks_under_the_flag(tmp_path):
    import torch

    from dynalint.verify.probe import dynamo_config, load_module_from_source, observe

    module = load_module_from_source(TOLIST, directory=str(tmp_path))
    with dynamo_config(capture_scalar_outputs=True):
        seen = observe(module.f, [(torch.randn(4), torch.tensor([2.0, 0.5]))], compile=False)
    assert not seen.errors and seen.break_lines(module.__file__) == {5}
