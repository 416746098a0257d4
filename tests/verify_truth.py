"""An independent count of what Dynamo did, call by call, from its own log and a counting backend.

Run as ``python verify_truth.py MODULE.py TARGET eager|compiled OUT.pt`` in a fresh process
with ``TORCH_LOGS=graph_breaks,recompiles``: it imports the module as a plain program would
(once), builds the target like ``dynalint verify`` (module classes with no arguments), calls it
on ``dynalint_inputs()`` with ``dynalint_before_call(i)`` before call ``i``, and saves the outputs.
The backend wraps every graph it compiles, so a call that ran a compiled graph without compiling
is a cache hit and a call that ran none an eager run.  :func:`truth` parses the log by itself:
it shares no code with ``dynalint.verify``.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

MARK = "@@truth"


@dataclass
class Truth:
    statuses: list[str] = field(default_factory=list)
    recompiles: int = 0
    break_sites: set[tuple[str, int]] = field(default_factory=set)
    outputs: list = field(default_factory=list)


def _main(path: str, target: str, mode: str, out: str) -> None:
    import torch

    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    compiles, runs = [0], [0]

    def backend(gm, example_inputs):
        compiles[0] += 1

        def run(*args):
            runs[0] += 1
            return gm.forward(*args)

        return run

    obj = getattr(module, target)
    hook = getattr(module, "dynalint_before_call", None)
    torch.manual_seed(0)
    calls = module.dynalint_inputs()
    results = []
    instance = None
    for i, raw in enumerate(calls):
        args = raw[1] if isinstance(obj, type) else raw
        if hook is not None:
            hook(i)
        if instance is None:
            torch.manual_seed(1)
            instance = obj().eval() if isinstance(obj, type) else obj
            fn = torch.compile(instance, backend=backend) if mode == "compiled" else instance
        c0, r0 = compiles[0], runs[0]
        print(f"{MARK} call {i}", file=sys.stderr, flush=True)
        with torch.no_grad():
            results.append(fn(*args))
        print(f"{MARK} end {i} compiled {compiles[0] - c0} ran {runs[0] - r0}", file=sys.stderr, flush=True)
    torch.save(results, out)


_END = re.compile(rf"{MARK} end (\d+) compiled (\d+) ran (\d+)")
_BREAK = re.compile(r"Graph break.* in user code at (.+?):(\d+)")


def truth(path: str, target: str, mode: str, tmp: str) -> Truth:
    """Run the module in a fresh process and count from its log."""
    import torch

    out = os.path.join(tmp, f"truth-{mode}.pt")
    env = dict(os.environ, TORCH_LOGS="graph_breaks,recompiles", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, __file__, path, target, mode, out], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    t = Truth(outputs=torch.load(out, weights_only=False))
    recompiling = False
    for line in proc.stderr.splitlines():
        if "Recompiling function" in line:
            recompiling = True
        m = _BREAK.search(line)
        if m:
            t.break_sites.add((os.path.realpath(m[1]), int(m[2])))
        m = _END.search(line)
        if m:
            compiled, ran = int(m[2]), int(m[3])
            if compiled:
                t.statuses.append("recompile" if recompiling else "compile")
                t.recompiles += recompiling
            else:
                t.statuses.append("hit" if ran else "eager")
            recompiling = False
    return t


if __name__ == "__main__":
    _main(*sys.argv[1:5])
