#!/usr/bin/env python
"""Label the user scripts of this folder with real Dynamo: graph breaks, recompiles, traced lines.

Each script runs as ``__main__`` in a fresh subprocess (one thread, ``torch.manual_seed(0)``, a timeout),
its own ``torch.compile`` calls switched to ``backend="eager"`` (breaks and recompiles are Dynamo's,
whatever the backend; ``mode``/``options`` only configure Inductor and are dropped). The recorder is
realcode's (``benchmarks/realcode/label.py``): breaks from Dynamo's graph-break log placed at the
innermost frame inside the script, traced lines from the line-start hook that feeds
``TORCH_LOGS=trace_source``, recompiles from the ``recompiles`` log. Each recompile's failing guards are
parsed into causes: the guarded value, the kind of guard and the script line Dynamo names for it.

Records follow the eval-zoo ``labels.json`` format with file paths relative to this folder, so
``score_zoo.py --labels labels.json --site-packages benchmarks/userfiles`` scores breaks per script;
``score_recompiles.py`` scores recompile findings against ``recompile_causes``.

Usage:
  python label.py [FILE.py ...] [--out labels.json] [--timeout 300]
  python label.py --summary
  python label.py --reparse          # recompile causes again from the recorded messages
  python label.py --one FILE.py --record OUT.json      # what each subprocess runs
  python label.py --dir FOLDER [FILE.py ...]            # another folder's scripts (FOLDER/labels.json)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# the labelled folder: this one, or another population sharing this labeller (``--dir``)
FOLDER = HERE
REALCODE_LABEL = HERE.parent / "realcode" / "label.py"
NOT_SCRIPTS = {"label.py", "score_recompiles.py"}

# "- 14/3: G['ema'].updates == 3   # self.updates += 1  # path/fixmatch_ssl.py:38 in update"
GUARD_RE = re.compile(r"^\s*-\s+(\d+/\d+):\s(.*)$")
GUARD_WHERE_RE = re.compile(r"\s{2}#\s(\S+?):(\d+) in (\S+)")
TENSOR_GUARD_RE = re.compile(r"^tensor '(.+?)' (size|stride|rank|dtype|device|requires_grad)\b")
# an access path not followed by a call: ``L['self'].steps``, ``G['ema'].updates``, ``top_p``
VARIABLE_RE = re.compile(r"(?<![\w.'\"])([A-Za-z_][\w\[\]'\".]*)(?!\w|\s*\()")


def load_realcode():  # type: ignore[no-untyped-def]
    """realcode's labeller module (its ``Recorder``), loaded by path: benchmarks/ is not a package."""
    spec = importlib.util.spec_from_file_location("realcode_label", REALCODE_LABEL)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def scripts() -> list[Path]:
    """The labelled population: every script of the folder but the labeller, the scorer and private
    modules (``_name.py``: code the scripts share)."""
    return sorted(p for p in FOLDER.glob("*.py") if p.name not in NOT_SCRIPTS and not p.name.startswith("_"))


SCRIPT_NAMES = {p.name for p in scripts()}


def use_folder(folder: Path) -> None:
    """Labels the scripts of ``folder`` instead of this one's (a population that shares this labeller)."""
    global FOLDER, SCRIPT_NAMES
    FOLDER = folder.resolve()
    SCRIPT_NAMES = {p.name for p in scripts()}


def local_name(filename: str) -> str | None:
    """The name of ``filename`` when it is one of the scripts of this folder, else None. Dynamo prints
    some paths relative to a directory of its own, so a relative path is matched on its name."""
    if not filename or filename.startswith("<"):
        return None
    p = Path(filename)
    if p.is_absolute():
        try:
            rel = p.resolve().relative_to(FOLDER).as_posix()
        except (ValueError, OSError):
            return None
    else:
        rel = p.name
    return rel if rel in SCRIPT_NAMES else None


# --------------------------------------------------------------------------------------------------------
# Guard failures -> recompile causes
# --------------------------------------------------------------------------------------------------------


