"""Known limits: disagreements with Dynamo that the analysis has not closed yet, each with why.

An entry matches a disagreement by its kind and idiom fields (a name, a tuple of names, or None for
any) and, optionally, a regular expression over its detail (the codes reported, Dynamo's break type
or the failing guard).
The CI test fails on a disagreement that no entry explains.  When the analysis closes a gap, the
entry becomes unused and can go.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from .compare import Disagreement


Names = Union[str, tuple[str, ...], None]


@dataclass(frozen=True)
class KnownLimit:
    kind: str
    reason: str
    provenance: Names = None
    use: Names = None
    context: Names = None
    container: Names = None
    detail: str | None = None
    """Regular expression searched in the disagreement's detail."""

    def matches(self, d: Disagreement) -> bool:
        if d.kind != self.kind:
            return False
        fields = d.idiom or ("scaffold", "", "", "")
        want = (self.provenance, self.use, self.context, self.container)
        if any(w is not None and f not in ((w,) if isinstance(w, str) else w) for w, f in zip(want, fields)):
            return False
        return self.detail is None or re.search(self.detail, d.detail) is not None


SIZE_USES = ("arange", "new_zeros", "narrow", "view", "slice")

DATA_DEPENDENT = r"Data dependent operator|Data-dependent branching|Tensor\.item\(\)"
"""Dynamo's break types for a value computed from tensor data used as a size, an index or a test."""

INT_ARGUMENT_VARIES = (
    "the int argument differs between the calls, so the entry point recompiles once (Dynamo specialises "
    "a Python int on the first compile, then makes it dynamic); DYN206 sees values that differ as "
    "literals or as an int of the calling loop's variable, not ones computed otherwise (a config, an "
    "attribute, another function's result)")

