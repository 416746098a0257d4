"""``dynalint verify`` end to end on the small modules of tests/verify_cases, with real Dynamo.

Every measurement runs in a worker process; they share one zygote per test
session, so each costs about a second after the first.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from conftest import requires_torch
from dynalint.adapters.cli import main
from dynalint.config.settings import Settings
from dynalint.verify.api import Options, confirm_fixes, verify_targets
from dynalint.verify.fixed import fix_engine_available
from dynalint.verify.targets import Ref

pytestmark = requires_torch

CASES = os.path.join(os.path.dirname(__file__), "verify_cases")
needs_fixers = pytest.mark.skipif(not fix_engine_available(), reason="the fix engine is not installed yet")


def case(name: str) -> str:
    return os.path.join(CASES, name + ".py")


def verify(file: str, name: str, **options) -> list:
    return verify_targets([Ref(case(file), name)], Settings(), Options(**options))[0].devices


@pytest.fixture(scope="module")
def branchy():
    return verify("branchy", "Clipper", unsafe=True)[0]


def test_tensor_branch_breaks_before(branchy):
    o = branchy.original
    assert o.status == "ok" and o.kind == "module class" and o.n_calls == 3
    assert [(b.line, b.gb_type, b.gb_id) for b in o.breaks] == [(13, "Data-dependent branching", "GB0170")]
    assert o.graph_count == 2  # one graph before the break, one in the resume function
    assert o.outputs_equal is True
    assert [d.code for d in branchy.prediction.confirmed] == ["DYN101"]
    assert not branchy.prediction.missed and not branchy.prediction.not_confirmed
    assert [c.status for c in o.calls][0] == "compile"


@needs_fixers
def test_tensor_branch_fixed_has_fewer_breaks_and_equal_outputs(branchy):
    f = branchy.fixed
    assert f is not None and f.status == "ok"
    assert len(f.breaks) < len(branchy.original.breaks)
    assert f.graph_count == 1
    assert f.equal_to_original is True and f.outputs_equal is True
    assert all(c.vs_original is not None and c.vs_original.equal for c in f.calls)
    assert branchy.verdict.status == "confirmed"


def test_mutated_global_recompiles_with_global_guard():
    d = verify("mutated_global", "Scaled")[0]
    o = d.original
    assert o.status == "ok" and not o.breaks
    assert len(o.recompiles) == 3
    assert {r.category for r in o.recompiles} == {"global"}
    assert all("G['scale']" in r.guards[0] for r in o.recompiles)
    assert [c.status for c in o.calls] == ["compile", "recompile", "recompile", "recompile"]
    assert o.hit_rate == 0.0
    assert o.cost.f_fail == 1.0 and o.cost.t_rebuild_s > 0 and o.cost.t_guard_s > 0
    assert d.prediction.recompile_predicted and d.prediction.recompile_observed
    assert "3 recompiles" in d.verdict.problems


def test_mutated_global_after_fix_stops_recompiling_with_equal_outputs():
    d = verify("mutated_global", "Scaled", unsafe=True)[0]
    # global-to-tensor: the global becomes a 0-d tensor updated in place, so no value guard trips
    assert d.fixed is not None and d.fixed.equal_to_original is True
    assert len(d.original.recompiles) == 3 and len(d.fixed.recompiles) == 0
    assert d.verdict.status == "confirmed"


def test_recompile_limit_falls_back_to_eager():
    o = verify("counter", "StepCounter", fix=False)[0].original
    assert o.cost.limit_hit and o.cost.recompile_limit == 8
    assert [c.status for c in o.calls][-3:] == ["eager"] * 3 and o.cost.eager_fallback_calls == 3
    assert {r.category for r in o.recompiles} == {"attribute"}
    assert "hit the recompile limit (8): fell back to eager" in verify_problems(o)


def verify_problems(m) -> list:
    from dynalint.verify.verdict import judge

    return judge(m, None).problems


def test_forward_that_raises_is_reported():
    o = verify("raises", "Broken")[0].original
    assert o.status == "error"
    assert "ValueError: unsupported input of shape (2,)" in o.message and "raises.py:11 in check" in o.message
    assert "raises.py" in o.traceback and "line 11" in o.traceback
    assert "site-packages" not in o.traceback
    assert not any(f"verify{os.sep}{m}.py" in o.traceback for m in ("worker", "measure", "phases", "stream"))


def test_hang_is_cut_by_the_timeout():
    o = verify("hangs", "spin", timeout=3)[0].original
    assert o.status == "timeout"
    assert "eager phase, call 0" in o.message
    assert "hangs.py" in o.traceback  # where it hung, from the stack dump


def test_crash_is_reported():
    o = verify("crashes", "segfault")[0].original
    assert o.status == "crash"
    assert "SIGSEGV" in o.message and "eager" in o.message
    assert "crashes.py" in o.traceback


def test_size_recompiles_and_what_if():
    o = verify("shapes", "pooled")[0].original
    assert [r.category for r in o.recompiles] == ["shape"]
    remedies = {w.remedy: w for w in o.what_if}
    assert remedies["mark_dynamic"].recompiles == 0 and remedies["mark_dynamic"].saved == 1
    assert remedies["pad8"].recompiles == 0 and remedies["pad8"].saved == 1
    assert remedies["pad8"].dims == ["args[0] dim 1"]


def test_factory_with_separate_inputs_and_keyword_arguments():
    d = verify("factory", "build_gate", inputs=f"{case('factory_inputs')}::gate_inputs")[0]
    o = d.original
    assert o.status == "ok", o.message
    assert o.kind == "factory" and o.n_calls == 3
    assert o.outputs_equal is True and not o.breaks
    assert len(o.recompiles) <= 1  # a changing float kwarg: at most one recompile, then it is dynamic


def test_train_mode_compares_outputs_and_gradients():
    o = verify("branchy", "Clipper", mode="train", fix=False)[0].original
    assert o.status == "ok" and o.mode == "train"
    assert o.outputs_equal is True
    assert len(o.breaks) == 1


def test_cuda_is_skipped_cleanly_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: test_cuda_measures_on_the_gpu covers it")
    d = verify("mutated_global", "Scaled", devices=("cuda",))[0]
    assert d.original.status == "skipped" and "CUDA is not available" in d.original.message
    assert d.verdict.status == "skipped" and not d.verdict.problems


@pytest.mark.skipif("not __import__('torch').cuda.is_available()", reason="needs a CUDA device")
def test_cuda_measures_on_the_gpu():
    d = verify("branchy", "Clipper", devices=("cuda",), unsafe=True)[0]
    assert d.original.status == "ok" and d.original.device == "cuda"
    assert len(d.original.breaks) == 1 and d.original.outputs_equal is True


def test_cli_json_html_and_exit_status(tmp_path, capsys):
    html = tmp_path / "report.html"
    rc = main(["verify", f"{case('mutated_global')}::Scaled", "--no-fix", "--format", "json", "--html", str(html)])
    assert rc == 1  # recompiles are problems
    data = json.loads(capsys.readouterr().out)
    (target,) = data["targets"]
    original = target["devices"][0]["original"]
    assert original["n_recompiles"] == 3 and original["recompiles"][0]["categories"][0] == "global"
    assert target["devices"][0]["verdict"]["status"] == "no fix"
    page = html.read_text()
    assert page.count('class="c recompile"') == 3 and page.count('class="c compile"') == 1
    assert "G[&#x27;scale&#x27;] == 1" in page and "<script" not in page


def test_cli_usage_errors(capsys):
    assert main(["verify", "nowhere.py::X"]) == 2
    assert main(["verify", f"{case('raises')}::Missing"]) == 2
    assert main(["verify", f"{case('factory')}::build_gate"]) == 2  # no dynalint_inputs() there
    err = capsys.readouterr().err
    assert "no such file" in err and "'Missing' is not defined" in err and "dynalint_inputs" in err
    assert "Traceback" not in err


@needs_fixers
def test_confirm_fixes_keeps_only_what_dynamo_confirms(tmp_path):
    path = tmp_path / "two_branches.py"
    shutil.copy(case("two_branches"), path)
    before = path.read_text()
    result = confirm_fixes(str(path), ["Damped"], None, Settings(), True, 60.0)
    assert path.read_text() == before  # the user's file is not written
    assert [(f.code, f.line) for f in result.applied] == [("DYN101", 8)]
    assert [(f.code, f.line) for f in result.rejected] == [("DYN101", 16)]
    assert "do not run" in result.rejected[0].reasons[0]
    assert "torch.where(x.sum() > 0" in result.source and "if x.mean() > 0:" in result.source
    assert len(result.before[0].breaks) == 1 and not result.after[0].breaks
    assert [d.code for d in result.remaining] == ["DYN101"]
    assert "fix left out: it lies in code the targets' input streams do not run" in result.remaining[0].message


@needs_fixers
def test_confirm_fixes_of_a_helper_file_measured_through_its_importer(tmp_path):
    for name in ("helpers_branch", "uses_helper"):
        shutil.copy(case(name), tmp_path / f"{name}.py")
    helper = tmp_path / "helpers_branch.py"
    result = confirm_fixes(str(helper), [f"{tmp_path / 'uses_helper.py'}::Limited"], None, Settings(), True, 60.0)
    assert [(f.code, f.line) for f in result.applied] == [("DYN101", 6)]
    assert "torch.where" in result.source and "torch.where" not in helper.read_text()
    assert len(result.before[0].breaks) == 1 and not result.after[0].breaks
    assert result.after[0].equal_to_original is True


LATER_ROUND = """\
import torch


