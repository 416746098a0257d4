"""Input that must never kill a run: deep nesting, long chains, odd configuration files, odd file
names, outputs that cannot be written, files that are no regular files, form feeds.

Process-level failures (a crashed native parser, a traceback) are observed through a real
``dynalint`` process; the rest in process.
"""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import textwrap

import pytest
from helpers import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalint.core import source as source_module
from dynalint.analysis.evaluator.conditions import ConditionHandlers
from dynalint.engine.pipeline import check_source
from dynalint.engine.runner import check_files
from dynalint.engine.fixing import diagnostics_with_fixes
from dynalint.config.settings import default_settings

DYNALINT = os.path.join(os.path.dirname(sys.executable), "dynalint")
OK = "import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n"
"""A file with one finding (DYN105 on line 6): it must be reported whatever the other files are."""


def dynalint(*args: str, cwd: str, timeout: float = 240, **kwargs) -> subprocess.CompletedProcess:
    command = [DYNALINT, "check", "--no-cache", *args]
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run(command, cwd=cwd, timeout=timeout, **streams)


def assert_clean_exit(proc: subprocess.CompletedProcess, allowed=(0, 1, 2)) -> None:
    assert proc.returncode in allowed, (proc.returncode, proc.stderr[-2000:])
    assert b"Traceback" not in proc.stderr, proc.stderr[-2000:]


NESTED = {
    "parentheses": lambda n: "x = " + "(" * n + "1" + ")" * n + "\n",
    "brackets": lambda n: "x = " + "[" * n + "1" + "]" * n + "\n",
    "calls": lambda n: "x = " + "f(" * n + "1" + ")" * n + "\n",
    "dicts": lambda n: "x = " + "{1: " * n + "1" + "}" * n + "\n",
    "lambdas": lambda n: "x = " + "lambda: " * n + "1\n",
    "unary": lambda n: "x = " + "-" * n + "1\n",
}


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_deep_nesting_is_a_syntax_error_and_the_run_goes_on(tmp_path, kind):
    (tmp_path / "deep.py").write_text(NESTED[kind](5000))
    (tmp_path / "ok.py").write_text(OK)
    proc = dynalint("-j1", "deep.py", "ok.py", cwd=str(tmp_path))
    assert_clean_exit(proc, (1,))
    out = proc.stdout.decode()
    assert "ok.py:6:5: DYN105" in out
    assert "deep.py:1:" in out and "DYN000" in out, out


def test_two_hundred_brackets_are_cpythons_limit(tmp_path):
    (tmp_path / "deep.py").write_text(NESTED["parentheses"](201) + "print(1)\n")
    (tmp_path / "fine.py").write_text(NESTED["parentheses"](150) + OK)
    proc = dynalint("-j1", "deep.py", "fine.py", cwd=str(tmp_path))
    assert_clean_exit(proc, (1,))
    out = proc.stdout.decode()
    assert "deep.py:1:" in out and "too many nested parentheses" in out
    assert "fine.py:7:5: DYN105" in out  # 150 levels: analysed as usual


