"""The idioms generated programs are composed of, as code templates.

A *snippet* is one value (its provenance), carried in a container, used in one position, inside
one control context.  The templates keep every value between 0 and 8 and the running tensor ``h``
at shape (4, 8), so that every composition runs eagerly and the only differences left between
programs are the ones Dynamo cares about.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Provenance:
    name: str
    expr: str
    """Python expression of the value, over the input ``x`` (random on each call), the running
    tensor ``h`` and the arguments ``c`` (a 0-d tensor) and ``k`` (a number, read as an int by
    ``{k}``: see :data:`NUMBERS`)."""
    is_tensor: bool
    needs: tuple[str, ...] = ()
    """Modules the expression needs imported."""


PROVENANCES: tuple[Provenance, ...] = (
    Provenance("tensor0d_arg", "c", True),  # names of the entry point's arguments: see ARGUMENTS
    Provenance("data_dep", "(x[0] > 0).sum()", True),
    Provenance("item", "(x[0] > 0).sum().item()", False),
    Provenance("int_arg", "{k}", False),
    Provenance("module_const", "CONST", False),
    Provenance("shape", "h.shape[0]", False),
    Provenance("torch_of_numbers", 'torch.div(h.shape[1], 4, rounding_mode="trunc")', True),
    Provenance("random", "int(random.random() * 3) + 1", False, ("random",)),
    Provenance("time", "int(time.time()) % 3 + 1", False, ("time",)),
    # standard-library calls Dynamo skips (it breaks on them) and ones it traces (a constant)
    Provenance("getcwd", "len(os.getcwd()) % 3 + 1", False, ("os",)),
    Provenance("perf_counter", "int(time.perf_counter()) % 3 + 1", False, ("time",)),
    Provenance("deepcopy", "copy.deepcopy(c)", True, ("copy",)),
    Provenance("math_sqrt", "int(math.sqrt(4.0))", False, ("math",)),
    Provenance("operator_add", "operator.add({k}, 1)", False, ("operator",)),
    # operators whose output depends on tensor data (torch's data-dependent-output tags)
    Provenance("equal", "int(torch.equal(x[0, 0] > 0, x[0, 1] > 0)) + 1", False),
    Provenance("allclose", "int(torch.allclose(x[0, 1], x[0, 1].abs())) + 1", False),
    Provenance("nonzero", "(x[0] > 0).nonzero().shape[0]", False),
)

USES: dict[str, tuple[str, ...]] = {
    # each a list of lines over the access expression {a}; they leave ``h`` at shape (4, 8)
    "if": ("if {a} > 2:", "    h = h + 1", "else:", "    h = h - 1"),
    "while": ("i = 0", "while i < {a}:", "    h = h + 1", "    i += 1"),
    "range": ("for i in range({a}):", "    h = h + 1"),
    "new_zeros": ("h = h + h.new_zeros({a}, 8).sum()",),
    "arange": ("h = h + torch.arange({a}).sum()",),
    "view": ("h = h + h.new_ones({a} * 4).view({a}, 4).sum()",),
    "narrow": ("h = h + h.reshape(-1).narrow(0, 0, {a}).sum()",),
    "slice": ("h = h + h.reshape(-1)[:{a}].sum()",),
    "index": ("h = h + h.reshape(-1)[{a}]",),
    "print": ('print("value", {a})',),
    "logging": ('logger.info("value %s", {a})',),
    "return": ("{r} = {a}",),
    "arith": ("h = h * {a}",),
    "assert": ("assert {a} >= 0",),
    "iterate": ("for e in h.new_ones({a}):", "    h = h + e"),
    # statements around the value that Dynamo handles or skips
    "warn": ('warnings.warn("value " + str({a}))',),
    "manual_seed": ("torch.manual_seed(0)", "h = h + torch.rand(4, 8) * {a}"),
    "generator": ("g = torch.Generator().manual_seed(0)", "h = h + torch.rand(4, 8, generator=g) * {a}"),
    "class": ("class Box:", "    value = {a}", "h = h + Box.value"),
    "open": ('with open(os.devnull, "w") as fh:', "    fh.write(str({a}))"),
}

USE_NEEDS: dict[str, tuple[str, ...]] = {"warn": ("warnings",), "open": ("os",)}
"""Modules a use needs imported."""

CONTEXTS: tuple[str, ...] = ("top", "loop", "helper_same", "helper_other", "after_break")


@dataclass(frozen=True)
class Container:
    name: str
    pack: str
    """Line that packs the value ``{v}`` (with ``h``) into ``{p}``; empty for no container."""
    access: str
    """Expression that reads the value back from the carrier ``{p}``."""


CONTAINERS: tuple[Container, ...] = (
    Container("none", "", "{p}"),
    Container("tuple", "{p} = (h, {v})", "{p}[1]"),
    Container("list", "{p} = [h, {v}]", "{p}[1]"),
    Container("dict", '{p} = {{"h": h, "v": {v}}}', '{p}["v"]'),
    Container("dataclass", "{p} = {cls}(h, {v})", "{p}.v"),
)

PROVENANCE = {p.name: p for p in PROVENANCES}
CONTAINER = {c.name: c for c in CONTAINERS}

ARGUMENTS = {"c": "tensor0d_arg", "k": "int_arg"}
"""The entry point's arguments besides ``x``, by the provenance that reads them."""


@dataclass(frozen=True)
class Number:
    """How the entry point's number argument ``k`` is passed and read back as an int."""
    name: str
    annotation: str
    literal: str
    """The argument's value from the int ``{n}`` (1 to 3) the call would pass."""
    read: str
    """The expression that reads ``k`` as an int."""


NUMBERS: dict[str, Number] = {
    "int": Number("int", "int", "{n}", "k"),
    "float": Number("float", "float", "{n} + 0.5", "int(k)"),
}

CAPTURE_FLAGS: tuple[str, ...] = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")
"""Dynamo's capture flags a program may turn on (then ``.item()`` / ``nonzero()`` stay in the graph)."""

CAPTURES: tuple[str, ...] = tuple(f"{via}:{flag}" for via in ("config", "patch") for flag in CAPTURE_FLAGS)
"""How a program turns a flag on: ``config`` assigns it at the top of the module, ``patch`` wraps the
compiled handle in ``torch._dynamo.config.patch(flag=True)``."""