def f(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x - 1
    if y.mean() > 1:
        z = y[y > 0].sum()
    else:
        z = y.sum()
    return z


def dynalint_inputs():
    return [(torch.randn(8),), (torch.randn(8) + 1,)]
"""


@needs_fixers
def test_confirm_fixes_reports_a_later_rounds_fix_at_its_line_in_the_file_as_written(tmp_path):
    """The second branch's fix overlaps the masked sum's, so it is measured in a later round, in a text
    the first branch's fix made a line shorter: it is reported where ``fix`` reports it, at the line
    of the file as the user wrote it."""
    from dynalint.engine.fixing import fix_source

    path = tmp_path / "later.py"
    path.write_text(LATER_ROUND)
    expected = [(a.code, a.fixer, a.line, a.column)
                for a in fix_source(LATER_ROUND, str(path), Settings(), unsafe=True).applied]
    assert ("DYN101", "branch-to-cond", 9, 8) in expected
    result = confirm_fixes(str(path), ["f"], None, Settings(), True, 60.0)
    assert sorted((a.code, a.fixer, a.line, a.column) for a in result.applied) == sorted(expected)
    assert sorted((o.code, o.line) for o in result.confirmed) == sorted((c, ln) for c, _, ln, _ in expected)
    assert "torch.cond" in result.source and not result.rejected


def test_an_exception_only_the_compiled_run_raised_is_shown(capsys):
    from dynalint.verify import report_text

    reports = verify_targets([Ref(case("compiled_raises"), "picky")], Settings(), Options(fix=False, what_if=False))
    o = reports[0].devices[0].original
    assert o.outputs_equal is False
    assert "only the compiled call raised: TorchRuntimeError" in o.calls[0].compiled_vs_eager.note
    report_text.write(reports, sys.stdout)
    text = capsys.readouterr().out
    assert "compiled RAISED" in text and "DIFFER" not in text
    # every compiled call raised while the eager calls did not: the run is an error that names the exception
    assert reports[0].devices[0].original.status == "error"
    assert "every compiled call raised (call 0: TorchRuntimeError" in text


def test_a_training_step_in_eval_mode_says_to_use_train_mode(capsys):
    from dynalint.verify import report_text

    reports = verify_targets([Ref(case("train_step"), "Step")], Settings(), Options(fix=False, what_if=False))
    d = reports[0].devices[0]
    assert d.original.status == "error" and "--mode train" in " ".join(d.verdict.reasons)
    report_text.write(reports, sys.stdout)
    assert "hint: the target computes gradients (it calls backward()); measure it with --mode train" \
        in capsys.readouterr().out
    train = verify_targets([Ref(case("train_step"), "Step")], Settings(),
                           Options(fix=False, what_if=False, mode="train"))[0].devices[0]
    assert train.original.status == "ok" and "--mode train" not in " ".join(train.verdict.reasons)


@needs_fixers
def test_html_marks_wrong_outputs_and_fixes_in_code_the_stream_did_not_run(tmp_path):
    from dynalint.verify import report_html

    wrong = verify_targets([Ref(case("compiled_raises"), "picky")], Settings(), Options(fix=False, what_if=False))
    page = report_html.render(wrong)
    assert 'class="c error wrong"' in page and "outputs differ (compiled vs eager)" in page
    path = tmp_path / "two_branches.py"
    shutil.copy(case("two_branches"), path)
    fixed = verify_targets([Ref(str(path), "Damped")], Settings(), Options(unsafe=True, what_if=False))
    page = report_html.render(fixed)
    ran, unrun = page.split("Fixes in code this stream does not run")
    assert "line 8 DYN101" in ran and "line 16 DYN101" in unrun and "line 16" not in ran


def test_a_break_logged_on_a_shifted_line_is_marked_uncertain_and_not_matched():
    """On Python 3.11 the `print` break after two split method chains is logged 4 lines down, past
    the function: it is marked uncertain, and the DYN105 diagnostic on the real line is neither
    confirmed nor "not confirmed"."""
    import linecache

    d = verify_targets([Ref(case("chained"), "chained")], Settings(), Options(fix=False, what_if=False))[0].devices[0]
    breaks = d.original.breaks
    assert [b.line for b in breaks][:1] == [8] and not breaks[0].uncertain and len(breaks) == 2
    printed = breaks[1]
    shifted = "print(" not in linecache.getline(printed.file, printed.line)
    assert printed.uncertain is shifted
    if sys.version_info[:2] == (3, 11):
        assert shifted and printed.line == 20  # measured with torch 2.13
    p = d.prediction
    if shifted:
        assert [x.line for x in p.uncertain] == [16] and not p.not_confirmed and not p.missed
    else:
        assert sorted(x.line for x in p.confirmed) == [8, 16]


def test_capture_flags_what_if_on_data_dependent_breaks():
    o = verify("data_dependent", "routed")[0].original
    assert len(o.breaks) == 2
    flags = {w.remedy: w for w in o.what_if}["capture_flags"]
    assert flags.dims == ["capture_scalar_outputs", "capture_dynamic_output_shape_ops"]
    assert flags.breaks == 0 and flags.breaks_saved == 2 and flags.outputs_equal is True


def test_no_capture_flags_what_if_for_a_break_dynamo_calls_fundamental(branchy):
    """A branch on a tensor's value breaks under Dynamo's capture settings too (its hint calls the break
    fundamental), so the stream is not rerun with them; Dynamo, run here, confirms the break stays."""
    import importlib.util

    import torch

    from dynalint.verify.probe import DynamoLog

    o = branchy.original
    assert [(b.line, b.fundamental) for b in o.breaks] == [(13, True)]
    assert "capture_flags" not in {w.remedy for w in o.what_if}
    spec = importlib.util.spec_from_file_location("dynalint_fundamental_branchy", case("branchy"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    try:
        with torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True), \
                DynamoLog([case("branchy")]) as log, torch.no_grad():
            torch.compile(module.Clipper().eval(), backend="eager")(torch.randn(4, 8) * 10)
    finally:
        torch._dynamo.reset()
    assert [(b.line, b.fundamental) for b in log.breaks] == [(13, True)]


def test_no_capture_flags_what_if_without_breaks():
    o = verify("shapes", "pooled")[0].original
    assert not o.breaks and "capture_flags" not in {w.remedy for w in o.what_if}
