"""Every face of a setting comes from the option table: the configuration file, the command line of
each command that takes it, ``--show-settings``, the README's lists and the rules' "Options"."""
from __future__ import annotations

import dataclasses
import os
import sys

import pytest

from helpers import run, write

from dynalint.adapters import option_docs
from dynalint.adapters.cli import build_parser
from dynalint.config.resolver import ConfigError, resolve, resolve_args
from dynalint.config.options import BY_KEY, OPTIONS, SETTINGS_COMMANDS, Option, dynamo_config
from dynalint.rules.base import all_codes
from dynalint.config.settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: A value that differs from the default, for each key (as TOML), so that each is seen to take effect.
VALUES = {
    "select": '["DYN1", "DYN201"]',
    "ignore": '["DYN105"]',
    "extend-select": '["DYN003"]',
    "extend-ignore": '["DYN2"]',
    "per-file-ignores": '{"tests/*" = ["DYN1"]}',
    "scope": '"all"',
    "target-torch": '"2.10"',
    "capture-scalar-outputs": "true",
    "capture-dynamic-output-shape-ops": "true",
    "reorderable-logging-functions": '["print", "log.info"]',
    "exclude": '["vendor", "*_pb2.py"]',  # no /: the command line anchors those at the current directory
    "respect-gitignore": "false",
    "entry-points": '["*.train_step"]',
    "max-file-memory": "900",
}
#: A wrong value (as text) for each key a command line can get wrong.
WRONG = {
    "select": "DYN999",
    "ignore": "DYN1O1",
    "extend-select": "XYZ",
    "extend-ignore": "DYN7",
    "scope": "compild",
    "target-torch": "3.1",
    "max-file-memory": "-5",
}


def _subparser(command: str):
    return build_parser()._subparsers._group_actions[0].choices[command]


def _command_line(option: Option, toml: str) -> list[str]:
    """``--key VALUE`` for a TOML value, as typed on the command line."""
    value = tomllib.loads(f"v = {toml}")["v"]
    if option.form == "switch":
        return [f"--{option.key}" if value else f"--no-{option.key}"]
    return [f"--{option.key}", ",".join(value) if isinstance(value, list) else str(value)]


def _configured(tmp_path, text: str) -> Settings:
    write(tmp_path, "pyproject.toml", f"[tool.dynalint]\n{text}\n")
    return resolve([str(tmp_path)], cwd=str(tmp_path)).settings


def test_the_table_is_the_settings():
    assert {o.field for o in OPTIONS if not o.extends} == {f.name for f in dataclasses.fields(Settings)}
    assert set(VALUES) == set(BY_KEY)
    assert all(BY_KEY[o.extends].form == o.form for o in OPTIONS if o.extends)


@pytest.mark.parametrize("key", list(BY_KEY))
def test_every_key_is_read_from_the_configuration_file(tmp_path, key):
    option = BY_KEY[key]
    settings = _configured(tmp_path, f"{key} = {VALUES[key]}")
    assert settings != _configured(tmp_path, "")
    snake = _configured(tmp_path, f"{key.replace('-', '_')} = {VALUES[key]}")
    assert snake == settings
    _configured(tmp_path, f"{key} = {option.example}")  # the documented example is accepted
    assert option.parse(key, tomllib.loads(f"v = {VALUES[key]}")["v"]) is not None


@pytest.mark.parametrize("command", SETTINGS_COMMANDS)
def test_each_command_takes_the_keys_the_table_gives_it(command):
    flags = {s for a in _subparser(command)._actions for s in a.option_strings}
    for option in OPTIONS:
        assert (f"--{option.key}" in flags) == (command in option.commands), (command, option.key)


@pytest.mark.parametrize("key", [o.key for o in OPTIONS if o.commands])
def test_the_command_line_sets_what_the_configuration_file_sets(tmp_path, monkeypatch, key):
    option = BY_KEY[key]
    monkeypatch.chdir(tmp_path)
    from_file = _configured(tmp_path, f"{key} = {VALUES[key]}")
    os.remove(tmp_path / "pyproject.toml")
    for command in option.commands:
        prefix = [command, "a.py::f"] if command == "verify" else [command]
        args = build_parser().parse_args(prefix + _command_line(option, VALUES[key]))
        assert resolve_args(args, [str(tmp_path)]).settings == from_file, command


