#!/usr/bin/env python
"""Label real library code with real Dynamo: the graph breaks it logs and the lines it traces.

Each run of ``runspecs.SPECS`` goes in a fresh subprocess (one thread, ``torch.manual_seed(0)``, a timeout):
an eager call per input set, then a freshly built model or function under
``torch.compile(backend="eager")`` called on each input set in turn. Breaks come from Dynamo's graph-break
log (``InstructionTranslatorBase.log_graph_break``, what ``TORCH_LOGS=graph_breaks`` prints) and are placed
at the innermost frame of the user stack inside a labelled library; traced lines come from the line-start
hook that feeds ``TORCH_LOGS=trace_source``. Records follow the eval-zoo ``labels.json`` format, so
``score_zoo.py --labels`` scores them.

Usage:
  python label.py [--specs runspecs.py] [--spec PREFIX ...] [--out labels.json] [--timeout 240] [--jobs 1]
  python label.py --list
  python label.py --summary [--out labels.json]
  python label.py --one SPEC --record OUT.json [--outputs OUT.pt] [--flag NAME ...]   # what each subprocess runs
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SITE_RE = re.compile(r"(?:site|dist)-packages/")
SCORED = ("ok", "partial", "compile_error")


def rel_path(filename: str) -> str:
    """Path relative to site-packages (the suffix after the last ``site-packages/``)."""
    p = filename.replace("\\", "/")
    ms = list(SITE_RE.finditer(p))
    return p[ms[-1].end() :] if ms else p


def top_package(rel: str) -> str:
    return rel.split("/", 1)[0]


# --------------------------------------------------------------------------------------------------------
# Child side: one run, in this process.
# --------------------------------------------------------------------------------------------------------


def describe(x: Any) -> Any:
    """Input-set description in eval-zoo's style: ``Tensor[2, 3]:float32``, containers kept."""
    import torch

    if isinstance(x, torch.Tensor):
        return f"Tensor[{', '.join(str(s) for s in x.shape)}]:{str(x.dtype).replace('torch.', '')}"
    if isinstance(x, (list, tuple)):
        return [describe(v) for v in x]
    if isinstance(x, dict):
        return {str(k): describe(v) for k, v in x.items()}
    if isinstance(x, (int, float, bool, str)) or x is None:
        return x
    return type(x).__name__


