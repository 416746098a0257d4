"""``dynalint check`` against real Dynamo on generated programs (the differential accuracy fuzzer).

The default corpus is small and drawn the same way every time, so that CI is deterministic;
``DYNALINT_ACCURACY_N=2000`` draws a bigger one, ``DYNALINT_ACCURACY_SEED=7`` a fresh one
(``benchmarks/accuracy_fuzz.py`` reports such runs grouped by idiom).  The floors lie a little
below what the analysis scored on the default corpus when they were set: a fall below one is a
regression.  With another corpus (N or SEED set) only the known-limits check applies: the floors
belong to the default.
"""
from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from accuracy.compare import Disagreement, compare, run_dynalint  # noqa: E402
from accuracy.dynamo_run import Observed, Recompiled, observe  # noqa: E402
from accuracy.fuzz import group_key, run_corpus  # noqa: E402
from accuracy.generate import ProgramSpec, Snippet, build, draw_specs  # noqa: E402
from accuracy.known_limits import KNOWN_LIMITS, explain  # noqa: E402

DEFAULT_N = 80
N = int(os.environ.get("DYNALINT_ACCURACY_N", DEFAULT_N))
SEED = int(os.environ["DYNALINT_ACCURACY_SEED"]) if os.environ.get("DYNALINT_ACCURACY_SEED") else None

FLOORS = {
    # set on the default corpus when it scored 0.939, 0.973, 1.000, 0.474; the recompile recall floor
    # raised when DYN207 and range() bounds brought it to 0.921 (2,000 fresh programs, seeds 301-305:
    # 0.999, 0.999, 0.974, 0.854); a margin below, as another hypothesis release draws another corpus.
    # The productions from real code (skipped standard-library calls, torch.equal/allclose, randomness,
    # class statements, files, floats and **cfg through the compiled handle, capture flags) drew a new
    # corpus that scored 0.979, 0.966, 1.000, 0.675: its recompile misses are guards of resumed frames
    # the known limits list (a class object's identity, str() of a tensor, the bool of torch.equal)
    "break precision": 0.90,
    "break recall": 0.95,
    "recompile precision": 0.90,
    "recompile recall": 0.60,
}

pytestmark = [pytest.mark.filterwarnings("ignore:Dynamo does not know how to trace"),
              pytest.mark.filterwarnings("ignore:value:UserWarning")]  # the programs' warnings.warn


@pytest.fixture(scope="module")
def measured():
    programs, result = run_corpus(draw_specs(N, SEED))
    return programs, result


def _describe(d: Disagreement, programs) -> str:
    return f"{d.program} {d.file}:{d.line} {' / '.join(k for k in group_key(d, programs) if k)} [{d.detail}]"


def test_programs_run(measured):
    """Nearly every composition runs eagerly and compiled: the corpus measures what it generates."""
    programs, result = measured
    assert result.measured >= 0.95 * len(programs), result.invalid[:5]


def test_every_disagreement_is_a_known_limit(measured):
    programs, result = measured
    by_name = {p.name: p for p in programs}
    unexplained = [_describe(d, by_name) for d in result.disagreements if explain(d) is None]
    head = "disagreements with Dynamo not in tests/accuracy/known_limits.py:\n"
    assert not unexplained, head + "\n".join(unexplained)


@pytest.mark.skipif(N != DEFAULT_N or SEED is not None, reason="floors belong to the default corpus")
def test_precision_and_recall_hold(measured):
    _, result = measured
    scores = {
        "break precision": result.breaks.precision,
        "break recall": result.breaks.recall,
        "recompile precision": result.recompiles.precision,
        "recompile recall": result.recompiles.recall,
    }
    below = {k: f"{v:.3f} < {FLOORS[k]}" for k, v in scores.items() if v < FLOORS[k]}
    assert not below, f"{below} (breaks {result.breaks}; recompiles {result.recompiles})"


def test_runner_reads_dynamos_log(tmp_path):
    """The measurement sees Dynamo's breaks where they are: ``print`` in the entry point breaks on its
    line, arithmetic on an int argument does not, and an int argument that differs between calls
    recompiles."""
    prog = build(ProgramSpec(snippets=(Snippet("int_arg", "arith", "top", "none"),
                                       Snippet("module_const", "print", "top", "none"))), "runner_probe")
    prog.write(str(tmp_path))
    obs = observe(prog, str(tmp_path))
    assert obs.error is None
    lines = prog.files["model.py"].splitlines()
    printed = next(i for i, ln in enumerate(lines, 1) if "print(" in ln)
    assert obs.breaks == {"model.py": {printed}}
    assert any("k" in g for r in obs.recompiles for g in r.guards)


def test_known_limits_each_match_something_specific():
    """A limit names a kind Dynamo and the analysis can disagree on, and a reason."""
    kinds = {"break-fn", "break-fp", "recompile-fn", "recompile-fp"}
    for limit in KNOWN_LIMITS:
        assert limit.kind in kinds and len(limit.reason) > 40
        fields = (limit.provenance, limit.use, limit.context, limit.container, limit.detail)
        assert any(f is not None for f in fields), limit


