"""The pieces of ``dynalint verify`` that need no worker: references, guard kinds, input sets,
output comparison, prediction matching, verdicts, and the promise not to import torch."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import requires_torch
from dynalint.core.diagnostics import Diagnostic
from dynalint.verify.guards import classify, split_guard
from dynalint.verify.prediction import compare
from dynalint.verify.results import BreakSite, CallRecord, Measurement, OutputDiff, RecompileEvent
from dynalint.verify.targets import TargetError, check_defined, parse_ref
from dynalint.verify.verdict import improvement, judge


def test_parse_ref(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch\nclass Net: pass\ndef make(): pass\n")
    ref = parse_ref(f"{f}::Net")
    assert ref.name == "Net" and ref.path == str(f)
    check_defined(ref, f.read_text())
    for bad, words in ((f"{f}", "not FILE::NAME"), (f"{f}::1x", "not a Python name"),
                       ("missing.py::X", "no such file")):
        with pytest.raises(TargetError, match=words):
            parse_ref(bad)
    with pytest.raises(TargetError, match="not defined"):
        check_defined(parse_ref(f"{f}::Other"), f.read_text())


@pytest.mark.parametrize("text, category", [
    ("tensor 'x' size mismatch at index 1. expected 3, actual 5", "shape"),
    ("tensor 'L['x']' stride mismatch at index 0. expected 1, actual 4", "shape"),
    ("tensor 'x' dtype mismatch. expected Float, actual Double", "dtype"),
    ("tensor 'x' device mismatch. expected cpu, actual cuda:0", "device"),
    ("tensor 'x' requires_grad mismatch. expected requires_grad=0", "grad"),
    ("GLOBAL_STATE changed: grad_mode", "grad"),
    ("G['scale'] == 1      # return x * scale  # m.py:8 in f", "global"),
    ("G['Cfg'].scale == 1  # y = x * Cfg.scale  # m.py:9 in f", "global"),
    ("s.steps == 1         # s.steps += 1  # m.py:9 in forward (HINT: ...)", "attribute"),
    ("k == 1               # y = x * N + k  # m.py:8 in f", "argument"),
    ("len(feats) == 2      # for f in feats[1:]:  # m.py:7 in f", "argument"),
    ("___check_obj_id(G['MODE'], 140000)", "global"),
    ("something unexpected", "other"),
])
def test_guard_categories(text, category):
    assert classify(text, frozenset({"s", "x", "k", "feats"}), frozenset({"s"})).category == category


def test_split_guard_keeps_the_user_code():
    guard, user = split_guard("G['scale'] == 1                                # return x * scale  # m.py:8 in f")
    assert guard == "G['scale'] == 1" and user.startswith("return x * scale")


@requires_torch
def test_input_set_forms():
    import torch

    from dynalint.verify.stream import normalize

    x = torch.zeros(2)
    assert normalize((x, 3), constructs=False, index=0).args == (x, 3)
    assert normalize(x, constructs=False, index=0).args == (x,)
    c = normalize(((4,), (x,)), constructs=True, index=0)
    assert c.init_args == (4,) and c.args == (x,)
    c = normalize(({"dim": 4}, {"x": x}), constructs=True, index=0)
    assert c.init_kwargs == {"dim": 4} and c.kwargs == {"x": x}
    c = normalize({"init": (4,), "args": (x,), "kwargs": {"scale": 2.0}}, constructs=True, index=0)
    assert c.init_args == (4,) and c.kwargs == {"scale": 2.0}
    c = normalize((x, x), constructs=True, index=0)  # not (ctor, call): the call's arguments
    assert c.init_args == () and len(c.args) == 2
    assert normalize(((4,), (x,)), constructs=True, index=0).instance_key() == normalize(
        ((4,), (torch.ones(3),)), constructs=True, index=1).instance_key()


@requires_torch
def test_output_comparison_uses_dtype_tolerance():
    import torch

    from dynalint.verify.outputs import compare as compare_outputs, flatten

    a = torch.ones(4, dtype=torch.float16)
    assert compare_outputs(flatten(a + 5e-4), flatten(a)).equal  # within float16's tolerance
    d = compare_outputs(flatten(a.double() + 5e-4), flatten(a.double()))
    assert not d.equal and d.max_abs == pytest.approx(5e-4) and d.rtol == 1e-7
    assert not compare_outputs(flatten((a, 1)), flatten((a, 2))).equal
    assert not compare_outputs(flatten(torch.ones(3)), flatten(torch.ones(4))).equal
    nan = torch.tensor([float("nan"), 1.0])
    assert compare_outputs(flatten({"y": nan}), flatten({"y": nan.clone()})).equal
    assert not compare_outputs(flatten(torch.tensor([1, 2])), flatten(torch.tensor([1, 3]))).equal


@requires_torch
def test_output_comparison_reports_bitwise_equality_beside_the_tolerance():
    """Equal by assert_close's rule (NaN and inf in the same places), bitwise recorded beside it."""
    import torch

    from dynalint.verify.outputs import compare as compare_outputs, flatten

    x = torch.tensor([1.0, float("nan"), float("inf")])
    same = compare_outputs(flatten(x.clone()), flatten(x))
    assert same.equal and same.bitwise
    close = compare_outputs(flatten(x + torch.tensor([1e-7, 0.0, 0.0])), flatten(x))
    assert close.equal and not close.bitwise
    assert not compare_outputs(flatten(torch.tensor([1.0, 2.0])), flatten(torch.tensor([1.0, float("inf")]))).equal
    assert not compare_outputs(flatten(torch.tensor([float("-inf")])), flatten(torch.tensor([float("inf")]))).equal
    assert not compare_outputs(flatten(torch.tensor([1.0, float("nan")])), flatten(torch.tensor([1.0, 2.0]))).equal
    assert not compare_outputs(flatten(torch.ones(2)), flatten(torch.ones(2, dtype=torch.float64))).equal


