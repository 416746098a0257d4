"""The fixer interface.

A fixer turns one finding into a :class:`FixPlan`: libcst node replacements
(plus, when needed, statements to add at module level), a description and an
honest safety level:

- ``safe``: the same results for every input the original code accepted;
- ``unsafe``: the same results under stated assumptions (both branches can be
  computed, dtypes promote the same way, a value read once does not change...).

A fixer proves its preconditions with the analysis (purity of what it moves or
duplicates, shapes and dtypes of what it selects, tensor-ness that is certain)
and raises :class:`Refused` with the precondition it could not prove; a plan
is all or nothing.  What it cannot prove and still accepts is a *hazard*,
named in its documentation (``reasoning``), which ``dynalint rule`` shows.

Every fixer documents its rewrite with :class:`FixExample` pairs that the test
suite checks three ways: the rewritten text, equal eager outputs on random
inputs, and fewer graph breaks (or recompiles) under real Dynamo.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal, Union

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.fixers.support.context import FixContext
    from dynalint.rules.base import Finding

Safety = Literal["safe", "unsafe"]


class Refused(Exception):
    """A fixer declines a finding: ``reason`` names the precondition it could not prove."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Replacement = Union[cst.CSTNode, cst.FlattenSentinel, cst.RemovalSentinel]


@dataclass
class FixPlan:
    description: str
    safety: Safety
    replacements: dict[int, tuple[cst.CSTNode, Replacement]] = field(default_factory=dict)
    """``id(original node) -> (original node, replacement)``."""
    module_statements: list[str] = field(default_factory=list)
    """Statements to add once at module level, after the imports (e.g. a Dynamo config line)."""
    imports: list[str] = field(default_factory=list)
    """Modules the rewrite needs imported (``torch``), added if missing (see ``codegen.use_torch``)."""
    fixer: str = ""
    """The name of the fixer that made the plan (set by the fix engine)."""

    def replace(self, old: cst.CSTNode, new: Replacement) -> "FixPlan":
        self.replacements[id(old)] = (old, new)
        return self


@dataclass(frozen=True)
class FixExample:
    """Code before and after the fix, runnable under Dynamo (see :class:`dynalint.rules.base.Example`)."""

    before: str
    after: str
    inputs: str = "[(torch.randn(4),), (torch.randn(4),), (torch.randn(4),)]"
    target: str | None = None
    init: str = "()"
    between_calls: str | None = None
    expect: Literal["fewer-breaks", "fewer-recompiles", "read-once", "compiles"] = "fewer-breaks"
    """What real Dynamo must show for the rewrite.  ``read-once``: a value read at trace time
    becomes one read at import, so under ``between_calls`` (which changes what was read) the
    rewrite never recompiles and its compiled outputs equal its eager ones; eager outputs of
    both versions are compared without ``between_calls``.  ``compiles``: the code before fails to
    compile (a Dynamo flag it sets makes a value symbolic where Python needs it), the rewrite
    compiles and runs."""
    compile_target: bool = True
    """False when the target is called as it is (the code decides what is compiled)."""

    @property
    def before_source(self) -> str:
        return textwrap.dedent(self.before).strip("\n") + "\n"

    @property
    def after_source(self) -> str:
        return textwrap.dedent(self.after).strip("\n") + "\n"


class Fixer:
    name: ClassVar[str]
    codes: ClassVar[tuple[str, ...]]
    """Rule codes whose findings this fixer can rewrite."""
    safety: ClassVar[Safety]
    summary: ClassVar[str]
    reasoning: ClassVar[str]
    """Why the rewrite preserves behaviour (and under which assumptions)."""
    EXAMPLES: ClassVar[list[FixExample]] = []
    last_resort: ClassVar[bool] = False
    """Applied only in a round where no other fix applies: a configuration that removes what the
    rewrites leave, never one that a rewrite of the same round makes unneeded."""

    def plan(self, finding: "Finding", ctx: "FixContext") -> FixPlan | None:  # pragma: no cover - abstract
        raise NotImplementedError


_REGISTRY: list[type[Fixer]] = []


def register(cls: type[Fixer]) -> type[Fixer]:
    if cls not in _REGISTRY:
        _REGISTRY.append(cls)
    return cls


def all_fixers() -> list[type[Fixer]]:
    from dynalint import fixers as _fixers

    _fixers.load()
    return list(_REGISTRY)


def fixers_for(code: str) -> list[type[Fixer]]:
    """The fixers of a rule code, in the order they are tried (``fixers.PREFERENCE``)."""
    from dynalint.fixers import PREFERENCE

    found = [f for f in all_fixers() if code in f.codes]
    order = PREFERENCE.get(code, ())
    return sorted(found, key=lambda f: order.index(f.name) if f.name in order else len(order))
