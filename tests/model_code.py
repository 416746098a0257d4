"""Hypothesis strategies for PyTorch model code that makes every rule fire and every fixer apply.

A generated module has imports, module-level state (numbers that setters rebind, a
logger), plain helpers, ``@torch.compile`` functions, ``nn.Module`` classes and
callers.  Compiled bodies are built from *snippets*, one family per rule and fixer
(tensor ``if``/ternary/``assert``/``raise``, ``.item()``, masked reductions and
losses, data-dependent loops, logging, globals, environment reads, ``self``
counters...), nested in Python control flow, with comments in every place a
comment can go, names that collide with the ones fixers invent, a random indent,
CRLF or CR line ends and sometimes no final newline.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from hypothesis import strategies as st

#: Tensor variable names; several are the ones fixers generate (``x_then``, ``y_if_true``...).
TENSOR_NAMES = ("x", "h", "y", "w", "out", "x_then", "y_else", "y_if_true", "decision", "result")
COMMENTS = ("# keep", "# note: shape (B, T)", "# type: ignore", "# noqa: E501", "# TODO", "# c1", "# c2",
            "# page\x0cbreak", "# line\u2028separator", "# ünïcode")
ENV_KEYS = ("UPCAST", "SCALE", "DYNALINT_MODE")
LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits")

Line = tuple[int, str]
"""(indent level, text)."""


@dataclass
class Scope:
    """What a body being generated can refer to."""

    tensors: list[str]
    python_args: list[str] = field(default_factory=list)
    in_module: bool = False
    imports: set[str] = field(default_factory=set)
    globals: list[str] = field(default_factory=list)
    counters: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)

    def child(self, **changes) -> "Scope":
        scope = Scope(**{**self.__dict__, "tensors": list(self.tensors), **changes})
        scope.imports = self.imports  # shared: what any body uses is imported once
        return scope


def _atom(expr: str) -> str:
    return expr if expr.isidentifier() else f"({expr})"


def _comment(draw, p: float = 0.25) -> str:
    return f"  {draw(st.sampled_from(COMMENTS))}" if draw(st.floats(0, 1)) < p else ""


@st.composite
def tensor_expr(draw, scope: Scope, depth: int = 2) -> str:
    base = draw(st.sampled_from(scope.tensors))
    if depth <= 0 or draw(st.booleans()):
        return base
    other = draw(tensor_expr(scope, depth - 1))
    forms = [f"{base} * 2", f"{base} - 1", f"torch.relu({other})", f"{base}.softmax(-1)",
             f"({base} + {other})",
             f"torch.tanh({base})", f"{base}.clamp(min=0.0)", f"{base} * {other}", f"{base}.abs()"]
    if scope.in_module:
        forms.append(f"self.fc({other})")
    if scope.globals:
        forms.append(f"{base} * (1.0 - {draw(st.sampled_from(scope.globals))})")
    if scope.flags:
        forms.append(f"{base} * 0.5 if self.{draw(st.sampled_from(scope.flags))} else {base}")
    return draw(st.sampled_from(forms))


@st.composite
def condition(draw, scope: Scope, depth: int = 1) -> str:
    t = draw(st.sampled_from(scope.tensors))
    forms = [f"{t}.sum() > 0", f"{t}.mean() < {draw(st.sampled_from(['0', '1.5', '-2.0']))}",
             f"torch.isnan({t}).any()", f"not torch.isfinite({t}).all()", f"{t}.abs().max() > 1",
             f"{t}.max() > {draw(st.sampled_from(scope.tensors))}.min()"]
    if scope.python_args:
        forms.append(f"{draw(st.sampled_from(scope.python_args))} < 100")
    if depth > 0 and draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from(["and", "or"]))
        left, right = draw(condition(scope, depth - 1)), draw(condition(scope, depth - 1))
        if draw(st.floats(0, 1)) < 0.3:  # over two lines, a comment inside the parentheses
            return f"({left}{_comment(draw, 1)}\n{op} {right})"
        return f"{left} {op} {right}"
    return draw(st.sampled_from(forms))


def _target(draw, scope: Scope) -> str:
    name = draw(st.sampled_from(TENSOR_NAMES))
    if name not in scope.tensors:
        scope.tensors.append(name)
    return name


# --- snippets: each returns lines and whether it ends its block (a return or raise) ---------------

Snippet = Callable[..., tuple[list[Line], bool]]


def _assign(draw, scope):
    value = draw(tensor_expr(scope))
    form = draw(st.integers(0, 5))
    if form == 0:  # two statements on one line
        x = draw(st.sampled_from(scope.tensors))
        return [(0, f"{_target(draw, scope)} = {value}; print({x}.sum()){_comment(draw)}")], False
    if form == 1:
        a, b = _target(draw, scope), _target(draw, scope)
        return [(0, f"{a}, {b} = {value}, {draw(tensor_expr(scope, 1))}")], False
    if form == 2:  # a call over several lines, a comment between its arguments
        x = draw(st.sampled_from(scope.tensors))
        return [(0, f"{_target(draw, scope)} = torch.where(  {draw(st.sampled_from(COMMENTS))}"),
                (2, f"{x} > 0,{_comment(draw)}"), (2, f"{value},"), (2, "0.0)")], False
    return [(0, f"{_target(draw, scope)} = {value}{_comment(draw)}")], False


def _if_assign(draw, scope):  # DYN101: branch-to-where, hoist-decision
    cond = draw(condition(scope))
    targets = [_target(draw, scope) for _ in range(draw(st.integers(1, 2)))]
    lines: list[Line] = [(0, f"if {cond}:{_comment(draw)}")]
    lines += [(1, f"{t} = {draw(tensor_expr(scope))}{_comment(draw)}") for t in targets]
    if draw(st.floats(0, 1)) < 0.15:
        lines.append((0, draw(st.sampled_from(COMMENTS))))
    if draw(st.booleans()):
        lines.append((0, f"elif {draw(condition(scope))}:{_comment(draw)}"))
        lines += [(1, f"{t} = {draw(tensor_expr(scope))}") for t in targets]
    if draw(st.booleans()):
        lines.append((0, f"else:{_comment(draw)}"))
        if draw(st.floats(0, 1)) < 0.2:
            lines.append((1, draw(st.sampled_from(COMMENTS))))
        lines += [(1, f"{t} = {draw(tensor_expr(scope))}") for t in targets]
    return lines, False


def _decision(draw, scope):  # DYN101 on an argument: hoist-decision
    if not scope.python_args:
        return _if_assign(draw, scope)
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"if {draw(st.sampled_from(scope.python_args))} < 100:{_comment(draw)}"),
            (1, f"{x} = torch.cat([{x}, {x} * 0.1]){_comment(draw)}")], False


def _if_return(draw, scope):  # DYN101: branch-to-where on returns
    lines: list[Line] = [(0, f"if {draw(condition(scope))}:{_comment(draw)}"),
                         (1, f"return {draw(tensor_expr(scope))}{_comment(draw)}")]
    if draw(st.booleans()):
        lines += [(0, f"elif {draw(condition(scope))}:"), (1, f"return {draw(tensor_expr(scope))}")]
    if draw(st.booleans()):
        lines += [(0, "else:"), (1, f"return {draw(tensor_expr(scope))}")]
    else:
        lines.append((0, f"return {draw(tensor_expr(scope))}"))
    return lines, True


def _ternary(draw, scope):  # DYN101
    value = f"{draw(tensor_expr(scope, 1))} if {draw(condition(scope))} else {draw(tensor_expr(scope, 1))}"
    if draw(st.booleans()):
        return [(0, f"return {value}{_comment(draw)}")], True
    return [(0, f"{_target(draw, scope)} = {value}{_comment(draw)}")], False


def _if_call(draw, scope):  # DYN101: branch-to-cond
    calls = ["self.fc", "self.proj"] if scope.in_module else list(scope.helpers) or ["torch.relu"]
    t = _target(draw, scope)
    lines: list[Line] = [(0, f"if {draw(condition(scope))}:{_comment(draw)}")]
    if draw(st.booleans()):
        lines.append((1, f"tmp = {draw(st.sampled_from(calls))}({draw(tensor_expr(scope, 1))})"))
        lines.append((1, f"{t} = torch.relu(tmp){_comment(draw)}"))
    else:
        lines.append((1, f"{t} = {draw(st.sampled_from(calls))}({draw(tensor_expr(scope, 1))})"))
    lines += [(0, "else:"), (1, f"{t} = {draw(st.sampled_from(calls))}({draw(tensor_expr(scope, 1))}) * 2")]
    return lines, False


def _raise(draw, scope):  # DYN101: async-assert
    x = draw(st.sampled_from(scope.tensors))
    exc = draw(st.sampled_from(["RuntimeError('bad input')", "ValueError('NaN')",
                                f"RuntimeError(f'bad {{{x}.shape}}')"]))
    return [(0, f"if {draw(condition(scope))}:{_comment(draw)}"), (1, f"raise {exc}{_comment(draw)}")], False


def _assert(draw, scope):  # DYN101: async-assert
    msg = draw(st.sampled_from(["", ", 'bad weights'"]))
    return [(0, f"assert not {draw(condition(scope, 0))}{msg}{_comment(draw)}")], False


def _scalar(draw, scope):  # DYN102, DYN204: keep-tensor
    t = _atom(draw(tensor_expr(scope, 1)))
    s = draw(st.sampled_from(["scale", "var", "ent", "n"]))
    read = draw(st.sampled_from([f"{t}.abs().max().item()", f"float({t}.mean())", f"{t}.var().item()",
                                 f"int(({t} > 0).sum())", f"{t}.sum().tolist()"]))
    scope.imports.add("import math")
    use = draw(st.sampled_from([f"{{x}} / {s}", f"{{x}} * math.exp(-{s})",
                                f"{{x}} * math.sqrt(max({s}, 1e-6))",
                                f"{{x}} + {s}"]))
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"{s} = {read}{_comment(draw)}"), (0, f"{_target(draw, scope)} = {use.format(x=x)}")], False


def _check(draw, scope):  # DYN102: check-in-graph
    t = draw(st.sampled_from(scope.tensors))
    cond = draw(st.sampled_from([f"{t} > 0", f"torch.isfinite({t})", f"{t}.abs() < 1000"]))
    msg = draw(st.sampled_from(["", ", 'out of range'"]))
    form = draw(st.sampled_from([f"torch._check_tensor_all({cond}{msg})",
                                 f"torch._check(({cond}).all().item())"]))
    return [(0, f"{form}{_comment(draw)}")], False


def _masked(draw, scope):  # DYN104: masked-reduction
    x, m = draw(st.sampled_from(scope.tensors)), draw(st.sampled_from(["mask", "keep"]))
    lines: list[Line] = [(0, f"{m} = {draw(st.sampled_from(scope.tensors))} > 0{_comment(draw)}")]
    form = draw(st.integers(0, 3))
    if form == 0:
        lines.append((0, f"{_target(draw, scope)} = {x}[{m}].sum() * 2"))
    elif form == 1:
        lines.append((0, f"{_target(draw, scope)} = {x}[{m}].mean(){_comment(draw)}"))
    elif form == 2:
        lines.append((0, f"{x}[{m}] += 1{_comment(draw)}"))
    else:
        lines.append((0, f"{_target(draw, scope)} = {x}[{x} > 0].sum()"))
    return lines, False


def _masked_loss(draw, scope):  # DYN104: masked-loss, masked-elementwise-loss
    scope.imports.add("import torch.nn.functional as F")
    a, b = draw(st.sampled_from(scope.tensors)), draw(st.sampled_from(scope.tensors))
    m = draw(st.sampled_from(["valid", "pos"]))
    lines: list[Line] = [(0, f"{m} = {b} > 0")]
    loss = draw(st.sampled_from(("cross_entropy",) + LOSSES))
    if loss != "cross_entropy" and draw(st.booleans()):
        lines += [(0, f"{a}_m = {a}[{m}]"), (0, f"{b}_m = {b}[{m}]")]
        call = f"F.{loss}({a}_m, {b}_m)"
    else:
        reduction = draw(st.sampled_from(["", ", reduction='sum'"]))
        call = f"F.{loss}({a}[{m}], {b}[{m}]{reduction})"
    if draw(st.booleans()):
        return lines + [(0, f"return {call}{_comment(draw)}")], True
    return lines + [(0, f"{_target(draw, scope)} = {call}")], False


def _pooling(draw, scope):  # DYN104: last-true-pooling
    x, ids = draw(st.sampled_from(scope.tensors)), draw(st.sampled_from(scope.tensors))
    m = draw(st.sampled_from(["eos_mask", "last"]))
    count = draw(st.sampled_from([f"len(torch.unique_consecutive({m}.sum(1))) > 1",
                                  f"torch.unique_consecutive({m}.sum(dim=1)).numel() != 1"]))
    last = draw(st.sampled_from([", :", ""]))
    anywhere = draw(st.sampled_from([f"{m}.any()", f"torch.any({m})"]))
    return [(0, f"{m} = {ids} == 2{_comment(draw)}"),
            (0, f"if not {anywhere}:{_comment(draw)}"),  # what rejects a mask with no True
            (1, f"raise ValueError('no True in the mask'){_comment(draw)}"),
            (0, f"if {count}:{_comment(draw)}"),
            (1, f"raise RuntimeError('rows differ in count'){_comment(draw)}"),
            (0, f"{_target(draw, scope)} = {x}[{m}, :].view({x}.size(0), -1, {x}.size(-1))[:, -1{last}]"
                f"{_comment(draw)}")], False


def _nonzero(draw, scope):  # DYN104: capture-flags (no rewrite of the code itself)
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"idx = torch.nonzero({x} > 0).squeeze(-1)"),
            (0, f"{_target(draw, scope)} = {x}.index_select(0, idx)")], False


def _counted(draw, scope):  # DYN104 with capture_dynamic_output_shape_ops: size-check
    x = draw(st.sampled_from(scope.tensors))
    count = draw(st.sampled_from([f"len(torch.unique({x}))", f"torch.nonzero({x} > 0).size(0)"]))
    test = draw(st.sampled_from(["count > 3", "count == 0", "too_many"]))
    message = draw(st.sampled_from(["'too many values'", "f'{count} values'"]))
    # a header line, so the flag is on for the module's code from its import on
    scope.imports.add("torch._dynamo.config.capture_dynamic_output_shape_ops = True")
    lines: list[Line] = [(0, f"count = {count}{_comment(draw)}")]
    if test == "too_many":
        lines.append((0, "too_many = count > 3"))
    return lines + [(0, f"if {test}:{_comment(draw)}"), (1, f"raise RuntimeError({message}){_comment(draw)}")], False


def _experts(draw, scope):  # DYN104: full-range-loop (a loop over the experts a router mask selects)
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"top = {x}.reshape({x}.shape[0], -1)[:, :2].abs().long() % 4"),
            (0, "mask = torch.nn.functional.one_hot(top, num_classes=4).permute(2, 1, 0)"),
            (0, "hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()"),
            (0, f"routed = torch.zeros_like({x})"),
            (0, "for e in hit:"),
            (1, "idx, rows = torch.where(mask[e].squeeze(0))"),
            (1, f"routed.index_add_(0, rows, {x}[rows] * 2)"),
            (0, f"{_target(draw, scope)} = routed")], False


def _loop(draw, scope):  # DYN103; DYN207 when the while loop counts its iterations
    x = draw(st.sampled_from(scope.tensors))
    if draw(st.booleans()):
        loop = [(0, f"while {x}.abs().max() > 1:{_comment(draw)}"), (1, f"{x} = {x} / 2")]
        if draw(st.booleans()):
            return [(0, "halvings = 0"), *loop, (1, "halvings += 1")], False
        return loop, False
    return [(0, "for _ in range(4):"), (1, f"{x} = {x} * 0.5"),
            (1, f"if {x}.abs().sum() < 1:{_comment(draw)}"),
            (2, "break")], False


def _logging(draw, scope):  # DYN105: defer-logging, skip-logging-while-compiling
    x = draw(st.sampled_from(scope.tensors))
    form = draw(st.integers(0, 5))
    if form == 0:
        return [(0, f"print('{x}:', {x}.sum()){_comment(draw)}")], False
    if form == 1:
        scope.imports.add("import warnings")
        return [(0, f"warnings.warn('experimental'){_comment(draw)}")], False
    if form == 2:
        scope.imports.add("import logging")
        return [(0, f"logging.info('step'){_comment(draw)}")], False
    if form == 3:
        scope.imports.add("logger")
        return [(0, f"logger.info('shape %s', tuple({x}.shape)){_comment(draw)}")], False
    if form == 4:
        scope.imports.add("import warnings")
        return [(0, f"if {draw(condition(scope))}:{_comment(draw)}"),
                (1, f"warnings.warn('suspicious values'){_comment(draw)}")], False
    return [(0, f"label = 'peak=' + str({x}.max())")], False


def _update(draw, scope):  # DYN105: eager-tail (breaks on every run at the end of a training step)
    x = draw(st.sampled_from(scope.tensors))
    scope.imports.add("import warnings")
    return [(0, f"loss = {x}.square().mean()"), (0, f"loss.backward(){_comment(draw)}"),
            (0, "warnings.warn('updated')")], False


def _prelude(draw, scope):  # DYN105: eager-head (a draw from Python's RNG before the tensor work)
    x = draw(st.sampled_from(scope.tensors))
    scope.imports.add("import random")
    return [(0, f"draw = random.random(){_comment(draw)}"), (0, f"{_target(draw, scope)} = {x} * draw")], False


def _callee(draw, scope):  # DYN102 in a loop of a module-level function: eager-callee
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"scores = {x}.softmax(-1)"), (0, f"labels = decode(scores){_comment(draw)}")], False


def _pick(draw, scope):  # DYN102, capture_scalar_outputs on (a list indexed by a drawn number): eager-helper
    x = draw(st.sampled_from(scope.tensors))
    # a header line, so the flag is on for the module's code from its import on
    scope.imports.add("torch._dynamo.config.capture_scalar_outputs = True")
    return [(0, f"{_target(draw, scope)} = {x} * pick(SIZES){_comment(draw)}")], False


def _rnn(draw, scope):  # DYN105: allow-rnn (a module-level GRU)
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"{_target(draw, scope)}, _ = rnn({x}){_comment(draw)}")], False


def _global_read(draw, scope):  # DYN201: global-to-tensor
    if not scope.globals:
        return _assign(draw, scope)
    g = draw(st.sampled_from(scope.globals))
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"{_target(draw, scope)} = {x} * (1.0 - {g}){_comment(draw)}")], False


def _env(draw, scope):  # DYN202: env-read-once
    scope.imports.add("import os")
    key = draw(st.sampled_from(ENV_KEYS))
    read = draw(st.sampled_from([f"os.environ.get({key!r}, '0') == '1'", f"os.getenv({key!r}) == '1'",
                                 f"{key!r} in os.environ", f"os.environ[{key!r}] == '1'"]))
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"if {read}:{_comment(draw)}"), (1, f"{x} = {x}.double().softmax(-1).float()")], False


def _counter(draw, scope):  # DYN203: python-state-to-buffer
    if not scope.counters:
        return _assign(draw, scope)
    c = draw(st.sampled_from(scope.counters))
    form = draw(st.sampled_from([f"self.{c} += 1", f"self.{c} = self.{c} * 0.5",
                                 f"self.{c} = max(0.05, self.{c} * 0.5)"]))
    lines = [(0, f"{form}{_comment(draw)}")]
    if draw(st.booleans()):
        x = draw(st.sampled_from(scope.tensors))
        lines.append((0, f"{_target(draw, scope)} = {x} * self.{c}"))
    return lines, False


def _flag(draw, scope):  # DYN205
    if not scope.flags:
        return _assign(draw, scope)
    x = draw(st.sampled_from(scope.tensors))
    return [(0, f"if self.{draw(st.sampled_from(scope.flags))}:"), (1, f"{x} = {x} * 0.5")], False


def _closure(draw, scope):  # a function defined inside a compiled one
    inner = scope.child()
    body = draw(statements(inner, depth=1, terminal_ok=True))
    if not body[-1][1].startswith(("return", "raise")):
        body.append((0, f"return {draw(st.sampled_from(inner.tensors))}"))
    name = draw(st.sampled_from(["inner", "body_fn"]))
    x = draw(st.sampled_from(scope.tensors))
    lines = [(0, f"def {name}():{_comment(draw)}")] + [(lvl + 1, text) for lvl, text in body]
    return lines + [(0, f"{_target(draw, scope)} = {name}() + {x}")], False


def _block(draw, scope):  # Python control flow around snippets
    head = draw(st.sampled_from(["with torch.no_grad():", "for i in range(3):", "if self.training:",
                                 "try:"] if scope.in_module else
                                ["with torch.no_grad():", "for i in range(3):", "try:"]))
    inner = scope.child()
    body = draw(statements(inner, depth=1, terminal_ok=False))
    lines = [(0, f"{head}{_comment(draw)}")] + [(lvl + 1, text) for lvl, text in body]
    if head == "try:":
        lines += [(0, "except RuntimeError:"), (1, "pass")]
    scope.tensors[:] = inner.tensors
    return lines, False


SNIPPETS: dict[str, Snippet] = {
    "assign": _assign, "if-assign": _if_assign, "decision": _decision, "if-return": _if_return,
    "ternary": _ternary,
    "if-call": _if_call, "raise": _raise, "assert": _assert, "scalar": _scalar, "check": _check, "masked": _masked,
    "masked-loss": _masked_loss, "pooling": _pooling, "nonzero": _nonzero, "counted": _counted,
    "experts": _experts, "loop": _loop, "logging": _logging,
    "update": _update, "prelude": _prelude, "callee": _callee, "pick": _pick, "rnn": _rnn,
    "global": _global_read, "env": _env, "counter": _counter, "flag": _flag, "closure": _closure,
    "block": _block,
}


@st.composite
def statements(draw, scope: Scope, depth: int = 0, terminal_ok: bool = True,
               kinds: tuple[str, ...] = tuple(SNIPPETS)) -> list[Line]:
    lines: list[Line] = []
    allowed = [k for k in kinds if depth < 1 or k not in ("block", "closure")]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(allowed))
        new, terminal = SNIPPETS[kind](draw, scope)
        if terminal and not terminal_ok:
            continue
        if draw(st.floats(0, 1)) < 0.15:
            lines.append((0, draw(st.sampled_from(COMMENTS))))
        lines += new
        if terminal:
            break
    return lines or [(0, "pass")]


@st.composite
def model_source(draw, kinds: tuple[str, ...] = tuple(SNIPPETS)) -> str:
    """A module of model code using the snippet ``kinds`` (all by default)."""
    imports: set[str] = {"import torch"}
    parts: list[list[Line]] = []
    globals_ = draw(st.lists(st.sampled_from(["drop_rate", "temperature", "STEP"]), max_size=2, unique=True))
    for g in globals_:
        start = draw(st.sampled_from(['0.0', '1', '0.5']))
        parts.append([(0, f"{g} = {start}{_comment(draw)}")])
        op = draw(st.sampled_from(["=", "+="]))
        kind = "float" if "." in start else "int"  # a setter of unknown argument type is refused
        parts.append([(0, f"def set_{g.lower()}(value: {kind}):"), (1, f"global {g}"), (1, f"{g} {op} value")])
    helpers = []
    if draw(st.booleans()):
        helpers.append("helper")
        parts.append([(0, "def helper(t):"), (1, "return t.relu() + 1")])
    if "callee" in kinds:  # a function Dynamo runs eagerly (a break in its loop)
        parts.append([(0, "def decode(t):"), (1, "rows = []"), (1, "for row in t:"),
                      (2, "rows.append(int(row.sum()))"), (1, "return rows")])
    if "pick" in kinds:  # a draw from a list by a number taken from tensor data
        parts.append([(0, "SIZES = [2, 3, 4]")])
        parts.append([(0, "def pick(k):"),
                      (1, "index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())"),
                      (1, "return k[index]")])
    if "rnn" in kinds:
        parts.append([(0, "rnn = torch.nn.GRU(4, 4)")])
    entry_points: list[tuple[str, int]] = []
    for i in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            parts.append(draw(_module_class(i, globals_, helpers, imports, kinds)))
        else:
            name, n_args, lines = draw(_compiled_function(i, globals_, helpers, imports, kinds))
            parts.append(lines)
            entry_points.append((name, n_args))
    if entry_points and draw(st.booleans()):  # DYN206: callers passing different Python values
        name, n_args = entry_points[0]
        if n_args > 1:
            values = draw(st.lists(st.sampled_from(["1.0", "0.5", "True", "False", "'a'"]),
                                   min_size=2, max_size=3))
            parts.append([(0, "def run(x):")] + [(1, f"r{j} = {name}(x, {v})") for j, v in enumerate(values)]
                         + [(1, "return r0")])
    if entry_points and draw(st.booleans()):  # DYN208: a caller in each grad mode
        name, n_args = entry_points[-1]
        call = f"{name}({', '.join(['x'] * n_args)})"
        parts.append([(0, "def evaluate(x):"), (1, f"fit = {call}"), (1, "with torch.no_grad():"),
                      (2, f"test = {call}"), (1, "return fit, test")])
    if "logger" in imports:
        imports.discard("logger")
        imports.add("import logging")
        parts.insert(0, [(0, "logger = logging.getLogger(__name__)")])
    header = sorted(imports, key=lambda s: (s != "import torch", s))
    if draw(st.booleans()):
        header.insert(0, '"""Model code."""')
    if draw(st.floats(0, 1)) < 0.2:
        header.insert(0, draw(st.sampled_from(COMMENTS)))
    return _render(draw, [[(0, h) for h in header]] + parts)


@st.composite
def _compiled_function(draw, i: int, globals_, helpers, imports, kinds):
    python_args = ["t"] if draw(st.booleans()) else []
    args = ["x"] + draw(st.lists(st.sampled_from(["h", "w"]), max_size=1)) + python_args
    scope = Scope(tensors=list(args[:-1] if python_args else args), python_args=python_args, imports=imports,
                  globals=list(globals_), helpers=helpers)
    body = draw(statements(scope, kinds=kinds))
    if not body[-1][1].startswith(("return", "raise")) and draw(st.booleans()):
        body.append((0, f"return {draw(st.sampled_from(scope.tensors))}"))
    decorator = draw(st.sampled_from(["@torch.compile", "@torch.compile()", "@torch.compile(dynamic=False)"]))
    name = f"step{i}"
    return name, len(args), [(0, decorator), (0, f"def {name}({', '.join(args)}):{_comment(draw, 0.1)}")] + \
        [(lvl + 1, text) for lvl, text in body]


@st.composite
def _module_class(draw, i: int, globals_, helpers, imports, kinds):
    imports.add("import torch.nn as nn")
    counters = draw(st.lists(st.sampled_from(["calls", "epsilon", "step"]), max_size=2, unique=True))
    flags = draw(st.lists(st.sampled_from(["use_cache", "upcast"]), max_size=1))
    init = [(1, "def __init__(self):"), (2, "super().__init__()"), (2, "self.fc = nn.Linear(4, 4)"),
            (2, "self.proj = nn.Linear(4, 4)")]
    init += [(2, f"self.{c} = {draw(st.sampled_from(['0', '1.0']))}{_comment(draw)}") for c in counters]
    init += [(2, f"self.{f} = False") for f in flags]
    scope = Scope(tensors=["x"], in_module=True, imports=imports, globals=list(globals_), counters=counters,
                  flags=flags, helpers=helpers)
    body = draw(statements(scope, kinds=kinds))
    lines = [(0, f"class Block{i}(nn.Module):")] + init + [(0, ""), (1, "def forward(self, x):")]
    lines += [(lvl + 2, text) for lvl, text in body]
    for f in flags:
        lines += [(0, ""), (0, f"def set_{f}(model, flag):"), (1, f"model.{f} = flag")]
    return lines


def _render(draw, parts: list[list[Line]]) -> str:
    indent = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline = draw(st.sampled_from(["\n"] * 8 + ["\r\n", "\r"]))
    blank = newline * draw(st.integers(1, 2))
    text = blank.join(newline.join((indent * lvl + s).replace("\n", newline + indent * (lvl + 1)) if s else ""
                                   for lvl, s in part) + newline for part in parts)
    if draw(st.floats(0, 1)) < 0.1:
        text += newline + draw(st.sampled_from(COMMENTS)) + newline
    if draw(st.floats(0, 1)) < 0.3:
        text = text.rstrip("\r\n")  # no final newline: the last statement is often the one fixed
    return text
