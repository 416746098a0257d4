"""verify's checks beyond breaks and recompiles: what a call leaves behind, timing, threads,
fixes in other files, per-target inputs, devices, and ``fix --verify``'s options."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import requires_torch
from dynalint.adapters.cli import main
from dynalint.config.settings import Settings
from dynalint.verify.api import Options, default_jobs, make_spec, verify_targets
from dynalint.verify.isolation import run_measurement
from dynalint.verify.targets import Ref

pytestmark = requires_torch

CASES = os.path.join(os.path.dirname(__file__), "verify_cases")
PAIRS = os.path.join(CASES, "pairs")


def case(name: str) -> str:
    return os.path.join(CASES, name + ".py")


def _against_original(variant: str, tmp_path) -> "object":
    """Measure pairs/VARIANT.py (train mode) with pairs/original.py's eager outputs as the reference."""
    ref = Ref(os.path.join(PAIRS, "original.py"), "Net")
    options = Options(mode="train", what_if=False, fix=False)
    saved = str(tmp_path / "reference.pt")
    spec = make_spec(ref, "original", ref.path, "cpu", options, Settings(), None, None)
    spec.save_outputs = saved
    assert run_measurement(spec).status == "ok"
    spec = make_spec(ref, "fixed", os.path.join(PAIRS, variant + ".py"), "cpu", options, Settings(), None, None)
    spec.reference_outputs = saved
    m = run_measurement(spec)
    assert m.status == "ok", m.message
    return m


def test_the_reference_equals_itself(tmp_path):
    assert _against_original("original", tmp_path).equal_to_original is True


@pytest.mark.parametrize("variant, leaf", [
    ("grads_zero", "grad:unused"),  # None against zeros: optimizers skip one, decay the other
    ("state", "state:calls"),  # module state after the call
    ("prints", "stdout"),  # printed output
])
def test_what_a_call_leaves_behind_is_compared(variant, leaf, tmp_path):
    m = _against_original(variant, tmp_path)
    assert m.equal_to_original is False
    assert any(c.vs_original is not None and c.vs_original.note.startswith(leaf) for c in m.calls)


def test_state_kept_as_a_buffer_reads_as_the_same_number(tmp_path):
    assert _against_original("buffer", tmp_path).equal_to_original is True


def test_eager_reference_is_timed_without_a_tracer():
    o = verify_targets([Ref(case("tracer_probe"), "traced_scale")], Settings(),
                       Options(fix=False, what_if=False))[0].devices[0].original
    assert o.status == "ok", o.message
    assert o.outputs_equal is True  # the eager phase ran as the compiled one does: no tracer
    assert o.executed  # the lines that ran still come from the (separate) coverage phase


def test_threads_are_pinned_and_stated(capsys):
    o = verify_targets([Ref(case("mutated_global"), "Scaled")], Settings(),
                       Options(fix=False, what_if=False, threads=1))[0].devices[0].original
    assert o.threads == 1
    main(["verify", f"{case('mutated_global')}::Scaled", "--no-fix", "--no-what-if", "--threads", "1", "-q"])
    assert ", 1 thread," in capsys.readouterr().out


def test_measurements_run_one_at_a_time_by_default():
    assert default_jobs() == 1


def test_resume_functions_guards_are_timed():
    import torch

    from dynalint.verify.cost import ResumeGuards

    def f(x):
        y = x * 2
        if y.sum() > 0:  # a graph break: the rest runs in a resume function
            return y + 1
        return y - 1

    torch._dynamo.reset()
    with ResumeGuards() as resume:
        torch.compile(f, backend="eager")(torch.ones(3))
    try:
        assert [c.co_name for c in resume.scopes] and all(
            c.co_name.startswith("torch_dynamo_resume_in_f") for c in resume.scopes)
        assert resume.seconds() > 0
    finally:
        torch._dynamo.reset()


def test_fixes_apply_to_the_files_the_target_runs():
    (d,) = (r := verify_targets([Ref(case("uses_helper"), "Limited")], Settings(), Options(unsafe=True))[0]).devices
    assert [os.path.basename(f["path"]) for f in r.fixes] == ["helpers_branch.py"]
    assert d.fixed is not None and len(d.original.breaks) == 1 and len(d.fixed.breaks) == 0
    assert d.fixed.equal_to_original is True and d.verdict.status == "confirmed"
    assert "helpers_branch.py" in r.fixed_diff


def test_inputs_per_target(capsys):
    rc = main(["verify", f"{case('factory')}::build_gate", f"{case('mutated_global')}::Scaled", "--no-fix",
               "--no-what-if", "--inputs", f"build_gate={case('factory_inputs')}::gate_inputs", "-q",
               "--format", "json"])
    import json

    targets = json.loads(capsys.readouterr().out)["targets"]
    assert [t["devices"][0]["original"]["status"] for t in targets] == ["ok", "ok"]
    assert [t["devices"][0]["original"]["n_calls"] for t in targets] == [3, 4]
    assert rc == 1  # Scaled recompiles


def test_inputs_naming_no_target_is_a_usage_error(capsys):
    rc = main(["verify", f"{case('mutated_global')}::Scaled", "--inputs",
               f"Nope={case('factory_inputs')}::gate_inputs"])
    assert rc == 2 and "names none of the targets" in capsys.readouterr().err