def guard_kind(guard: str) -> str:
    """What a failing guard checks: a tensor's metadata, global state, a value from tensor data carried
    across a break (``___stack``), an object's type/identity, or a Python value."""
    if TENSOR_GUARD_RE.match(guard):
        return "tensor-metadata"
    if guard.startswith("GLOBAL_STATE"):
        return "global-state"
    if "___stack" in guard.split("#", 1)[0]:
        return "stack-value"
    if re.match(r"^(___check_type_id|___check_obj_id|___check_tensors|type\()", guard) or re.search(
        r"\b_(modules|parameters|buffers)\b", guard
    ):
        return "type-or-identity"  # another object, or a module of another structure
    return "python-value"


def guard_variable(guard: str) -> str | None:
    """The guarded name (``G['ema'].updates`` -> ``ema.updates``, ``kwargs['k']`` -> ``k``), for matching
    a finding that names it; None when the guard names no user variable."""
    m = TENSOR_GUARD_RE.match(guard)
    expr = m.group(1) if m else guard.split("  #", 1)[0]
    v = next((c for c in VARIABLE_RE.finditer(expr) if c.group(1) not in ("not", "len", "is", "None")), None)
    if not v:
        return None
    name = v.group(1)
    name = re.sub(r"^(?:L|G|kwargs|args)\[['\"](\w+)['\"]\]", r"\1", name)
    name = re.sub(r"\[['\"](\w+)['\"]\]", r".\1", name)
    name = re.sub(r"\._modules\.", ".", name)
    if name.startswith("___") or name in ("not", "len", "args", "kwargs"):
        return None
    return name


def parse_recompile(text: str, script: str, function_in_script: bool) -> list[dict]:
    """The failing guards of one ``Recompiling function ...`` message, one dict each.

    A guard is the script's (``scope: script``) when Dynamo names a script line for it, when the
    recompiled function is the script's, or when it guards the compiled callable's own ``args``/``kwargs``
    (a decorator's wrapper around a script function); otherwise it is library-internal state."""
    out = []
    for line in text.splitlines():
        m = GUARD_RE.match(line)
        if not m or m.group(2).startswith(("User stack", "  ", "File ")):
            continue
        entry, guard = m.group(1), m.group(2).rstrip()
        where = list(GUARD_WHERE_RE.finditer(guard))
        file = line_no = func = None
        source = ""
        if where:
            w = where[-1]
            file = local_name(w.group(1))
            line_no, func = int(w.group(2)), w.group(3)
            head = guard[: w.start()]
            if "  # " in head:
                head, source = head.split("  # ", 1)
            guard = head.strip()
            if file is None:  # a line of another file (torch's): not placed in the script
                line_no, source = None, ""
        in_script = file is not None or function_in_script or bool(re.search(r"\b(?:args|kwargs)\b", guard))
        out.append(
            {
                "entry": entry,
                "guard": guard,
                "kind": guard_kind(guard),
                "scope": "script" if in_script else "library",
                "variable": guard_variable(guard),
                "file": file or (script if in_script else None),
                "line": line_no,
                "function": func,
                "source_line": source.strip(),
            }
        )
    return out


def causes(failures: list[dict]) -> list[dict]:
    """Distinct recompile causes: one per (kind, scope, guarded variable, script line), counting the
    failing guards (a recompile lists one per cache entry it tried)."""
    grouped: dict[tuple, dict] = {}
    for f in failures:
        variable = None if f["kind"] in ("stack-value", "tensor-metadata") and f["line"] else f["variable"]
        key = (f["kind"], f["scope"], variable, f["file"], f["line"])
        e = grouped.get(key)
        if e is None:
            e = grouped[key] = {
                "kind": f["kind"],
                "scope": f["scope"],
                "variable": f["variable"],
                "file": f["file"],
                "line": f["line"],
                "source_line": f["source_line"],
                "function": f["function"],
                "example_guard": f["guard"][:300],
                "count": 0,
            }
        e["count"] += 1
    # a guard Dynamo places on no line (a decorator's wrapper guarding its ``kwargs``) joins the placed
    # cause of the same variable and kind, when there is one
    placed = {(e["kind"], e["variable"], e["file"]): e for e in grouped.values() if e["line"]}
    out = []
    for e in grouped.values():
        twin = placed.get((e["kind"], e["variable"], e["file"])) if not e["line"] and e["variable"] else None
        if twin is not None:
            twin["count"] += e["count"]
        else:
            out.append(e)
    return out


