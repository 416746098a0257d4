"""The verdict on a fix: confirmed when breaks or recompiles went down, none went up, and every output matched.

Also what counts as a problem for the exit status: a measurement that failed
(user code raised, hung or crashed), compiled outputs that differ from eager
ones, graph breaks or recompiles left in the code as it will run, or a fix
that was not confirmed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dynalint.verify.results import Measurement

CONFIRMED, NOT_CONFIRMED, UNCHANGED, NO_FIX, ERROR, SKIPPED = (
    "confirmed", "not confirmed", "unchanged", "no fix", "error", "skipped")


@dataclass
class Verdict:
    status: str
    reasons: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"status": self.status, "reasons": self.reasons, "problems": self.problems}


def _first_diff(m: Measurement, attr: str) -> str:
    for c in m.calls:
        d = getattr(c, attr)
        if d is not None and not d.equal:
            return f"input set {c.index}: {d.note or 'outputs differ'}"
    return ""


def improvement(before: list[Measurement], after: list[Measurement]) -> tuple[bool, list[str]]:
    """Whether ``after`` is confirmed against ``before`` (same targets, same order), and why (not)."""
    reasons = []
    failed = [m for m in after if m.status not in ("ok", "skipped")]
    if failed:
        return False, [f"the fixed code {m.status}: {m.message}" for m in failed]
    b_breaks = sum(len(m.breaks) for m in before)
    a_breaks = sum(len(m.breaks) for m in after)
    b_rec = sum(len(m.recompiles) for m in before)
    a_rec = sum(len(m.recompiles) for m in after)
    ok = True
    for m in after:
        if m.equal_to_original is False:
            ok = False
            reasons.append(f"outputs changed against the original ({_first_diff(m, 'vs_original')})")
        if m.outputs_equal is False:
            ok = False
            reasons.append(f"compiled outputs differ from eager ({_first_diff(m, 'compiled_vs_eager')})")
    counts = f"breaks {b_breaks} -> {a_breaks}, recompiles {b_rec} -> {a_rec}"
    broken = next((m for m in before if m.compile_failed), None)
    if broken is not None:  # nothing compiled before: the fix makes it compile
        reasons.insert(0, f"the original failed to compile ({broken.message}); the fixed code compiles "
                          f"(breaks {a_breaks}, recompiles {a_rec})")
    elif a_breaks > b_breaks or a_rec > b_rec:
        ok = False
        reasons.append(f"{counts}: something went up")
    elif a_breaks == b_breaks and a_rec == b_rec:
        ok = False
        reasons.append(f"{counts}: nothing went down")
    else:
        reasons.insert(0, counts)
    if ok:
        n = sum(len(m.calls) for m in after)
        counts = [m.bitwise_count("vs_original") for m in after]
        same, compared = sum(c[0] for c in counts), sum(c[1] for c in counts)
        bits = f" (bitwise on {same} of {compared})" if compared else ""
        reasons.append(f"outputs equal on {n} input set{'s' * (n != 1)}{bits}")
    return ok, reasons


def judge(original: Measurement, fixed: Measurement | None, fix_note: str | None = None,
          fix_lines: list[int] | None = None) -> Verdict:
    """The verdict for one target; ``fix_lines`` are the lines the file's fixes start on.

    A fixed file whose fixes all lie outside the code the stream ran, and that measures the
    same with the same outputs, is *unchanged* for this target rather than not confirmed.
    """
    if original.status == "skipped":
        return Verdict(SKIPPED, [original.message])
    if original.status != "ok":
        hint = mode_hint(original)
        return Verdict(ERROR, [original.message] + ([hint] if hint else []),
                       [f"{original.variant}: {original.status}: {original.message}"])
    if fixed is None:
        v = Verdict(NO_FIX, [fix_note or "no fix applies"])
        v.problems = _problems(original)
        return v
    ok, reasons = improvement([original], [fixed])
    if ok:
        return Verdict(CONFIRMED, reasons, _problems(fixed))
    same = (len(fixed.breaks), len(fixed.recompiles)) == (len(original.breaks), len(original.recompiles))
    outputs_kept = fixed.status == "ok" and fixed.equal_to_original is not False and fixed.outputs_equal is not False
    ran = [tuple(r) for r in original.executed]
    if same and outputs_kept and fix_lines is not None and not any(a <= ln <= b for ln in fix_lines for a, b in ran):
        return Verdict(UNCHANGED, ["the fixes lie outside the code this stream runs"], _problems(original))
    return Verdict(NOT_CONFIRMED, reasons, ["fix not confirmed: " + "; ".join(reasons)] + _problems(original))


#: What torch raises when code calls ``backward()`` on a result computed under ``torch.no_grad()``.
_NEEDS_GRAD = ("does not require grad", "does not have a grad_fn", "element 0 of tensors")


def mode_hint(m: Measurement) -> str | None:
    """A training step measured in eval mode (under ``no_grad``) fails on every call: say what to do."""
    if m.mode == "eval" and m.status == "error" and any(p in m.message for p in _NEEDS_GRAD):
        return "hint: the target computes gradients (it calls backward()); measure it with --mode train"
    return None


def slower_note(speedup: dict[str, float] | None, status: str) -> str | None:
    """A confirmed fix that made the code slower (``speedup`` is original / fixed time)."""
    if status != CONFIRMED or not speedup:
        return None
    slower = [f"{what.replace('_', ' ')} {ratio:.2f}x" for what, ratio in speedup.items() if ratio < 1]
    if not slower:
        return None
    return f"the confirmed fix is slower ({', '.join(slower)}, original / fixed): fewer breaks did not make it faster"


def _problems(m: Measurement) -> list[str]:
    out = []
    if m.breaks:
        out.append(f"{len(m.breaks)} graph break{'s' * (len(m.breaks) != 1)}")
    if m.recompiles:
        out.append(f"{len(m.recompiles)} recompile{'s' * (len(m.recompiles) != 1)}")
    if m.outputs_equal is False:
        out.append(f"compiled outputs differ from eager ({_first_diff(m, 'compiled_vs_eager')})")
    if m.cost is not None and m.cost.limit_hit:
        out.append(f"hit the recompile limit ({m.cost.recompile_limit}): fell back to eager")
    return out