@pytest.mark.skipif("__import__('torch').cuda.is_available()", reason="a GPU is present")
def test_device_cuda_without_a_gpu_fails_and_auto_falls_back(capsys):
    rc = main(["verify", f"{case('branchy')}::Clipper", "--no-fix", "--device", "cuda", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "--device cuda" in err and "CUDA is not available" in err
    d = verify_targets([Ref(case("branchy"), "Clipper")], Settings(),
                       Options(fix=False, what_if=False, devices=("auto",)))[0].devices[0]
    assert d.original.status == "ok" and d.original.device == "cpu"


def test_fix_verify_passes_mode_device_and_before_call(monkeypatch, tmp_path):
    import dynalint.verify.api as api

    seen = {}

    def fake(path, targets, inputs, settings, unsafe, timeout, **kwargs):
        from dynalint.engine.fixing import fix_source

        seen.update(kwargs, inputs=inputs)
        return fix_source(open(path).read(), path, settings, unsafe=unsafe)

    monkeypatch.setattr(api, "confirm_fixes", fake)
    target = tmp_path / "m.py"
    target.write_text("def f(x):\n    return x\n")
    main(["fix", str(target), "--verify", f"{target}::f", "--mode", "train", "--device", "auto",
          "--before-call", f"{target}::f", "--inputs", f"f={target}::f", "-q"])
    assert seen["mode"] == "train" and seen["devices"] == ("auto",)
    assert seen["before_call"] == [f"{target}::f"] and seen["inputs"] == [f"f={target}::f"]


def test_fix_verify_without_torch_says_it_needs_torch(tmp_path):
    target = tmp_path / "m.py"
    target.write_text("def f(x):\n    return x\n")
    blocker = ("import sys\n"
               "class NoTorch:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name == 'torch' or name.startswith('torch.'):\n"
               "            raise ModuleNotFoundError(\"No module named 'torch'\")\n"
               "sys.meta_path.insert(0, NoTorch())\n"
               "from dynalint.adapters.cli import main\n"
               f"sys.exit(main(['fix', {str(target)!r}, '--verify', {str(target) + '::f'!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "needs torch" in proc.stderr and "died" not in proc.stderr


def _bench_report(device: str = "cpu"):
    return verify_targets([Ref(case("branchy"), "Clipper")], Settings(),
                          Options(unsafe=True, what_if=False, bench_calls=3, devices=(device,)))[0]


def test_bench_times_cold_start_and_steady_state_of_original_and_fixed(tmp_path, capsys):
    import json

    from dynalint.verify import report_html, report_text

    r = _bench_report()
    d = r.devices[0]
    for m in (d.original, d.fixed):
        assert m.bench is not None and m.bench.calls == 3 and m.bench.threads == m.threads
        assert m.bench.cold_s > m.bench.steady_s > 0  # the first call pays the compilation
        assert m.bench.eager_steady_s > 0
    assert set(d.speedup) == {"cold_start", "steady_state"}
    assert d.speedup["cold_start"] == pytest.approx(d.original.bench.cold_s / d.fixed.bench.cold_s)
    assert json.loads(json.dumps(d.to_json()))["speedup"]["steady_state"] > 0
    report_text.write([r], sys.stdout)
    text = capsys.readouterr().out
    assert "cold start" in text and "(original / fixed)" in text
    html = tmp_path / "r.html"
    report_html.write(str(html), [r])
    assert "cold start" in html.read_text() and "original / fixed" in html.read_text()


@pytest.mark.skipif("not __import__('torch').cuda.is_available()", reason="needs a CUDA device")
def test_bench_on_the_gpu():
    d = _bench_report("cuda").devices[0]
    assert d.original.device == "cuda" and d.speedup is not None


def test_an_error_in_a_phase_keeps_the_users_frames():
    o = verify_targets([Ref(case("import_fails"), "f")], Settings(), Options(fix=False))[0].devices[0].original
    assert o.status == "error"
    assert "FileNotFoundError: weights.pt not found (import_fails.py:6 in load_weights)" in o.message
    assert "setting up the eager phase" in o.message
    assert "import_fails.py" in o.traceback and "line 9" in o.traceback


def test_a_changed_gradient_is_a_reason_to_refuse_a_fix(tmp_path):
    from dynalint.verify.verdict import improvement

    before = _against_original("original", tmp_path)
    ok, reasons = improvement([before], [_against_original("grads_zero", tmp_path)])
    assert not ok and any("grad:unused" in r for r in reasons)


def test_fix_verify_in_train_mode_refuses_a_fix_that_changes_gradients():
    from dynalint.verify.api import confirm_fixes

    path = case("gated")
    train = confirm_fixes(path, ["Gated"], None, Settings(), True, 120, mode="train")
    if not train.confirmed and not train.rejected:
        pytest.skip("no fixer offers a rewrite of this branch any more")
    assert not train.confirmed
    assert any("grad:b." in r for o in train.rejected for r in o.reasons)  # zeros where the original had None
    assert train.source == open(path).read()


def test_guards_of_a_decorated_forward_are_classified_on_its_parameters():
    o = verify_targets([Ref(case("decorated_counter"), "DecoratedCounter")], Settings(),
                       Options(fix=False, what_if=False))[0].devices[0].original
    assert [(r.category, r.guards[0].split(" ")[0]) for r in o.recompiles] == [
        ("shape", "tensor"), ("attribute", "args[0].step")]  # Dynamo's text kept, read as self.step
