"""The table of codes the configuration validates against is the rules' registry, code for code."""
from __future__ import annotations

import subprocess
import sys

import pytest

from dynalint.config.codes import CODES, OPT_IN_CODES, selects_any
from dynalint.config.resolver import ConfigError, parse_options
from dynalint.rules.base import all_codes
from dynalint.config.settings import Settings


def test_the_table_is_the_registry():
    assert [(c.code, c.name) for c in CODES] == [(r.code, r.name) for r in all_codes()]


def test_an_opt_in_code_is_selected_by_its_full_code_only():
    assert OPT_IN_CODES == {"DYN003"}
    assert not Settings(select=("DYN",)).enabled("DYN003")
    assert not Settings(select=("DYN0",)).enabled("DYN003")
    assert Settings(select=("DYN0", "DYN003")).enabled("DYN003")
    assert Settings(select=("DYN",)).enabled("DYN000")


@pytest.mark.parametrize("prefix", ["DYN", "DYN1", "DYN20", "DYN206"])
def test_every_prefix_of_a_code_selects_something(prefix):
    assert selects_any(prefix)
    assert parse_options({"select": [prefix]}, "here")["select"] == (prefix,)


@pytest.mark.parametrize("bad", ["DYN209", "DYN3", "DYN1000"])
def test_a_code_not_in_the_table_is_an_error(bad):
    with pytest.raises(ConfigError, match=f"unknown rule code '{bad}'"):
        parse_options({"ignore": [bad]}, "here")


def test_reading_settings_does_not_load_the_rules():
    code = ("import sys; from dynalint.config.resolver import parse_options; parse_options({'select': ['DYN1']}, 'x'); "
            "print(sorted(m for m in sys.modules if m.startswith('dynalint.rules') or m.split('.')[0] == 'libcst'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
