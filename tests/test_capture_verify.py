"""``fix --verify`` measures the capture-flags fix like any other: kept when Dynamo confirms it (the
break goes, the outputs stay equal), left out when the flag does not remove the break.  The measured
target is the patched compiled function, so it is compiled again under the file's own
``torch._dynamo.config.patch``."""
from __future__ import annotations

from conftest import requires_torch
from dynalint.config.settings import Settings

SCRIPT = """\
import torch


def step(x):
    n = x.sum().item()
    return torch.full((2,), n) + x[:2]


step = torch.compile(step, backend="eager")


def dynalint_inputs():
    return [(torch.arange(4.0),), (torch.arange(4.0) + 1,)]
"""
PATCHED = 'step = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(step, backend="eager"))'


def confirm(tmp_path, source: str):
    from dynalint.verify.api import confirm_fixes

    path = tmp_path / "script.py"
    path.write_text(source)
    return confirm_fixes(str(path), ["step"], None, Settings(), True, 120.0)


@requires_torch
def test_the_capture_fix_is_kept_when_dynamo_confirms_it(tmp_path):
    result = confirm(tmp_path, SCRIPT)
    assert [(f.fixer, f.code, f.line) for f in result.applied] == [("capture-flags", "DYN102", 5)]
    assert PATCHED in result.source
    assert len(result.before[0].breaks) == 1 and not result.after[0].breaks
    assert result.after[0].equal_to_original is True
    # and `check` no longer reports what the flag removed
    assert not [d for d in result.remaining if d.code == "DYN102"]


@requires_torch
def test_the_capture_fix_is_not_offered_when_the_break_stays(tmp_path):
    # with the flag the `.item()` stays in the graph and the branch on it breaks instead (one input
    # set: no recompile for the flag to save either)
    branching = SCRIPT.replace("    return torch.full((2,), n) + x[:2]\n",
                               "    if n > 3:\n        return x * 2\n    return x\n")
    branching = branching.replace(", (torch.arange(4.0) + 1,)]", "]")
    result = confirm(tmp_path, branching)
    assert not result.applied and result.source == branching
    # the analysis knows the flag only moves this break (to the branch), so the fix is not even offered
    assert result.rejected == []


@requires_torch
def test_the_patches_around_a_compiled_target_are_found():
    import torch

    from dynalint.verify.probe import dynamo_config_patches

    def f(x):
        return x

    compiled = torch.compile(f, backend="eager")
    patched = torch._dynamo.config.patch(capture_scalar_outputs=True)(compiled)
    twice = torch._dynamo.config.patch("capture_dynamic_output_shape_ops", True)(patched)
    assert dynamo_config_patches(compiled) == [] and dynamo_config_patches(f) == []
    assert [p.changes for p in dynamo_config_patches(twice)] == [
        {"capture_dynamic_output_shape_ops": True}, {"capture_scalar_outputs": True}]
    other = torch._inductor.config.patch(debug=True)(compiled)
    assert dynamo_config_patches(other) == []


@requires_torch
def test_with_bench_the_capture_flags_what_if_is_timed_too(tmp_path):
    """``--bench`` times the rerun under the capture flags like the original and the fixed code, and the
    report shows it beside them; it survives the measurement's JSON."""
    from dynalint.verify.api import Options, verify_targets
    import io

    from dynalint.verify.report_text import write
    from dynalint.verify.results import Measurement
    from dynalint.verify.targets import Ref

    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    report = verify_targets([Ref(str(path), "step")], Settings(), Options(fix=False, bench_calls=2))[0]
    original = report.devices[0].original
    flags = {w.remedy: w for w in original.what_if}["capture_flags"]
    assert flags.breaks == 0 and flags.outputs_equal is True
    assert flags.bench is not None and flags.bench.calls == 2 and flags.bench.steady_s > 0
    again = Measurement.from_json(original.to_json())
    assert {w.remedy: w for w in again.what_if}["capture_flags"].bench == flags.bench
    out = io.StringIO()
    write([report], out)
    assert any(line.split()[:1] == ["flags"] for line in out.getvalue().splitlines())