def test_every_face_parses_through_the_guard(tmp_path):
    """The flake8 plugin and the language server's analysis share the engine's parse."""
    code = NESTED["parentheses"](3000)
    script = (
        "from dynalint.adapters.flake8_plugin import DynalintChecker\n"
        "from dynalint.engine.pipeline import analyse\n"
        "from dynalint.config.settings import default_settings\n"
        f"code = {code!r}\n"
        "print(list(DynalintChecker(None, 'deep.py', code.splitlines(True)).run()))\n"
        "print([d.code for d in analyse(code, 'deep.py', default_settings(), record_values=True).diagnostics])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, cwd=str(tmp_path))
    assert_clean_exit(proc, (0,))
    plugin, engine = proc.stdout.decode().splitlines()
    assert "DYN000" in plugin and "too many nested parentheses" in plugin
    assert engine == "['DYN000']"


CHAINS = {
    "plus": "x + " * 500 + "x",
    "and": "x and " * 1000 + "x",
    "not": "not " * 1000 + "x",
    "unary": "-" * 1000 + "x",
    "power": "x ** " * 1000 + "x",
    "ternary": "x if c else " * 1000 + "x",
    "method": "x" + ".abs()" * 1000,
    "subscript": "x" + "[0]" * 1000,
}


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_long_valid_chains_are_checked(kind):
    code = f"import torch\n\n\n@torch.compile\ndef f(x, c):\n    y = {CHAINS[kind]}\n    print(y)\n    return y\n"
    diagnostics = check_source(code, "chain.py", default_settings())
    assert [(d.code, d.line) for d in diagnostics if d.code == "DYN105"] == [("DYN105", 7)]
    assert not any(d.code == "DYN000" for d in diagnostics)


def test_narrowing_of_a_chain_costs_linear_time(monkeypatch):
    calls = []
    original = ConditionHandlers._narrowing

    def counted(self, test):
        calls.append(1)
        return original(self, test)

    monkeypatch.setattr(ConditionHandlers, "_narrowing", counted)

    def cost(n: int) -> int:
        calls.clear()
        check_source(f"import torch\n\n@torch.compile\ndef f(x):\n    return {'x and ' * n}x\n", "c.py",
                     default_settings())
        return len(calls)

    small, large = cost(100), cost(400)
    assert large < 6 * small, (small, large)  # quadratic would be 16x


CONFIGS = {
    "not-utf8": (b"pyproject.toml", b'[tool.dynalint]\nselect = ["DYN1"]\n# \xff\xfe\n', "not UTF-8"),
    "utf16": (b"pyproject.toml", '[tool.dynalint]\nselect = ["DYN1"]\n'.encode("utf-16"), "not UTF-8"),
    "tool-int": (b"pyproject.toml", b"tool = 1\n", "`tool` must be a table"),
    "tool-str": (b"pyproject.toml", b'tool = "x"\n', "`tool` must be a table"),
    "deep-array": (b"pyproject.toml", b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
    "deep-table": (b"pyproject.toml", b"x = " + b"{a=" * 5000 + b"1" + b"}" * 5000 + b"\n", "nested too deeply"),
    "float-version": (b"pyproject.toml", b"[tool.dynalint]\ntarget-torch = 2.10\n", 'e.g. "2.10"'),
    "setup-cfg": (b"setup.cfg", b"[dynalint]\nselect = DYN1\n# \xff\n", "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_unusable_configuration_is_a_message_and_exit_2(tmp_path, capsys, case):
    name, content, message = CONFIGS[case]
    (tmp_path / name.decode()).write_bytes(content)
    (tmp_path / "m.py").write_text(OK)
    code, out, err = run(capsys, str(tmp_path / "m.py"))
    assert code == 2
    assert "configuration error" in err and message in err, err


def test_a_quoted_version_is_read_as_written(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\ntarget-torch = "2.10"\n')
    (tmp_path / "m.py").write_text(OK)
    code, out, err = run(capsys, "--show-settings", str(tmp_path / "m.py"))
    assert code == 0 and 'target-torch = "2.10"' in out


@pytest.fixture
def odd_names(tmp_path):
    tree = tmp_path / "d"
    tree.mkdir()
    for name in (b"\xff\xfe.py", b"new\nline.py"):
        with open(os.path.join(os.fsencode(tree), name), "w") as fh:
            fh.write(OK)
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_odd_file_names_in_every_format(odd_names, fmt):
    proc = dynalint("--format", fmt, "-o", "report", "d", cwd=str(odd_names))
    assert_clean_exit(proc, (1,))
    report = (odd_names / "report").read_bytes()
    assert b"\xff\xfe.py" in report or b"%FF%FE.py" in report or b"\\udcff\\udcfe.py" in report
    if fmt == "sarif":
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                for r in json.loads(report)["runs"][0]["results"]]
        assert sorted(uris) == ["d/%FF%FE.py", "d/new%0Aline.py"]
    proc = dynalint("--format", fmt, "d", cwd=str(odd_names))
    assert_clean_exit(proc, (1,))


def test_an_output_that_cannot_be_written_is_exit_2(odd_names):
    proc = dynalint("-o", "/dev/full", "d", cwd=str(odd_names))
    assert_clean_exit(proc, (2,))
    assert b"cannot write the report to /dev/full: No space left on device" in proc.stderr
    with open("/dev/full", "w") as full:
        proc = dynalint("--format", "sarif", "d", cwd=str(odd_names), stdout=full, stderr=subprocess.PIPE)
    assert_clean_exit(proc, (2,))
    assert b"cannot write the report to standard output" in proc.stderr


def test_the_report_never_replaces_a_checked_file(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(OK)
    os.symlink(model, tmp_path / "alias.py")
    for target in (model, tmp_path / "alias.py"):
        code, out, err = run(capsys, "-o", str(target), str(model))
        assert code == 2 and "is one of the files checked" in err
    assert model.read_text() == OK


def _special_files(directory) -> list[str]:
    os.mkfifo(directory / "pipe.py")
    os.symlink("/dev/zero", directory / "zero.py")
    os.symlink("/dev/null", directory / "null.py")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(directory / "sock.py"))
    return ["pipe.py", "zero.py", "null.py", "sock.py"]


def test_named_files_that_are_not_regular_are_io_errors(tmp_path):
    names = _special_files(tmp_path)
    (tmp_path / "ok.py").write_text(OK)
    proc = dynalint(*names, "ok.py", cwd=str(tmp_path), timeout=60)
    assert_clean_exit(proc, (1,))
    out = proc.stdout.decode()
    for name in names:
        assert f"{name}: DYN001 cannot read:" in out, out
    assert "ok.py:6:5: DYN105" in out
    assert "in 5 files" in proc.stderr.decode()


def test_a_walked_tree_with_a_pipe_and_dev_zero_ends(tmp_path):
    _special_files(tmp_path)
    (tmp_path / "ok.py").write_text(OK)
    proc = dynalint(".", cwd=str(tmp_path), timeout=60)
    assert_clean_exit(proc, (1,))
    assert "ok.py:6:5: DYN105" in proc.stdout.decode()
    assert "zero.py: DYN001" in proc.stdout.decode()


def test_files_over_the_size_limit_are_not_read(tmp_path, monkeypatch):
    path = tmp_path / "big.py"
    path.write_text(OK)
    monkeypatch.setattr(source_module, "MAX_FILE_BYTES", 16)
    [result] = check_files([str(path)], default_settings())
    assert [(d.code, d.message.split(" (")[0]) for d in result.diagnostics] == [("DYN001", "file too large")]
    assert stat.S_ISREG(os.stat(path).st_mode)


def test_form_feed_in_an_indentation(tmp_path):
    code = ("import torch\n\n@torch.compile\ndef f(x):\n\f    if x.sum() > 0:\n        y = 1\n    \fz = 2\n\n\n"
            "@torch.compile\ndef g(x):\n    print(x)\n    return x\n")
    compile(code, "ff.py", "exec")  # valid for CPython
    found = [(d.code, d.line, d.column) for d in check_source(code, "ff.py", default_settings())]
    assert found == [("DYN101", 5, 9), ("DYN105", 12, 5)]
    with_fixes = diagnostics_with_fixes(code, "ff.py", default_settings())
    assert [(d.code, d.line, d.column) for d in with_fixes] == found


# -- generated inputs ---------------------------------------------------------------------------

_OPENERS = {"(": ")", "[": "]", "{": "}", "f(": ")", "{1: ": "}", "lambda: ": "", "not ": "", "-": "",
            "x if c else ": "", "x ** ": "", "x + ": ""}

nesting = st.lists(st.sampled_from(sorted(_OPENERS)), min_size=0, max_size=40).flatmap(
    lambda kinds: st.tuples(st.just(kinds), st.lists(st.integers(1, 400), min_size=len(kinds),
                                                     max_size=len(kinds))))
file_names = st.binary(min_size=1, max_size=12).map(
    lambda b: bytes(c for c in b if c not in b"/\0") or b"n").map(lambda b: b[:40] + b".py")


def _nested_code(kinds: list[str], counts: list[int]) -> str:
    opening = "".join(k * n for k, n in zip(kinds, counts))
    closing = "".join(_OPENERS[k] * n for k, n in reversed(list(zip(kinds, counts))))
    return f"x = {opening}1{closing}\n"


@settings(max_examples=int(os.environ.get("DYNALINT_ROBUST_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(shapes=st.lists(nesting, min_size=1, max_size=4), names=st.lists(file_names, min_size=1, max_size=4,
                                                                         unique=True))
def test_generated_nesting_and_names_never_crash(tmp_path_factory, shapes, names):
    directory = tmp_path_factory.mktemp("gen")
    for i, (kinds, counts) in enumerate(shapes):
        (directory / f"deep{i}.py").write_text(_nested_code(kinds, counts))
    for name in names:
        with open(os.path.join(os.fsencode(directory), b"odd_" + name), "w") as fh:
            fh.write(OK)
    (directory / "ok.py").write_text(OK)
    for fmt in ("text", "sarif"):
        proc = dynalint("--format", fmt, ".", cwd=str(directory))
        assert_clean_exit(proc, (1,))
        assert proc.stdout.count(b"DYN105") == len(names) + 1 or fmt == "sarif"
    assert b"ok.py" in proc.stdout


def test_the_language_server_survives_a_deeply_nested_document(tmp_path):
    pytest.importorskip("pygls")
    import asyncio

    from lsp_client import Editor

    (tmp_path / "deep.py").write_text(NESTED["parentheses"](3000))
    (tmp_path / "ok.py").write_text(OK)

    async def session() -> None:
        editor = Editor(tmp_path)
        try:
            await editor.start()
            deep = editor.open(tmp_path / "deep.py")
            assert [str(d.code) for d in await editor.diagnostics(deep, 1)] == ["DYN000"]
            ok = editor.open(tmp_path / "ok.py")
            assert [str(d.code) for d in await editor.diagnostics(ok, 1)] == ["DYN105"]
            assert await editor.stop() == 0
        finally:
            editor.kill()

    asyncio.run(asyncio.wait_for(session(), 120))


def test_fix_handles_a_long_chain(tmp_path):
    code = f"import torch\n\n\n@torch.compile\ndef f(x, c):\n    y = {CHAINS['and']}\n    print(y)\n    return y\n"
    (tmp_path / "chain.py").write_text(code)
    proc = subprocess.run([DYNALINT, "fix", "--unsafe-fixes", "--diff", "chain.py"], cwd=str(tmp_path),
                          capture_output=True, timeout=240)
    assert_clean_exit(proc, (0, 1))
    assert b"internal error" not in proc.stderr and b"would fix 1 issue in 1 file" in proc.stderr, proc.stderr


def test_endless_standard_input_is_refused(tmp_path):
    with open("/dev/zero", "rb") as zero:
        proc = dynalint("-", cwd=str(tmp_path), timeout=60, stdin=zero)
    assert_clean_exit(proc, (2,))
    assert b"standard input is larger than" in proc.stderr


def test_large_stack_runs_hand_back_results_errors_and_the_recursion_limit(monkeypatch):
    import threading

    limit = sys.getrecursionlimit()
    assert source_module.on_large_stack(sys.getrecursionlimit) >= source_module.RECURSION_LIMIT
    with pytest.raises(KeyError):
        source_module.on_large_stack({}.__getitem__, "x")
    assert sys.getrecursionlimit() == limit

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)  # where such a stack cannot be had
    assert [d.code for d in check_source(OK, "ok.py", default_settings())] == ["DYN105"]
    assert sys.getrecursionlimit() == limit


@pytest.mark.parametrize("text, where", [("x = 1\ny = 2 \0\n", (2, 7)), ('x = 1\ny = "a\0b"\n', (2, 7)),
                                         ("x = 1\r\n\r\0\n", (3, 1))])
def test_a_nul_byte_is_reported_where_it_is(tmp_path, text, where):
    """Python's parser refuses a file with a NUL byte anywhere, strings included, without saying where."""
    path = tmp_path / "nul.py"
    path.write_bytes(text.encode())
    [result] = check_files([str(path)], default_settings())
    [d] = result.diagnostics
    assert (d.code, d.line, d.column) == ("DYN000", *where)
    assert "null bytes" in d.message


@pytest.mark.parametrize("encoding, order", [("utf-16-le", "little-endian, no byte order mark"),
                                             ("utf-16-be", "big-endian, no byte order mark"),
                                             ("utf-16", "little-endian")])
@pytest.mark.parametrize("text", ["x = 1\nprint(x)\n", "# café\nx = 1\n"])
def test_a_utf16_file_is_said_to_be_utf16(tmp_path, encoding, order, text):
    path = tmp_path / "wide.py"
    path.write_bytes(text.encode(encoding))
    [result] = check_files([str(path)], default_settings())
    [d] = result.diagnostics
    assert d.code == "DYN001"
    assert f"looks like UTF-16 ({order})" in d.message and "save it as UTF-8" in d.message


def test_text_with_a_few_nul_bytes_is_no_utf16(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"# " + "é".encode() * 40 + b"\nx = '\0'\n")
    [result] = check_files([str(path)], default_settings())
    assert [(d.code, d.line) for d in result.diagnostics] == [("DYN000", 2)]


def test_a_file_too_large_to_analyse_is_refused_before_any_parser_sees_it(tmp_path, monkeypatch):
    """A file whose parse would take more memory than ``max-file-memory`` is DYN001, and neither libcst
    nor CPython's parser is given it; the other files are checked."""
    import libcst

    big = "DATA = {" + "".join(f'"k{i}": [{i}, ({i}, "v")], ' for i in range(3000)) + "}\n"
    (tmp_path / "generated.py").write_text(big)
    (tmp_path / "ok.py").write_text(OK)
    parsed = []
    real_parse, real_compile = libcst.parse_module, compile
    monkeypatch.setattr(libcst, "parse_module", lambda text, *a, **k: parsed.append(len(text)) or real_parse(text, *a, **k))
    monkeypatch.setattr("builtins.compile", lambda text, *a, **k: parsed.append(len(text)) or real_compile(text, *a, **k))
    settings = default_settings().with_changes(max_file_memory=20)
    results = {os.path.basename(r.path): r for r in check_files([str(tmp_path / "generated.py"),
                                                                   str(tmp_path / "ok.py")], settings)}
    [d] = results["generated.py"].diagnostics
    assert d.code == "DYN001" and d.message.startswith("too large to analyse: ") and "on one line" in d.message
    assert "raise `max-file-memory` to check it" in d.message
    assert len(big) not in parsed
    assert [x.code for x in results["ok.py"].diagnostics] == ["DYN105"]
    assert check_files([str(tmp_path / "generated.py")], settings.with_changes(max_file_memory=0))


def test_ordinary_large_files_are_within_the_default_memory_limit():
    """A 2,000-line file of model classes is far below the default limit, and costs what a file of
    its size does (the estimate is linear in its length for code of bounded nesting)."""
    model = textwrap.dedent("""
        class Block{i}(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                self.norm = nn.LayerNorm(dim)

            def forward(self, x, mask=None):
                h = self.proj(self.norm(x)) * self.scale
                if mask is not None:
                    h = h.masked_fill(mask, 0.0)
                return h, {{"block": {i}, "shape": h.shape}}

    """)
    text = "import torch\nimport torch.nn as nn\n" + "".join(model.format(i=i) for i in range(155))
    assert text.count("\n") >= 2000
    needed = source_module.parse_memory(text)
    assert needed < (source_module.MAX_FILE_MEMORY_MB << 20) // 4
    assert source_module.parse_memory(text * 2) < 2.1 * needed
    assert default_settings().max_file_memory == source_module.MAX_FILE_MEMORY_MB


def test_nesting_raises_the_estimated_parse_memory():
    """libcst's parse of nested brackets grows with the square of their depth (measured): the
    estimate follows, where the length alone would not."""
    flat = "x = [" + ", ".join(["1"] * 120) + "]\n"
    nested = "x = " + "[" * 60 + "1" + "]" * 60 + "\n"
    assert source_module.parse_memory(nested * 100) > 5 * source_module.parse_memory(flat * 100)


@pytest.mark.parametrize("code", [
    "value_1 = other_two(x, y)  \t# c\n", "a\x1cb\x1fc d\x0be\x0cf\r\n__x__ = 0x1F + 1e5", "aaa a  a\na",
    "välue_öne = öther(x)\u3000y", "", "  \n\t", "(((a)))[b]{c}",
])
def test_the_estimate_counts_a_word_as_one_token_and_no_space(code):
    """The scan before a parse makes each word one letter and drops the spaces: an ASCII text mapped
    character by character gives what the regular expressions of words and spaces give (a control
    character such as ``\\x1c`` is a space to them), and a text of the same shape with other letters
    costs the same."""
    expected = source_module._SPACE.sub("", source_module._WORD.sub("a", code))
    assert source_module._compact(code) == expected
    ascii_twin = "".join("q" if ch.isalpha() and not ch.isascii() else ch for ch in code)
    assert source_module.parse_memory(ascii_twin) == source_module.parse_memory(code)


def test_max_file_memory_is_a_whole_number(tmp_path, capsys):
    from dynalint.adapters.cli import main

    (tmp_path / "m.py").write_text(OK)
    assert main(["check", "--no-cache", "--max-file-memory", "lots", str(tmp_path / "m.py")]) == 2
    assert "max-file-memory: expected a whole number of megabytes" in capsys.readouterr().err


def test_the_parse_gives_libcsts_tree_without_checking_each_node(monkeypatch):
    """A file is parsed without the checks libcst's node constructors run on their fields (the parser's
    nodes are valid by construction); the tree is libcst's, and the checks are on again afterwards,
    for the nodes the fixers write."""
    import libcst as cst

    text = OK + "class M:\n    def forward(self, x):\n        return [y for y in x if y]  # noqa\n"
    checked = []
    original = cst.Name._validate

    def counting(node):
        checked.append(node)
        return original(node)

    monkeypatch.setattr(cst.Name, "_validate", counting)
    module, parsed = source_module.parse_module(text)
    assert parsed is text and checked == []
    assert module.deep_equals(cst.parse_module(text)) and module.code == text
    assert checked  # libcst's own parse checks every name
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
