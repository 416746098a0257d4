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
    tensor ``h`` and the arguments ``c`` (a 0-d tensor) and ``k`` (an int)."""
    is_tensor: bool
    needs: tuple[str, ...] = ()
    """Modules the expression needs imported."""


PROVENANCES: tuple[Provenance, ...] = (
    Provenance("tensor0d_arg", "c", True),  # names of the entry point's arguments: see ARGUMENTS
    Provenance("data_dep", "(x[0] > 0).sum()", True),
    Provenance("item", "(x[0] > 0).sum().item()", False),
    Provenance("int_arg", "k", False),
    Provenance("module_const", "CONST", False),
    Provenance("shape", "h.shape[0]", False),
    Provenance("torch_of_numbers", 'torch.div(h.shape[1], 4, rounding_mode="trunc")', True),
    Provenance("random", "int(random.random() * 3) + 1", False, ("random",)),
    Provenance("time", "int(time.time()) % 3 + 1", False, ("time",)),
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
}

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
