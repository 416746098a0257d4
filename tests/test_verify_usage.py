"""``dynalint verify`` as a user first meets it: input files with state, hooks that print, no inputs,
reports that say each thing once.  Real Dynamo, tiny models, few calls."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from conftest import requires_torch
from dynalint.adapters.cli import main
from dynalint.verify.fixed import fix_engine_available

pytestmark = requires_torch

CASES = os.path.join(os.path.dirname(__file__), "verify_cases")
STEPPED, STEPPED_INPUTS = (os.path.join(CASES, f) for f in ("stepped.py", "stepped_inputs.py"))


def _dynamo_counts() -> tuple[int, int]:
    """(break sites, recompiles) of stepped.py's stream under plain ``torch.compile``, hook included."""
    import torch
    from torch._dynamo.utils import counters

    mods = {}
    for path in (STEPPED, STEPPED_INPUTS):
        spec = importlib.util.spec_from_file_location(f"dynalint_truth_{os.path.basename(path)[:-3]}", path)
        mods[path] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mods[path])
    inputs = mods[STEPPED_INPUTS]
    stream = inputs.make_inputs()
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(mods[STEPPED].Step().eval(), backend="eager")
    first = None
    try:
        with torch.no_grad():
            for i, (_, args) in enumerate(stream):
                inputs.before_call(i)
                compiled(*args)
                first = first if first is not None else counters["frames"]["total"]
        return len(counters["resumes"]), counters["frames"]["total"] - first
    finally:
        torch._dynamo.reset()


def test_a_hook_reads_the_global_its_input_factory_set_and_the_counts_are_dynamos(capsys):
    rc = main(["verify", f"{STEPPED}::Step", "--inputs", f"{STEPPED_INPUTS}::make_inputs",
               "--before-call", f"{STEPPED_INPUTS}::before_call", "--no-fix", "--format", "json"])
    original = json.loads(capsys.readouterr().out)["targets"][0]["devices"][0]["original"]
    assert original["status"] == "ok", original["message"]
    assert rc == 1  # a break and recompiles are left
    assert (original["n_breaks"], original["n_recompiles"]) == _dynamo_counts() == (1, 2)
    assert original["what_if"] == []  # a print break: Dynamo's capture settings are not for it, no rerun
    assert "compiled" in original["seconds"] and "coverage" in original["seconds"]
    phases = set(original["seconds"]) - {"start", "total"}  # the CPU time of every phase's process too
    assert set(original["cpu_seconds"]) == phases and all(s > 0 for s in original["cpu_seconds"].values())
    with open(original["output_path"], encoding="utf-8") as fh:  # what the hook and the target printed
        printed = fh.read()
    os.unlink(original["output_path"])
    assert printed.count("hook set 3 timesteps") == printed.count("forward at step 3") == 3  # eager, coverage, compiled


def test_what_a_hook_printed_before_it_failed_is_shown(tmp_path, capsys):
    (tmp_path / "hooked.py").write_text(
        "import torch\n\n\ndef f(x):\n    return x + 1\n\n\ndef dynalint_inputs():\n    return [torch.ones(2)]\n\n\n"
        "def before(i):\n    print('scheduler state: empty')\n    raise RuntimeError('no scheduler')\n")
    rc = main(["verify", f"{tmp_path / 'hooked.py'}::f", "--before-call", f"{tmp_path / 'hooked.py'}::before",
               "--no-fix"])
    out = capsys.readouterr().out
    assert rc == 1 and "RuntimeError: no scheduler" in out
    assert "| scheduler state: empty" in out
    kept = out.split("kept in ")[1].split()[0]
    os.unlink(kept)


def test_no_inputs_is_a_usage_error_before_any_measurement(tmp_path, capsys, monkeypatch):
    (tmp_path / "script.py").write_text(
        "import torch\n\n\ndef f(x):\n    return x + 1\n\n\nif __name__ == '__main__':\n    print(f(torch.ones(2)))\n")

    def no_measurement(spec):
        raise AssertionError("a measurement started")

    monkeypatch.setattr("dynalint.verify.api.run_measurement", no_measurement)
    assert main(["verify", f"{tmp_path / 'script.py'}::f"]) == 2
    assert main(["verify", f"{tmp_path / 'script.py'}::f", "--inputs", f"{tmp_path / 'script.py'}::make"]) == 2
    err = capsys.readouterr().err
    assert err.count("defines no dynalint_inputs()") == 1 and "'make' is not defined" in err


@pytest.mark.skipif(not fix_engine_available(), reason="the fix engine is not installed yet")
def test_inputs_that_fail_to_load_are_reported_once_and_the_fixed_code_is_not_run(tmp_path, capsys):
    (tmp_path / "nothing.py").write_text("def make():\n    return []\n")
    rc = main(["verify", f"{os.path.join(CASES, 'branchy.py')}::Clipper", "--unsafe-fixes",
               "--inputs", f"{tmp_path / 'nothing.py'}::make"])
    out = capsys.readouterr().out
    assert rc == 1 and out.count("returned no input sets") == 1
    assert "fixed     " not in out  # no row: the fixed variant was not measured


def test_an_input_file_the_target_imports_is_the_same_module(tmp_path):
    from dynalint.verify.spec import MeasureSpec
    from dynalint.verify.stream import Stream

    (tmp_path / "usage_feeder.py").write_text(
        "import torch\nSTATE = None\n\n\ndef make():\n    global STATE\n    STATE = 'built'\n"
        "    return [torch.ones(2)]\n\n\ndef hook(i):\n    assert STATE == 'built'\n")
    (tmp_path / "usage_target.py").write_text("import usage_feeder\n\n\ndef f(x):\n    return x * 2\n")
    feeder = str(tmp_path / "usage_feeder.py")
    spec = MeasureSpec(target="t::f", module_path=str(tmp_path / "usage_target.py"), name="f",
                       origin_path=str(tmp_path / "usage_target.py"), inputs_path=feeder, inputs_name="make",
                       hook_path=feeder, hook_name="hook")
    stream = Stream(spec)
    assert stream.inputs_module is stream.module.usage_feeder  # the module the target imported
    assert stream.hook.__globals__ is vars(stream.inputs_module)
    stream.before_call(0)  # reads the global the factory set