def test_lines_dynamo_never_traced_are_not_scored(tmp_path):
    """A break in a loop makes Dynamo run the whole frame eagerly: a `print` after the loop is never
    traced, so `check` does not report it, and a diagnostic there would be neither a hit nor a false
    alarm."""
    spec = ProgramSpec(snippets=(Snippet("random", "arith", "loop", "none"),
                                 Snippet("module_const", "print", "top", "none")), k_varies=False)
    program = build(spec, "shadow_probe")
    program.write(str(tmp_path))
    observed = {program.name: observe(program, str(tmp_path))}
    diags = run_dynalint(str(tmp_path))
    lines = program.files["model.py"].splitlines()
    printed = next(i for i, ln in enumerate(lines, 1) if "print(" in ln)
    assert printed not in {d["line"] for d in diags[program.name]["model.py"] if d["kind"] == "graph-break"}
    diags[program.name]["model.py"].append({"line": printed, "code": "DYN105", "kind": "graph-break"})
    result = compare([program], observed, diags)
    assert result.shadowed >= 1
    assert not [d for d in result.disagreements if d.kind == "break-fp" and d.line == printed]


def test_a_recompile_finding_on_a_line_dynamo_never_traced_is_scored():
    """A helper of another file that the compiled function calls after a loop whose body breaks is a
    frame of its own, and the finding about its recompile lies at the call, in the part of the function
    Dynamo runs eagerly: the program's recompile still counts it (as a false alarm where nothing
    recompiles)."""
    spec = ProgramSpec(snippets=(Snippet("random", "arith", "loop", "none"),
                                 Snippet("item", "arith", "helper_other", "tuple")), k_varies=False)
    program = build(spec, "eager_call_probe")
    lines = program.files["model.py"].splitlines()
    loop = next(i for i, ln in enumerate(lines, 1) if "random.random()" in ln)
    call = next(i for i, ln in enumerate(lines, 1) if "= helper1(" in ln)
    assert loop < call
    diags = {program.name: {"model.py": [{"line": call, "code": "DYN204", "kind": "recompile"}]}}
    observed = Observed(program.name, breaks={"model.py": {loop}}, traced={"model.py": set(range(1, loop + 1))},
                        recompiles=[Recompiled("helper1", "helpers.py", ("p1[1] == 2",))])
    assert compare([program], {program.name: observed}, diags).recompiles.tp == 1
    observed.recompiles.clear()
    assert compare([program], {program.name: observed}, diags).recompiles.fp == 1


def test_scores_per_production_add_up(measured):
    """Each break line counts once for one value of every snippet field (or as scaffolding), and each
    program once for one value of every program field: the per-production scores partition the totals."""
    _, result = measured
    for field in ("provenance", "use", "context", "container"):
        parts = [s for k, s in result.breaks_by.items() if k.startswith(field + "=") or k == "scaffold"]
        for outcome in ("tp", "fp", "fn"):
            total = getattr(result.breaks, outcome)
            assert sum(getattr(s, outcome) for s in parts) == total, (field, outcome)
    for field in ("entry", "call_style", "number", "capture"):
        parts = [s for k, s in result.recompiles_by.items() if k.startswith(field + "=")]
        for outcome in ("tp", "fp", "fn", "tn"):
            assert sum(getattr(s, outcome) for s in parts) == getattr(result.recompiles, outcome), field


def test_a_repeated_break_is_seen_on_each_line(tmp_path):
    """Dynamo logs a break it has logged before (same kind, same innermost location: `copy.deepcopy`
    breaks inside copy.py) without the user's stack; the runner still sees it on its program line."""
    prog = build(ProgramSpec(snippets=(Snippet("deepcopy", "arith", "top", "none"),
                                       Snippet("deepcopy", "arith", "after_break", "none"))), "dup_probe")
    prog.write(str(tmp_path))
    obs = observe(prog, str(tmp_path))
    assert obs.error is None
    lines = prog.files["model.py"].splitlines()
    copies = {i for i, ln in enumerate(lines, 1) if "copy.deepcopy(" in ln}
    assert len(copies) == 2 and copies <= obs.breaks["model.py"]


def test_programs_that_set_a_capture_flag_do_not_leak_it(tmp_path):
    """A program that turns a capture flag on at import is measured with it, and the programs measured
    after it without it: `.item()` breaks only in the second."""
    import torch

    item = Snippet("item", "arith", "top", "none")
    flagged = build(ProgramSpec(snippets=(item,), number="float", call_style="kwargs",
                                capture="config:capture_scalar_outputs"), "flag_probe")
    plain = build(ProgramSpec(snippets=(item,)), "plain_probe")
    for prog in (flagged, plain):
        prog.write(str(tmp_path))
    seen = [observe(prog, str(tmp_path)) for prog in (flagged, plain)]
    assert [o.error for o in seen] == [None, None]
    assert not seen[0].breaks and seen[1].breaks
    assert torch._dynamo.config.capture_scalar_outputs is False
