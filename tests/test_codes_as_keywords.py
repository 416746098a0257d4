"""``pytest -k DYN102`` finds the tests of a rule and of the fixers that serve it, wherever they live: the
collection hook of ``conftest.py`` gives each test the codes of the fixers and rules it is about."""
from __future__ import annotations

import pathlib
from types import SimpleNamespace

from conftest import codes_under_test
from dynalint.fixers.eager_callee import EagerCallee
from dynalint.fixers.support.base import all_fixers


def _item(path: str, params: dict[str, object] | None = None, test: str = "test_it") -> SimpleNamespace:
    """A collected test as the hook sees it: its file, its parameters and its name."""
    callspec = SimpleNamespace(params=params) if params else None
    return SimpleNamespace(path=pathlib.Path(path), name=test, originalname=test, callspec=callspec)


def test_a_case_that_names_its_fixer_answers_to_the_fixers_codes() -> None:
    case = SimpleNamespace(name="example-eager-callee-0", fixer="eager-callee")
    item = _item("tests/differential/test_differential.py", {"case": case})
    assert codes_under_test(item) == set(EagerCallee.codes)


def test_a_fixer_named_by_a_parameter_or_a_variant_of_it() -> None:
    fixer = next(f for f in all_fixers() if f.name == "async-assert")
    assert codes_under_test(_item("tests/test_properties.py", {"name": "async-assert"})) == set(fixer.codes)
    assert codes_under_test(_item("tests/test_fix_line_ends.py", {"name": "async-assert:assert"})) == set(fixer.codes)
    assert codes_under_test(_item("tests/test_fixer_examples.py", {"fixer": fixer})) == set(fixer.codes)


def test_a_rule_module_and_a_fixer_module_answer_to_their_codes() -> None:
    assert codes_under_test(_item("tests/test_grad_mode_varies.py")) == {"DYN208"}
    assert codes_under_test(_item("tests/test_fixer_eager_callee.py")) == set(EagerCallee.codes)


def test_parameters_that_name_no_fixer_nor_rule_add_nothing() -> None:
    flags = {"capture_scalar_outputs": True}
    assert codes_under_test(_item("tests/test_data_dependent_ops_table.py", {"settings": flags})) == set()
    assert codes_under_test(_item("tests/test_cli.py", {"args": ["--select", "DYN1"]})) == set()