KNOWN_LIMITS: tuple[KnownLimit, ...] = (
    # ---- false alarms: a graph break reported where Dynamo has none
    KnownLimit(
        "break-fp", provenance=("data_dep", "deepcopy", "tensor0d_arg"), use=(*SIZE_USES, "index", "iterate"),
        context=("after_break", "helper_same", "helper_other"), detail="DYN102",
        reason="a value computed from tensor data and passed to a helper that Dynamo compiles as a frame "
               "of its own (its caller runs eagerly: a break inside a loop of the caller, with no break "
               "before it, makes Dynamo skip the caller's whole frame) is an input of the helper's frame, "
               "and Dynamo uses an input 0-d tensor as a size or an index without a break; the analysis "
               "does not know which breaks skip a frame and reports the size as data-dependent"),
    KnownLimit(
        "break-fp", provenance=("equal", "allclose", "random", "time", "perf_counter", "getcwd"),
        use=("while", "if"), detail="DYN10[13]",
        reason="with capture_scalar_outputs on, the analysis takes every Python number made from a value "
               "at a graph break for an unbacked symbol and reports the `while` or `if` test on it as a "
               "data-dependent break; but torch.equal / torch.allclose and the skipped calls still break "
               "where they are called (the flag captures `.item()` only), and the number they return is a "
               "plain input of the resumed frame: Dynamo guards on it (and recompiles) instead of breaking"),
    KnownLimit(
        "break-fp", provenance=("item", "nonzero"), context="after_break", detail="DYN10[13]",
        reason="with capture_scalar_outputs on, `.item()` stays an unbacked symbol only until the next "
               "graph break: the resumed frame receives it as a Python int and guards on it instead of "
               "breaking on a test; the analysis keeps it data-dependent across the break"),
    # ---- misses: a graph break Dynamo has and the analysis does not report
    KnownLimit(
        "break-fn", provenance=("item", "nonzero"), use=("if", "while", "range", "iterate"),
        detail="Encountered graph break when attempting to trace CALL",
        reason="with a capture flag on, `.item()` (or the length of nonzero()'s result) stays in the graph "
               "as an unbacked symbol, and a test on it in a helper Dynamo inlines, a loop over range() "
               "of it or over a tensor of that length, breaks there; the analysis does not report the "
               "break (for the range() it reports a recompile hazard)"),
    KnownLimit(
        "break-fn", use="iterate", detail="Failed to handle graph break gracefully",
        reason="with capture_scalar_outputs on, a size from tensor data is an unbacked symbol, and "
               "iterating a tensor of that length breaks (inside a loop: Dynamo skips the frame); the "
               "analysis misses it when the size reaches the loop through a container"),
    KnownLimit(
        "break-fn", use="generator", detail="Failed to convert args/kwargs to proxy",
        reason="`torch.Generator()` made in compiled code breaks (an opaque object), and the resumed frame "
               "gets the generator as an input: passing it as `generator=` to a random function breaks a "
               "second time on that line; the analysis reports the first break only"),
    KnownLimit(
        "break-fn", provenance=("torch_of_numbers", "tensor0d_arg"), context=("helper_same", "helper_other"),
        detail=DATA_DEPENDENT,
        reason="a value handed to a helper from a frame Dynamo skips (a break inside a later loop of the "
               "caller, with no break before it, makes the caller run eagerly) is an input of the "
               "helper's own frame: arithmetic on it there (`n * 4`) is computed in the graph, and used "
               "as a size it breaks; the analysis does not know which breaks skip a frame and takes a "
               "torch function of sizes for a constant, an argument for an input"),
    # ---- recompiles Dynamo does and the analysis does not report
    KnownLimit(
        "recompile-fn", provenance=("time", "random", "perf_counter"),
        reason="time.time(), time.perf_counter() and random.random() are functions Dynamo 2.13 skips: "
               "it breaks on them, "
               "and the float they return enters the resumed frame, which guards on its value once a "
               "use specialises it (tensor arithmetic, a size), so calls recompile; the analysis "
               "reports the break, not the recompile"),
    KnownLimit("recompile-fn", provenance=("int_arg", "operator_add"), reason=INT_ARGUMENT_VARIES),
    KnownLimit("recompile-fn", detail=r"^k == N$", reason=INT_ARGUMENT_VARIES),
    KnownLimit(
        "recompile-fn", detail=r"___stack\d+\.stop == N",
        reason="range() over a tensor value breaks, and the range object lives on in the resumed frame, "
               "which guards on its bound: a new bound recompiles; the analysis reports the break only"),
    KnownLimit(
        "recompile-fn", detail="size mismatch",
        reason="a break on a data-dependent size hands the resumed frame a tensor whose size changes from "
               "call to call: the resume function recompiles (once, then the size is dynamic); whether the "
               "size changes depends on the data alone (a mask that selects as many rows on every call "
               "recompiles nothing), so DYN204 reports it only where the calls draw the data afresh "
               "(torch.randn at each call) and the size is taken in the compiled function or a helper "
               "of its file"),
    KnownLimit(
        "recompile-fn", detail=r"\.item\(\) == N",
        reason="a 0-d tensor (an argument, or one computed before a break) used as an index or a Python "
               "bound is specialised: Dynamo reads its value (.item()) and guards on it, so each new value "
               "recompiles; the analysis does not report it"),
    KnownLimit(
        "recompile-fn", provenance=("item", "nonzero"),
        reason="the int from .item() (or the length of nonzero()'s result) is an input of the code resumed "
               "after the break on it, and Dynamo guards on its value: a new value recompiles; DYN204 misses "
               "it when the value reaches its use through a container or a helper"),
    KnownLimit(
        "recompile-fn", provenance=("equal", "allclose"),
        reason="torch.equal / torch.allclose break (their bool depends on tensor data), and the resumed "
               "frame guards on the bool they returned (or the int made from it): a new result recompiles; "
               "DYN204 misses it when the value reaches its use through a container or a helper, as for "
               ".item()"),
    KnownLimit(
        "recompile-fn", detail=r"== 'tensor\(N\)'",
        reason="`str()` of a tensor passed to a call Dynamo skips (warnings.warn, a file's write) is "
               "computed in the frame by reading the tensor's value, and the resumed frame guards on the "
               "string: a new value recompiles; DYN204 reports it where the string is joined to another "
               "and the calls draw the data afresh (not for an argument tensor the calls pass, nor in a "
               "helper of another file)"),
    KnownLimit(
        "recompile-fn", detail=r"___check_obj_id\(.*<locals>\.Box",
        reason="a `class` statement in compiled code breaks, and the class it builds is a new object on "
               "every call: the frame resumed after it guards on the class's identity, so every call "
               "recompiles; DYN204 reports it when the code after the statement uses the class, and "
               "misses it where the analysis takes the resumed frame for one Dynamo skips"),
    # ---- recompile hazards reported where Dynamo does not recompile
    KnownLimit(
        "recompile-fp", provenance=("item", "random", "time", "perf_counter", "equal", "allclose"),
        detail="DYN204",
        reason="the value from .item(), random.random(), time.time() / perf_counter() or torch.equal / "
               "allclose (all break in Dynamo 2.13) lives on in the resumed frame, but nothing there "
               "guards on it: it is only passed through (stored and returned, which needs no guard), or "
               "that frame runs eagerly because a later break lies in a loop, or the value happened to be "
               "the same on the three calls; DYN204 reports every such value"),
    KnownLimit(
        "recompile-fp", provenance="nonzero", detail="DYN204",
        reason="the number of rows `nonzero()` found is read after the break on it, but the frame that "
               "resumes there does no graph operation (the number is packed and returned through a "
               "dataclass or a helper of another module, which the analysis counts as work), so Dynamo "
               "skips it; or the three calls happened to find as many rows"),
    KnownLimit(
        "recompile-fp", detail="DYN207",
        reason="a slice bounded by a 0-d tensor (`h.reshape(-1)[:p.v]`) breaks at the `.item()` Dynamo needs "
               "for the bound, and Dynamo traces nothing of the frame after it (it runs the rest eagerly), "
               "so a later `while` whose test compares a counter with a tensor guards on nothing; the "
               "analysis takes that break for one Dynamo resumes after, and DYN207 reports the loop"),
    KnownLimit(
        "recompile-fp", detail="DYN206",
        reason="a graph break inside a loop of the entry point makes Dynamo run its whole frame eagerly, "
               "so the int argument that varies is guarded nowhere; DYN206 still reports it, because "
               "where the argument reaches a function that eager frame calls, that function is compiled "
               "as a frame of its own and does recompile (measured: silencing DYN206 there lost 3 "
               "recompiles for 1 false alarm in 400 programs)"),
)


def explain(d: Disagreement) -> str | None:
    """The reason of the first known limit that matches ``d``; None when none does."""
    return next((k.reason for k in KNOWN_LIMITS if k.matches(d)), None)