@pytest.mark.parametrize("key", sorted(WRONG))
def test_a_wrong_value_reads_the_same_in_the_file_and_on_the_command_line(tmp_path, capsys, monkeypatch, key):
    monkeypatch.chdir(tmp_path)
    model = write(tmp_path, "m.py", "x = 1\n")
    code, _, on_line = run(capsys, f"--{key}", WRONG[key], model)
    assert code == 2
    toml = f'"{WRONG[key]}"' if BY_KEY[key].form != "list" else f'["{WRONG[key]}"]'
    write(tmp_path, "pyproject.toml", f"[tool.dynalint]\n{key} = {toml}\n")
    code, _, in_file = run(capsys, model)
    assert code == 2
    assert "command line: " in on_line and "[tool.dynalint]: " in in_file
    assert on_line.split("command line: ", 1)[1] == in_file.split("[tool.dynalint]: ", 1)[1]
    assert on_line.split("command line: ", 1)[1].startswith(f"{key}: ")
    with pytest.raises(ConfigError):
        BY_KEY[key].parse(key, WRONG[key])


def test_show_settings_shows_every_key_with_its_value(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "pyproject.toml", "[tool.dynalint]\n" + "".join(
        f"{k} = {v}\n" for k, v in VALUES.items() if not BY_KEY[k].extends))
    code, out, _ = run(capsys, "--show-settings")
    assert code == 0
    shown = tomllib.loads(out)
    expected = tomllib.loads("".join(f"{k} = {v}\n" for k, v in VALUES.items() if not BY_KEY[k].extends))
    assert shown == expected


def test_the_readme_lists_are_generated_from_the_table():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    assert option_docs.update_readme(readme) == readme, f"run `{option_docs.REGENERATE}`"
    block = readme.split("## Configuration", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    usage = readme.split(option_docs.USAGE_HEAD, 1)[1].split(option_docs.USAGE_END, 1)[0]
    example = tomllib.loads(block)["tool"]["dynalint"]
    assert list(example) == list(BY_KEY)
    for option in OPTIONS:
        assert option.help in " ".join(line.lstrip("# ") for line in block.splitlines())
        assert (f"--{option.key} " in usage or f"--[no-]{option.key}]" in usage) == bool(option.commands)


def test_the_readme_check_reports_a_stale_list(tmp_path, capsys):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    target = tmp_path / "README.md"
    target.write_text(readme.replace("[--entry-points PATTERNS]", ""))
    assert option_docs.main(["--check", str(target)]) == 1
    assert option_docs.REGENERATE in capsys.readouterr().err
    assert option_docs.main([str(target)]) == 0
    assert target.read_text() == readme
    assert option_docs.main(["--check", str(target)]) == 0


def test_the_rules_options_name_keys_of_the_table():
    named = {key for rule in all_codes() for key in rule.options}
    assert named and named <= set(BY_KEY)


def test_the_dynamo_mirrors_are_what_verify_sets():
    settings = Settings(capture_scalar_outputs=True)
    assert dynamo_config(settings) == {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": False}
    assert dynamo_config(Settings(reorderable_logging_functions=("print",)))["reorderable_logging_functions"] \
        == ["print"]


def test_a_mistyped_key_or_choice_gets_a_suggestion(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown option 'selct' \(known: .*\); did you mean 'select'\?"):
        _configured(tmp_path, 'selct = ["DYN1"]')
    with pytest.raises(ConfigError) as exc:
        _configured(tmp_path, 'zzzz = ["DYN1"]')
    assert "did you mean" not in str(exc.value)
    with pytest.raises(ConfigError, match=r"scope: expected one of .*, got 'compild'; did you mean 'compiled'\?"):
        _configured(tmp_path, 'scope = "compild"')


def test_the_rules_examples_set_keys_of_the_table():
    fields = {o.field for o in OPTIONS}
    used = {key for rule in all_codes() for example in rule.VALID + rule.INVALID for key in example.settings}
    assert used and used <= fields