def _m(breaks=0, recompiles=0, equal=True, vs_original=None, path="/x/m.py", variant="original"):
    m = Measurement(target="m.py::f", variant=variant, device="cpu", mode="eval", backend="eager",
                    source_path=path)
    m.breaks = [BreakSite(path, 10 + i, "f", "Data-dependent branching", "GB0170", "", False, 0)
                for i in range(breaks)]
    m.recompiles = [RecompileEvent(i + 1, "f", ["G['a'] == 1"], ["global"]) for i in range(recompiles)]
    m.calls = [CallRecord(0, "compile", 0.1, compiled_vs_eager=OutputDiff(equal),
                          vs_original=None if vs_original is None else OutputDiff(vs_original))]
    return m


def test_a_fix_that_makes_a_failed_compile_compile_is_an_improvement():
    """The original has nothing to compare (every compiled call raised, the eager calls did not): the fixed
    code improves on it when it compiles and its outputs equal the original's eager ones."""
    failed = _m(breaks=0)
    failed.status, failed.compile_failed = "error", True
    failed.message = "every compiled call raised (call 0: X)"
    ok, reasons = improvement([failed], [_m(breaks=1, vs_original=True)])
    assert ok and reasons[0].startswith("the original failed to compile (every compiled call raised")
    assert not improvement([failed], [_m(breaks=1, vs_original=False)])[0]
    still = _m()
    still.status, still.compile_failed = "error", True
    assert not improvement([failed], [still])[0]


def test_verdicts():
    assert judge(_m(breaks=2), _m(breaks=1, vs_original=True)).status == "confirmed"
    v = judge(_m(breaks=2), _m(breaks=0, vs_original=False))
    assert v.status == "not confirmed" and "outputs changed" in v.reasons[-1]
    assert judge(_m(breaks=1), _m(breaks=1, vs_original=True)).status == "not confirmed"
    assert not improvement([_m(breaks=2)], [_m(breaks=1, recompiles=1, vs_original=True)])[0]
    assert judge(_m(recompiles=2), _m(recompiles=0, vs_original=True)).status == "confirmed"
    v = judge(_m(), None, "no fix applies")
    assert v.status == "no fix" and not v.problems
    assert judge(_m(breaks=1), None).problems == ["1 graph break"]
    ran_elsewhere = _m(breaks=1)
    ran_elsewhere.executed = [[1, 20]]
    assert judge(ran_elsewhere, _m(breaks=1, vs_original=True), fix_lines=[40]).status == "unchanged"
    assert judge(ran_elsewhere, _m(breaks=1, vs_original=True), fix_lines=[12]).status == "not confirmed"
    crashed = _m()
    crashed.status, crashed.message = "crash", "the worker died"
    assert judge(crashed, None).status == "error"