# --------------------------------------------------------------------------------------------------------
# Child side: one script in this process.
# --------------------------------------------------------------------------------------------------------


def force_eager_backend() -> None:
    """Makes the script's ``torch.compile`` calls use ``backend="eager"`` (decorator forms included)."""
    import torch

    original = torch.compile

    def compile_eager(model: Any = None, **kwargs: Any) -> Any:
        kwargs.pop("mode", None)
        kwargs.pop("options", None)
        kwargs["backend"] = "eager"
        if model is None:
            return lambda m: original(m, **kwargs)
        return original(model, **kwargs)

    torch.compile = compile_eager  # type: ignore[assignment]


def run_one(script: str, record_path: str) -> None:
    import runpy

    import torch

    rc = load_realcode()

    class ScriptRecorder(rc.Recorder):  # type: ignore[name-defined,misc]
        """Realcode's recorder with "the library" being the scripts of this folder."""

        def in_library(self, filename: str) -> bool:
            return local_name(filename) is not None

    torch.set_num_threads(1)
    torch.manual_seed(0)
    name = local_name(script) or Path(script).name
    record: dict[str, Any] = {
        "spec": name,
        "library": name,
        "versions": {"torch": torch.__version__, "python": sys.version.split()[0]},
        "status": "started",
        "dynamo_config": {},
        "compile_backend": "eager",
    }

    def dump() -> None:
        tmp = record_path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(record, fh, indent=1, default=str)
        os.replace(tmp, record_path)

    rec = ScriptRecorder(set())
    rec.install()
    force_eager_backend()
    t0 = time.time()
    try:
        runpy.run_path(str(Path(script).resolve()), run_name="__main__")
        record["status"] = "ok"
    except Exception as e:  # observations before the crash are kept
        record["status"] = "compile_error"
        record["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
    record["run_s"] = round(time.time() - t0, 2)

    breaks = rec.break_records()
    for b in breaks:
        if b["file"]:
            b["file"] = local_name(b["file"]) or b["file"]
            b["library"] = b["file"]
            b["innermost_frame"] = f"{b['file']}:{b['line']}"
        b["user_stack"] = [
            f"{local_name(f.rsplit(':', 1)[0]) or f.rsplit(':', 1)[0]}:{f.rsplit(':', 1)[1]}"
            for f in b["user_stack"]
        ]
    record["breaks"] = breaks
    record["break_location_count"] = len({(b["file"], b["line"]) for b in breaks if b["in_library"]})
    record["traced_lines"] = {
        local_name(f) or f: sorted(v) for f, v in sorted(rec.traced.items())
    }
    record["traced_line_count"] = sum(len(v) for v in rec.traced.values())
    failures_all = []
    for r in rec.recompiles:
        r["guard_failures"] = parse_recompile(r["text"], name, local_name(r["file"]) is not None)
        r["file"] = local_name(r["file"]) or r["file"]
        failures_all.extend(r["guard_failures"])
    record["recompiles"] = rec.recompiles
    record["recompile_count"] = len(rec.recompiles)
    record["recompile_causes"] = causes(failures_all)
    from torch._dynamo.utils import counters

    record["counters"] = {k: dict(v) for k, v in counters.items() if k in ("frames", "stats")}
    record["graph_count"] = counters["stats"].get("unique_graphs", 0)
    dump()


# --------------------------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------------------------


def launch(script: Path, timeout: float, tmpdir: Path) -> dict:
    out = tmpdir / (script.stem + ".json")
    log = tmpdir / (script.stem + ".log")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    env.pop("TORCH_LOGS", None)
    t0 = time.time()
    with open(log, "w") as lf:
        try:
            p = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--dir", str(FOLDER), "--one", str(script),
                 "--record", str(out)],
                stdout=lf, stderr=subprocess.STDOUT, timeout=timeout, env=env, cwd=str(FOLDER),
            )
            code: int | None = p.returncode
        except subprocess.TimeoutExpired:
            code = None
    rec: dict = {}
    if out.exists():
        with open(out) as fh:
            rec = json.load(fh)
    if not rec:
        rec = {"spec": script.name, "status": "timeout" if code is None else "crashed",
               "error": log.read_text(errors="replace")[-2000:]}
    rec["process_wall_s"] = round(time.time() - t0, 2)
    return rec


