"""skip-logging-while-compiling in modules that import no torch: ``--scope all`` reports the calls of a
command-line module that prints, but nothing there is compiled code, so the fixer refuses rather than
add an ``import torch`` to guard them; a module that imports torch in any form is rewritten as before."""
from __future__ import annotations

import textwrap

import pytest

from dynalint.analysis.program import Scope
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

CLI = textwrap.dedent("""
    import argparse
    import logging
    {imports}
    logger = logging.getLogger(__name__)


    def main(argv=None):
        {local}parser = argparse.ArgumentParser()
        parser.add_argument("--n", type=int, default=3)
        args = parser.parse_args(argv)
        logger.info("running with %d", args.n)
        print("n =", args.n)
        return args.n
""")


def _fix(imports: str = "", local: str = ""):
    source = CLI.format(imports=imports, local=local)
    return source, fix_source(source, "cli.py", Settings(scope=Scope.ALL), unsafe=True)


def test_a_module_without_torch_is_refused_and_left_as_it_is():
    source, result = _fix()
    assert result.source == source and "import torch" not in result.source
    reasons = [r.reason for r in result.refused if r.fixer == "skip-logging-while-compiling"]
    assert len(reasons) == 2 and all(r.startswith("the module does not import torch") for r in reasons), \
        result.refused


@pytest.mark.parametrize("imports, local", [
    ("import torch\n", ""),
    ("from torch import nn\n", ""),
    ("import torch.nn as nn\n", ""),
    ("", "import torch\n    "),  # a function that imports torch before the calls
])
def test_a_module_that_imports_torch_in_any_form_is_guarded(imports, local):
    _, result = _fix(imports, local)
    assert [a.fixer for a in result.applied] == ["skip-logging-while-compiling"] * 2, result.refused
    assert result.source.count("if not torch.compiler.is_compiling():") == 2