def clone(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if isinstance(x, list):
        return [clone(v) for v in x]
    if isinstance(x, tuple):
        return tuple(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return x


def flat_tensors(x: Any, out: list) -> list:
    import torch

    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            flat_tensors(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            flat_tensors(v, out)
    elif hasattr(x, "__dict__") and not callable(x):
        for v in vars(x).values():
            flat_tensors(v, out)
    return out


def compare(eager: list, compiled: list) -> dict:
    diff, n, mism = 0.0, 0, []
    for i, (a, b) in enumerate(zip(eager, compiled)):
        ta, tb = flat_tensors(a, []), flat_tensors(b, [])
        for j, (x, y) in enumerate(zip(ta, tb)):
            n += 1
            if x.shape != y.shape:
                mism.append(f"{i}.{j}: {list(x.shape)} vs {list(y.shape)}")
                continue
            if x.numel() and (x.is_floating_point() or x.is_complex()):
                d = (x.detach().double() - y.detach().double()).abs().nan_to_num(0.0).max().item()
            elif x.numel():
                d = float((x != y).sum().item())
            else:
                d = 0.0
            diff = max(diff, d)
    return {"max_abs_diff": diff, "n_tensors": n, "shape_mismatch": mism[:10]}


class Recorder:
    """Hooks Dynamo's graph-break log and line-start tracer; keeps what they saw."""

    def __init__(self, libraries: set[str]) -> None:
        self.libraries = libraries
        self.breaks: list[dict] = []
        self.traced: dict[str, set[int]] = defaultdict(set)
        self.excluded: Counter = Counter()
        self.recompiles: list[dict] = []

    def in_library(self, filename: str) -> bool:
        return top_package(rel_path(filename)) in self.libraries

    def install(self) -> None:
        import logging

        import torch
        from torch._dynamo import symbolic_convert as sc
        from torch._dynamo.exc import Unsupported

        rec = self
        orig_log = sc.InstructionTranslatorBase.log_graph_break
        orig_starts = sc.InstructionTranslatorBase.starts_line

        def log_graph_break(self, code_options, reason, exc):  # type: ignore[no-untyped-def]
            if not getattr(exc, "logged", False):
                try:
                    stack = getattr(exc, "real_stack", None)
                    if stack is None:
                        stack = torch._guards.TracingContext.extract_stack()
                    stack = sc.collapse_resume_frames(sc.get_stack_above_dynamo() + list(stack))
                    frames = [(fr.filename, fr.lineno, fr.line or "") for fr in stack]
                    gb_type = exc.gb_type if isinstance(exc, Unsupported) else type(exc).__name__
                    rec.breaks.append(
                        {
                            "frames": frames,
                            "reason": str(reason),
                            "gb_type": gb_type or "",
                            "skip_frame": bool(getattr(exc, "skip_frame", False)),
                        }
                    )
                except Exception as e:  # the label must not change what Dynamo does
                    rec.breaks.append(
                        {
                            "frames": [],
                            "reason": f"<recorder error {e!r}> {reason}",
                            "gb_type": "",
                            "skip_frame": False,
                        }
                    )
            return orig_log(self, code_options, reason, exc)

        def starts_line(self, lineno):  # type: ignore[no-untyped-def]
            if self.lineno != lineno:
                fn = self.f_code.co_filename
                if rec.in_library(fn):
                    rec.traced[rel_path(fn)].add(lineno)
                else:
                    rec.excluded[top_package(rel_path(fn)) if SITE_RE.search(fn) else "<not installed>"] += 1
            return orig_starts(self, lineno)

        sc.InstructionTranslatorBase.log_graph_break = log_graph_break
        sc.InstructionTranslatorBase.starts_line = starts_line

        class RecompileHandler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                text = record.getMessage()
                m = re.match(r"Recompiling function (\S+) in (.+):(\d+)", text)
                if m:
                    rec.recompiles.append(
                        {
                            "function": m.group(1),
                            "file": rel_path(m.group(2)),
                            "firstlineno": int(m.group(3)),
                            "text": text[:2000],
                        }
                    )

        torch._logging.set_logs(recompiles=True)
        lg = logging.getLogger("torch._dynamo.guards.__recompiles")
        lg.addHandler(RecompileHandler())

    def break_records(self) -> list[dict]:
        """One entry per (location, gb_type, reason), placed at the innermost library frame."""
        grouped: dict[tuple, dict] = {}
        for b in self.breaks:
            lib_frames = [f for f in b["frames"] if self.in_library(f[0])]
            reason = b["reason"]
            if lib_frames:
                fn, ln, src = lib_frames[-1]
                in_lib = True
            elif b["frames"]:
                fn, ln, src = b["frames"][-1]
                in_lib = False
            else:
                fn, ln, src, in_lib = None, None, "", False
            file = rel_path(fn) if fn else None
            m = re.search(r"Graph break encountered:\n\n(.*?)\n", reason)
            underlying = m.group(1).strip() if m else (b["gb_type"] or reason.split("\n", 1)[0])
            key = (file, ln, b["gb_type"], underlying)
            e = grouped.get(key)
            if e is None:
                e = grouped[key] = {
                    "file": file,
                    "line": ln,
                    "library": top_package(file) if file else None,
                    "source_line": src.strip(),
                    "reason_short": reason.split("\n", 1)[0].strip(),
                    "gb_type": b["gb_type"],
                    "reason": reason,
                    "in_library": in_lib,
                    "innermost_frame": f"{file}:{ln}" if file else None,
                    "user_stack": [f"{rel_path(f)}:{l}" for f, l, _ in lib_frames],
                    "sources": ["log_graph_break"],
                    "logged_count": 0,
                    "underlying_reason": underlying,
                    "frame_fallback": b["skip_frame"] or "falling back to eager" in reason,
                }
            e["logged_count"] += 1
        return list(grouped.values())


def load_specs(path: str):  # type: ignore[no-untyped-def]
    """The run-spec module (``runspecs.py`` by default): ``SPECS``, ``LIBRARIES`` and ``versions()``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("runspecs", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["runspecs"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def run_one(spec_name: str, record_path: str, specs_path: str, outputs_path: str | None = None,
            flags: tuple[str, ...] = ()) -> None:
    """One spec in this process; with ``outputs_path``, its eager and compiled outputs are saved there
    (flattened to tensors and numbers) for ``fix.py`` to compare.  ``flags``: Dynamo settings turned on
    for the compiled calls besides the spec's own (``fix.py`` measures the capture flags this way)."""
    t_proc = time.time()
    import torch

    torch.set_num_threads(1)
    t0 = time.time()
    runspecs = load_specs(specs_path)

    spec = runspecs.SPECS[spec_name]
    versions = runspecs.versions()
    dynamo_config = {**spec.dynamo_config, **{flag: True for flag in flags}}
    import_s = time.time() - t0
    record: dict[str, Any] = {
        "spec": spec.name,
        "library": spec.library,
        "model": spec.model,
        "setting": spec.setting,
        "versions": versions,
        "status": "started",
        "config": spec.config,
        "notes": spec.notes,
        "import_s": round(import_s, 2),
        "dynamo_config": dynamo_config,
    }

    def dump() -> None:
        tmp = record_path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(record, fh, indent=1, default=str)
        os.replace(tmp, record_path)

    rec = Recorder(set(runspecs.LIBRARIES))
    rec.install()

    def fill() -> None:
        breaks = rec.break_records()
        record["breaks"] = breaks
        record["break_location_count"] = len({(b["file"], b["line"]) for b in breaks if b["in_library"]})
        record["recompiles"] = rec.recompiles
        record["recompile_count"] = len(rec.recompiles)
        record["traced_lines"] = {f: sorted(v) for f, v in sorted(rec.traced.items())}
        record["traced_line_count"] = sum(len(v) for v in rec.traced.values())
        record["traced_lines_excluded_counts"] = dict(rec.excluded)
        from torch._dynamo.utils import counters

        record["counters"] = {
            k: dict(v) for k, v in counters.items() if k in ("frames", "stats", "graph_break")
        }
        record["graph_count"] = counters["stats"].get("unique_graphs", 0)
        record["process_wall_s"] = round(time.time() - t_proc, 2)

    torch.manual_seed(0)
    t0 = time.time()
    fn = spec.build()
    inputs = spec.inputs()
    record["build_s"] = round(time.time() - t0, 2)
    record["input_sets"] = [{"args": describe(list(a)), "kwargs": describe(k)} for a, k in inputs]
    mods = [m for m in [fn] if isinstance(fn, torch.nn.Module)]
    record["n_params"] = sum(p.numel() for m in mods for p in m.parameters())

    grad = torch.enable_grad if spec.setting == "train" else torch.no_grad
    t0 = time.time()
    eager_out = []
    with grad():
        for i, (a, k) in enumerate(inputs):
            torch.manual_seed(1000 + i)
            eager_out.append(fn(*clone(a), **clone(k)))
    record["eager_s"] = round(time.time() - t0, 2)
    record["status"] = "eager_ok"
    dump()

    torch._dynamo.reset()
    torch.manual_seed(0)
    fresh = spec.build()
    compiled = torch.compile(fresh, backend="eager")
    from torch._dynamo.utils import counters

    record["per_input_set"] = []
    comp_out = []
    t_c = time.time()
    record["status"] = "partial"
    with torch._dynamo.config.patch(**dynamo_config):
        for i, (a, k) in enumerate(inputs):
            g0 = counters["stats"].get("unique_graphs", 0)
            r0 = len(rec.recompiles)
            t0 = time.time()
            try:
                with grad():
                    torch.manual_seed(1000 + i)
                    comp_out.append(compiled(*clone(a), **clone(k)))
            except Exception as e:  # a crash while compiling: observations before it are kept
                record["status"] = "compile_error"
                record["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
                record["per_input_set"].append(
                    {"set": i, "error": True, "wall_s": round(time.time() - t0, 2)}
                )
                break
            record["per_input_set"].append(
                {
                    "set": i,
                    "new_graphs": counters["stats"].get("unique_graphs", 0) - g0,
                    "recompiles": len(rec.recompiles) - r0,
                    "wall_s": round(time.time() - t0, 2),
                }
            )
            record["completed_input_sets"] = i + 1
            fill()
            dump()
    record["compile_wall_s"] = round(time.time() - t_c, 2)
    record["completed_input_sets"] = len(comp_out)
    if record["status"] == "partial" and len(comp_out) == len(inputs):
        record["status"] = "ok"
    try:
        record["eager_vs_compiled"] = compare(eager_out[: len(comp_out)], comp_out)
    except Exception as e:
        record["eager_vs_compiled"] = {"error": repr(e)[:300]}
    if outputs_path:
        from dynalint.verify.outputs import flatten

        torch.save({"eager": flatten(eager_out), "compiled": flatten(comp_out)}, outputs_path)
    fill()
    dump()


# --------------------------------------------------------------------------------------------------------
# Parent side: every run in its own subprocess.
# --------------------------------------------------------------------------------------------------------


def launch(spec: str, timeout: float, tmpdir: Path, specs_path: str, *, outputs: bool = False,
           pythonpath: str | None = None, flags: tuple[str, ...] = ()) -> dict:
    """Runs one spec in a subprocess (``pythonpath`` first on its path: where the libraries are imported
    from); with ``outputs``, its outputs are saved beside the record (``rec["outputs"]``); ``flags``:
    Dynamo settings the compiled calls run with besides the spec's own."""
    out = tmpdir / (re.sub(r"[^A-Za-z0-9_.-]", "_", spec) + ".json")
    log = tmpdir / (out.stem + ".log")
    saved = tmpdir / (out.stem + ".pt")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    env.pop("TORCH_LOGS", None)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    t0 = time.time()
    with open(log, "w") as lf:
        try:
            p = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--one",
                    spec,
                    "--record",
                    str(out),
                    "--specs",
                    specs_path,
                    *(["--outputs", str(saved)] if outputs else []),
                    *(arg for flag in flags for arg in ("--flag", flag)),
                ],
                stdout=lf,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                env=env,
            )
            rc: int | None = p.returncode
        except subprocess.TimeoutExpired:
            rc = None
    rec: dict = {}
    if out.exists():
        with open(out) as fh:
            rec = json.load(fh)
    if not rec:
        rec = {"spec": spec, "status": "crashed"}
    if rc is None:
        rec["notes"] = ((rec.get("notes") or "") + f" timed out after {timeout:.0f}s").strip()
        # Input sets completed before the timeout keep their observations; with none, nothing is scored.
        if rec.get("status") != "partial" or not rec.get("completed_input_sets"):
            rec["status"] = "timeout"
    elif rc != 0 and rec.get("status") not in SCORED:
        tail = log.read_text(errors="replace")[-2000:]
        rec["status"] = "eager_error" if rec.get("status") in ("started", None, "crashed") else "crashed"
        rec["error"] = tail
    rec["process_wall_s"] = round(time.time() - t0, 2)
    if outputs and saved.exists():
        rec["outputs"] = str(saved)
    return rec


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--specs", default=str(HERE / "runspecs.py"), help="run-spec module (default: runspecs.py)"
    )
    ap.add_argument("--one")
    ap.add_argument("--record")
    ap.add_argument("--outputs", help="with --one: save the run's eager and compiled outputs here")
    ap.add_argument("--flag", action="append", default=[],
                    help="with --one: a Dynamo setting to turn on for the compiled calls (repeatable)")
    ap.add_argument("--spec", nargs="*", help="only specs starting with these prefixes")
    ap.add_argument("--out", default=str(HERE / "labels.json"))
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--summary", action="store_true", help="print what --out holds and exit")
    ap.add_argument(
        "--files", default=str(HERE / "files.txt"), help="where to write the labelled files' list"
    )
    a = ap.parse_args(argv)
    if a.one:
        run_one(a.one, a.record, a.specs, a.outputs, tuple(a.flag))
        return
    if a.summary:
        with open(a.out) as fh:
            summarize(json.load(fh))
        return
    runspecs = load_specs(a.specs)
    names = [n for n in runspecs.SPECS if not a.spec or any(n.startswith(p) for p in a.spec)]
    if a.list:
        print("\n".join(names))
        return
    existing: dict[str, dict] = {}
    if os.path.exists(a.out):
        with open(a.out) as fh:
            existing = {r["spec"]: r for r in json.load(fh)}
    tmpdir = Path(os.environ.get("REALCODE_TMP", "/tmp")) / f"realcode-{os.getpid()}"
    tmpdir.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> dict:
        r = launch(name, a.timeout, tmpdir, a.specs)
        nb = len({(b["file"], b["line"]) for b in r.get("breaks", []) if b.get("in_library")})
        print(
            f"{name:48s} {r.get('status'):14s} breaks={nb:3d} traced={r.get('traced_line_count', 0):5d} "
            f"{r.get('process_wall_s', 0):6.1f}s {(r.get('error') or '')[:120]!r}",
            flush=True,
        )
        return r

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for r in ex.map(one, names):
            existing[r["spec"]] = r
            order = [n for n in runspecs.SPECS if n in existing] + [
                n for n in existing if n not in runspecs.SPECS
            ]
            with open(a.out, "w") as fh:
                json.dump([existing[n] for n in order], fh, indent=1, default=str)
    write_files_list(list(existing.values()), a.files)
    print(f"logs in {tmpdir}")


def summarize(records: list[dict]) -> None:
    """Runs, statuses, unique break lines and traced lines, overall and per library; gb_type breakdown."""
    scored = [r for r in records if r.get("status") in SCORED]
    print(f"runs={len(records)} statuses={dict(Counter(r.get('status') for r in records))}")
    libs = sorted(
        {top_package(f) for r in scored for f in r.get("traced_lines", {})}
        | {b["library"] for r in scored for b in r.get("breaks", []) if b.get("in_library")}
    )
    for lib in [None, *libs]:
        sel = (lambda f: True) if lib is None else (lambda f, lib=lib: top_package(f) == lib)
        brk = {
            (b["file"], b["line"])
            for r in scored
            for b in r.get("breaks", [])
            if b.get("in_library") and sel(b["file"])
        }
        tr = {
            (f, ln)
            for r in scored
            for f, lines in r.get("traced_lines", {}).items()
            if sel(f)
            for ln in lines
        }
        runs = sum(1 for r in scored if lib is None or r.get("library") == lib)
        print(
            f"  {lib or 'ALL':26s} runs={runs:3d} break_lines={len(brk):4d} traced_lines={len(tr):6d} "
            f"files={len({f for f, _ in tr} | {f for f, _ in brk}):4d}"
        )
    by_type: dict[str, set] = defaultdict(set)
    by_under: dict[str, set] = defaultdict(set)
    for r in scored:
        for b in r.get("breaks", []):
            if b.get("in_library"):
                by_type[b["gb_type"]].add((b["file"], b["line"]))
                by_under[b["underlying_reason"]].add((b["file"], b["line"]))
    print(
        "  break lines by gb_type:",
        {k: len(v) for k, v in sorted(by_type.items(), key=lambda kv: -len(kv[1]))},
    )
    print(
        "  break lines by underlying reason:",
        {k: len(v) for k, v in sorted(by_under.items(), key=lambda kv: -len(kv[1]))},
    )
    out = sum(1 for r in scored for b in r.get("breaks", []) if not b.get("in_library"))
    print(f"  break entries outside the libraries (user step code, not scored): {out}")


def write_files_list(records: list[dict], path: str) -> None:
    files = set()
    for r in records:
        if r.get("status") not in SCORED:
            continue
        files.update(r.get("traced_lines", {}))
        files.update(b["file"] for b in r.get("breaks", []) if b.get("in_library") and b.get("file"))
    with open(path, "w") as fh:
        fh.write("".join(f"{f}\n" for f in sorted(files)))


if __name__ == "__main__":
    main()