def summarize(records: list[dict]) -> None:
    print(f"scripts={len(records)} statuses={dict(Counter(r.get('status') for r in records))}")
    tot_b = tot_c = 0
    for r in records:
        brk = {(b["file"], b["line"]) for b in r.get("breaks", []) if b.get("in_library")}
        cs = Counter(c["kind"] for c in r.get("recompile_causes", []))
        tot_b += len(brk)
        tot_c += sum(cs.values())
        print(
            f"  {r['spec']:24s} {r.get('status'):13s} break_lines={len(brk):3d} "
            f"traced={r.get('traced_line_count', 0):4d} recompiles={r.get('recompile_count', 0):3d} "
            f"causes={dict(cs)}"
        )
    print(f"  total break lines {tot_b}, recompile causes {tot_c}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="scripts to (re)label (default: every script here)")
    ap.add_argument("--one")
    ap.add_argument("--record")
    ap.add_argument("--dir", default=str(HERE), help="the folder of scripts to label (default: this one)")
    ap.add_argument("--out", help="default: labels.json in --dir")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--summary", action="store_true")
    ap.add_argument(
        "--reparse", action="store_true",
        help="rebuild the recompile causes from the recorded recompile messages (no run)",
    )
    a = ap.parse_args(argv)
    use_folder(Path(a.dir))
    a.out = a.out or str(FOLDER / "labels.json")
    if a.one:
        run_one(a.one, a.record)
        return
    existing: dict[str, dict] = {}
    if os.path.exists(a.out):
        with open(a.out) as fh:
            existing = {r["spec"]: r for r in json.load(fh)}
    if a.summary:
        summarize(list(existing.values()))
        return
    if a.reparse:
        for r in existing.values():
            failures = []
            for rc in r.get("recompiles", []):
                rc["guard_failures"] = parse_recompile(rc["text"], r["spec"], local_name(rc["file"]) is not None)
                failures.extend(rc["guard_failures"])
            r["recompile_causes"] = causes(failures)
        with open(a.out, "w") as fh:
            json.dump([existing[k] for k in sorted(existing)], fh, indent=1, default=str)
        summarize(list(existing.values()))
        return
    targets = [Path(f).resolve() for f in a.files] if a.files else scripts()
    tmpdir = Path(os.environ.get("USERFILES_TMP", "/tmp")) / f"{FOLDER.name}-{os.getpid()}"
    tmpdir.mkdir(parents=True, exist_ok=True)
    for script in targets:
        r = launch(script, a.timeout, tmpdir)
        existing[r["spec"]] = r
        print(f"{r['spec']:24s} {r.get('status'):13s} breaks={r.get('break_location_count', 0):3d} "
              f"recompiles={r.get('recompile_count', 0):3d} {r['process_wall_s']:6.1f}s "
              f"{(r.get('error') or '')[:100]!r}", flush=True)
        with open(a.out, "w") as fh:
            json.dump([existing[k] for k in sorted(existing)], fh, indent=1, default=str)
    print(f"logs in {tmpdir}")


if __name__ == "__main__":
    main()