def test_prediction_lines_up_diagnostics_with_breaks():
    source = "def f(x):\n" + "\n" * 8 + "    if x.sum() > 0:\n        x = x + 1\n    return x\n"
    m = _m(breaks=1)  # a break at line 10, the `if` header
    m.executed = [[1, 12]]

    def diag(line, code="DYN101", kind="graph-break"):
        return Diagnostic("m.py", line, 5, line, 9, code, kind, "msg")

    p = compare([diag(10), diag(11), diag(40)], m, source)
    assert [d.line for d in p.confirmed] == [10] and [d.line for d in p.not_confirmed] == [11]
    assert p.not_exercised == 1 and not p.missed and p.site_codes == {0: ["DYN101"]}
    assert [b.line for b in compare([], m, source).missed] == [10]


def test_measurement_round_trips_through_json():
    m = _m(breaks=1, recompiles=2, vs_original=True)
    back = Measurement.from_json(m.to_json())
    assert back.breaks == m.breaks and back.recompiles == m.recompiles
    assert back.calls[0].compiled_vs_eager == m.calls[0].compiled_vs_eager and back.hit_rate == 0.0


def test_cli_and_plugin_do_not_import_torch():
    code = ("import sys, dynalint.adapters.cli, dynalint.verify.cli, dynalint.verify.api, dynalint.verify.pytest_plugin, "
            "dynalint.verify.report_html; dynalint.adapters.cli.build_parser(); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@requires_torch
def test_large_module_state_is_kept_as_fingerprints(monkeypatch):
    import torch

    from dynalint.verify import outputs

    net = torch.nn.Linear(4, 4)
    monkeypatch.setattr(outputs, "STATE_COPY_LIMIT", 3)
    before = outputs.state_leaves(net, "")
    assert before["state:weight"].shape == (3,)  # a fingerprint, not a copy
    assert outputs.compare(outputs.state_leaves(net, ""), before).equal
    with torch.no_grad():
        net.weight[0, 0] += 1e-3
    diff = outputs.compare(outputs.state_leaves(net, ""), before)
    assert not diff.equal and diff.note.startswith("state:weight")


def test_recompiles_predicted_elsewhere_than_observed_say_the_causes_differ():
    from dynalint.core.diagnostics import Diagnostic
    from dynalint.verify.prediction import compare_files
    from dynalint.verify.report_text import recompile_causes

    source = "\n" * 20
    m = _m(recompiles=1)
    m.executed = [[1, 20]]
    m.recompiles[0].user_code = "return x * k  # x/m.py:9 in f"
    predicted_here = Diagnostic("/x/m.py", 9, 1, 9, 2, "DYN201", "recompile", "k is rebound")
    p = compare_files([("/x/m.py", [predicted_here], source)], m)
    assert p.recompile_predicted and not p.unpredicted_recompiles and recompile_causes(p) == ""
    elsewhere = Diagnostic("/x/m.py", 5, 1, 5, 2, "DYN201", "recompile", "j is rebound")
    p = compare_files([("/x/m.py", [elsewhere], source)], m)
    assert p.unpredicted_recompiles == ["m.py:9"]
    assert recompile_causes(p) == "; causes: missed m.py:9; extra m.py:5"


def test_recompile_causes_are_reported_as_matched_missed_and_extra_sets():
    from dynalint.core.diagnostics import Diagnostic
    from dynalint.verify.prediction import compare_files
    from dynalint.verify.report_text import recompile_causes

    m = _m(recompiles=3, path="/x/sampler.py")
    m.executed = [[1, 120]]
    for r, line in zip(m.recompiles, (83, 39, 102)):
        r.user_code = f"x = step(t)  # x/sampler.py:{line} in sample"
    predicted = [Diagnostic("/x/sampler.py", ln, 1, ln, 2, "DYN201", "recompile", "rebound") for ln in (39, 60)]
    p = compare_files([("/x/sampler.py", predicted, "\n" * 120)], m)
    assert p.matched_recompiles == ["sampler.py:39"]  # observed and predicted: never listed as a difference
    assert p.unpredicted_recompiles == ["sampler.py:83", "sampler.py:102"]
    assert p.extra_recompiles == ["sampler.py:60"]
    assert recompile_causes(p) == ("; causes: matched sampler.py:39; missed sampler.py:83, sampler.py:102; "
                                   "extra sampler.py:60")
    assert p.to_json()["recompile_causes"]["matched"] == ["sampler.py:39"]


def test_a_factory_in_one_file_is_predicted_by_the_file_that_defines_the_model():
    from dynalint.core.diagnostics import Diagnostic
    from dynalint.verify.prediction import compare_files

    m = _m(breaks=1, path="/x/build.py")
    m.breaks[0].file = "/x/model.py"  # the factory's file builds the model; the break is in the model's
    m.executed_files = {"/x/model.py": [[1, 20]]}
    d = Diagnostic("/x/model.py", 10, 1, 10, 2, "DYN101", "graph-break", "branch on a tensor")
    p = compare_files([("/x/build.py", [], "\n" * 20), ("/x/model.py", [d], "\n" * 20)], m)
    assert [x.line for x in p.confirmed] == [10] and not p.missed


def test_a_confirmed_fix_that_is_slower_says_so():
    from dynalint.verify.verdict import slower_note

    assert slower_note({"cold_start": 1.4, "steady_state": 1.1}, "confirmed") is None
    note = slower_note({"cold_start": 1.4, "steady_state": 0.8}, "confirmed")
    assert note is not None and "slower (steady state 0.80x" in note
    assert slower_note({"cold_start": 0.5, "steady_state": 0.8}, "not confirmed") is None


def test_break_lines_that_are_not_code_of_the_named_function_are_uncertain(tmp_path):
    from dynalint.verify.break_lines import original_function, uncertain

    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    # a comment\n    y = x + 1\n\n    return y\n\n\nclass C:\n    pass\n")
    assert not uncertain(str(path), 3, "f") and not uncertain(str(path), 3, "torch_dynamo_resume_in_f_at_1")
    assert uncertain(str(path), 2, "f") and uncertain(str(path), 4, "f") and uncertain(str(path), 9, "f")
    assert not uncertain(str(path), 9, "<lambda>")  # nothing to check against: trusted
    assert original_function("torch_dynamo_resume_in_forward_at_12") == "forward"


def test_a_confirmed_fix_reports_how_many_input_sets_were_bitwise_equal():
    before, after = _m(breaks=1), _m(breaks=0, vs_original=True)
    after.calls[0].vs_original.bitwise = True
    ok, reasons = improvement([before], [after])
    assert ok and reasons[-1] == "outputs equal on 1 input set (bitwise on 1 of 1)"


def test_summary_names_a_variant_that_raised_instead_of_comparing_its_counts():
    from dynalint.verify.api import DeviceReport, TargetReport
    from dynalint.verify.report_text import summary

    original, fixed = _m(breaks=4, recompiles=5), _m(breaks=1, recompiles=2, variant="fixed")
    fixed.status, fixed.message = "error", "call 0 raised ValueError: bad (3 of 3 calls raised)"
    for c in fixed.calls:
        c.error = "ValueError: bad"
    raised = TargetReport("m.py::f", "m.py", "f", [DeviceReport("cpu", original, fixed, None, judge(original, fixed))])
    ok_o, ok_f = _m(breaks=2), _m(breaks=1, vs_original=True, variant="fixed")
    ok = TargetReport("n.py::g", "n.py", "g", [DeviceReport("cpu", ok_o, ok_f, None, judge(ok_o, ok_f))])
    text = summary([raised, ok])
    assert "the fixed code of m.py::f raised: no counts to compare" in text
    assert "graph breaks 2 -> 1, recompiles 0 -> 0" in text  # only the target where both ran
    assert summary([raised]).endswith("(1 not confirmed); the fixed code of m.py::f raised: no counts to compare.")


def test_the_table_row_of_a_variant_that_raised_says_so_instead_of_its_counts():
    import io

    from dynalint.verify.api import DeviceReport, TargetReport
    from dynalint.verify.report_text import write

    original, fixed = _m(breaks=4, recompiles=5), _m(breaks=1, recompiles=2, variant="fixed")
    fixed.status, fixed.message = "error", "call 0 raised ValueError: bad (3 of 3 calls raised)"
    for c in fixed.calls:
        c.error = "ValueError: bad"
    out = io.StringIO()
    write([TargetReport("m.py::f", "m.py", "f", [DeviceReport("cpu", original, fixed, None, judge(original, fixed))])],
          out)
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.getvalue().splitlines() if ln.startswith("  ") and
            ln.split()[:1] in (["original"], ["fixed"])}
    assert rows["original"][1:3] == ["4", "5"]  # breaks, recompiles
    assert rows["fixed"] == ["-", "-", "-", "-", "-", "RAISED", "(below)"]
    assert "fixed: error: call 0 raised ValueError: bad" in out.getvalue()  # what it raised, once, below
