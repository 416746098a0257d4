#!/usr/bin/env python
"""Graph breaks that ``dynalint fix --unsafe-fixes`` removes from real transformers models.

Every causal-LM architecture of the installed ``transformers`` is built from a tiny
random-weight configuration (a few layers, hidden size 32, seeded weights) and run
once under ``torch.compile(backend="eager")``; the graph breaks are read from
Dynamo's ``graph_breaks`` log and attributed to the innermost frame inside the
library (a unique *break line* is one ``file:line``).  The models that break are
kept.  Then the library package is copied to a temporary folder, every file of it
that a breaking model loaded is fixed with ``dynalint fix --unsafe-fixes --scope
all`` (the library has no ``torch.compile`` of its own: the user compiles the
model), and each breaking model is run again from the fixed copy, same seed,
same weights, same inputs.  Attention and experts use the library's own Python
implementations (``eager``), not fused kernels::

    OMP_NUM_THREADS=1 nice python benchmarks/realfix_transformers.py [--limit N] [--models a,b] [-v]

Prints the table GraphMend reports: break lines before -> after, the share
removed, models fully fixed, models whose outputs stayed equal (bitwise, compiled
and eager), and models that gained a break line.  Each model runs in its own
process with a timeout, on one thread.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

#: Sizes shrunk in every configuration that has them (absent keys are left alone).
TINY = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 64, "vocab_size": 128, "max_position_embeddings": 64, "head_dim": 8,
    "num_local_experts": 4, "num_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
    "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "d_model": 32, "n_layers": 2,
    "n_heads": 4, "num_layers": 2, "num_heads": 4, "ffn_dim": 64, "d_ff": 64,
    "decoder_layers": 2, "encoder_layers": 2, "decoder_attention_heads": 4, "encoder_attention_heads": 4,
    "decoder_ffn_dim": 64, "encoder_ffn_dim": 64, "kv_lora_rank": 16, "q_lora_rank": 16,
    "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8, "first_k_dense_replace": 1,
    "n_group": 1, "topk_group": 1, "rotary_dim": 8, "partial_rotary_factor": 0.5,
}
SEQ, BATCH, SEED = 12, 2, 0


# ---------------------------------------------------------------------------------------------
# worker: one model, one process


def _tiny_config(model_type: str):
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    default = cls()
    kwargs = {k: v for k, v in TINY.items() if k in default.to_dict()}
    if "partial_rotary_factor" in kwargs and default.to_dict().get("partial_rotary_factor") in (None, 1.0):
        kwargs.pop("partial_rotary_factor")
    config = cls(**kwargs)
    # the library's own Python implementations (what the modeling files say), not fused kernels
    for sub in {id(c): c for c in [config, *(getattr(config, k) for k in config.sub_configs)]
                if hasattr(c, "to_dict")}.values() if hasattr(config, "sub_configs") else [config]:
        sub._attn_implementation = "eager"
        try:
            sub._experts_implementation = "eager"
        except Exception:
            pass
    return config


def _as_tensors(out) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _as_tensors(o)]
    return []


def worker(model_type: str, out_path: str) -> None:
    import torch
    import torch._dynamo

    torch.set_num_threads(1)
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from dynalint.verify.probe import DynamoLog

    lib = os.path.dirname(os.path.realpath(transformers.__file__))
    cls = getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])
    config = _tiny_config(model_type)
    torch.manual_seed(SEED)
    model = cls(config).eval()
    vocab = int(getattr(config, "vocab_size", None) or getattr(config.get_text_config(), "vocab_size", 128))
    gen = torch.Generator().manual_seed(SEED + 1)
    ids = torch.randint(0, min(vocab, 100), (BATCH, SEQ), generator=gen)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[0, :3] = 0  # one left-padded row
    result: dict = {"lib": lib}
    with torch.no_grad():
        eager = _as_tensors(model(input_ids=ids, attention_mask=mask, use_cache=False))
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="eager")
        flags = {k: True for k in os.environ.get("REALFIX_DYNAMO_FLAGS", "").split(",") if k}
        in_lib = lambda p: os.path.realpath(p).startswith(lib + os.sep)  # noqa: E731
        with torch._dynamo.config.patch(**flags), DynamoLog(is_user=in_lib) as log:
            outs = _as_tensors(compiled(input_ids=ids, attention_mask=mask, use_cache=False))
    result["breaks"] = sorted({(os.path.relpath(b.file, lib), b.line, b.gb_type, b.function) for b in log.breaks})
    loaded = [m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)]
    result["files"] = sorted({os.path.relpath(os.path.realpath(f), lib) for f in loaded if in_lib(f)})
    torch.save({"eager": eager, "compiled": outs}, out_path + ".pt")
    with open(out_path, "w") as fh:
        json.dump(result, fh)


# ---------------------------------------------------------------------------------------------
# driver


def zygote(tag: str, out_dir: str, timeout: float, model_types: list[str]) -> None:
    """Import torch and the library once, then fork one child per model (each with a timeout)."""
    import signal

    import torch  # noqa: F401  (imported once, shared by the children)
    import transformers  # noqa: F401

    import dynalint.verify.probe  # noqa: F401

    for mt in model_types:
        out = os.path.join(out_dir, f"{mt}.{tag}.json")
        pid = os.fork()
        if pid == 0:
            signal.alarm(int(timeout))
            code = 0
            try:
                worker(mt, out)
            except BaseException as exc:  # the child reports and exits, the zygote goes on
                with open(out + ".err", "w") as fh:
                    fh.write(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160])
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status) and not os.path.exists(out + ".err"):
            with open(out + ".err", "w") as fh:
                fh.write("timeout" if os.WTERMSIG(status) == signal.SIGALRM else f"signal {os.WTERMSIG(status)}")
        print(f"  {tag} {mt}", file=sys.stderr, flush=True)


def run_models(model_types: list[str], pkg_root: str | None, timeout: float, tmp: str, tag: str,
               verbose: bool, flags: str = "") -> dict[str, dict]:
    """Each model in its own forked process of one zygote (importing torch once)."""
    env = dict(os.environ, REALFIX_DYNAMO_FLAGS=flags, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error")
    if pkg_root:
        env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    cmd = ["nice", "-n", "10", sys.executable, os.path.abspath(__file__), "--zygote", tag, tmp, str(timeout),
           ",".join(model_types)]
    subprocess.run(cmd, env=env, stderr=None if verbose else subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return {mt: _read(tmp, mt, tag) for mt in model_types}


def _read(tmp: str, model_type: str, tag: str) -> dict:
    out = os.path.join(tmp, f"{model_type}.{tag}.json")
    if os.path.exists(out):
        with open(out) as fh:
            res = json.load(fh)
        res["outputs"] = out + ".pt"
        return res
    if os.path.exists(out + ".err"):
        with open(out + ".err") as fh:
            return {"error": fh.read().strip()}
    return {"error": "no result"}


def _lines(res: dict | None) -> int | None:
    if res is None or "error" in res:
        return None
    return len({(f, ln) for f, ln, *_ in res["breaks"]})


def same_outputs(a: str, b: str) -> bool:
    import torch

    x, y = torch.load(a), torch.load(b)
    return all(
        len(x[k]) == len(y[k]) and all(torch.equal(p, q) for p, q in zip(x[k], y[k])) for k in ("eager", "compiled")
    )


def copy_library(dest: str) -> str:
    import transformers

    src = os.path.dirname(os.path.realpath(transformers.__file__))
    root = os.path.join(dest, "site")
    shutil.copytree(src, os.path.join(root, "transformers"), ignore=shutil.ignore_patterns("__pycache__"))
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=2, metavar=("MODEL_TYPE", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--zygote", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--models", help="comma-separated model types (default: every causal LM)")
    ap.add_argument("--limit", type=int, default=0, help="at most N model types")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per model run")
    ap.add_argument("--breaking", help="JSON file of breaking model types: read if it exists, else written")
    ap.add_argument("--before-dir", help="reuse the original runs kept in this folder (--keep); run the others")
    ap.add_argument("--no-whatif", action="store_true",
                    help="skip the rerun of the original with Dynamo's capture settings")
    ap.add_argument("--fix-args", default="", help="extra arguments for `dynalint fix` (e.g. '--ignore DYN105')")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    if args.zygote:
        tag, out_dir, timeout, names = args.zygote
        zygote(tag, out_dir, float(timeout), names.split(","))
        return 0

    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    types = args.models.split(",") if args.models else sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    if args.limit:
        types = types[: args.limit]
    tmp = tempfile.mkdtemp(prefix="dynalint-realfix-")
    t0 = time.time()
    before: dict[str, dict] = {}
    known = None
    if args.breaking and os.path.exists(args.breaking):
        with open(args.breaking) as fh:
            known = json.load(fh)
        types = [t for t in types if t in known]
    reused: dict[str, dict] = {}
    if args.before_dir:
        done = {f[: -len(".before.json")] for f in os.listdir(args.before_dir) if f.endswith(".before.json")}
        for t in (t for t in types if t in done):
            for suffix in ("", ".pt"):
                shutil.copy(os.path.join(args.before_dir, f"{t}.before.json{suffix}"), tmp)
            reused[t] = _read(tmp, t, "before")
    ran = run_models([t for t in types if t not in reused], None, args.timeout, tmp, "before", args.verbose)
    for mt, res in sorted({**reused, **ran}.items()):
        if args.verbose:
            print(f"  {mt:28} {res.get('error') or len(res['breaks'])}", file=sys.stderr, flush=True)
        if "error" not in res and res["breaks"]:
            before[mt] = res
    if args.breaking and known is None:
        with open(args.breaking, "w") as fh:
            json.dump(sorted(before), fh, indent=1)
    print(f"{len(types)} model types run, {len(before)} break ({time.time() - t0:.0f}s)", file=sys.stderr)

    root = copy_library(tmp)
    # every library file a breaking model loaded (its modeling file and the shared helpers it uses)
    loaded = sorted({f for res in before.values() for f in res["files"]})
    files = [os.path.join(root, "transformers", f) for f in loaded]
    fix = subprocess.run(["nice", "-n", "10", sys.executable, "-m", "dynalint", "fix", "--unsafe-fixes",
                          "--exit-zero", "--scope", "all", "-j", "1",
                          *args.fix_args.split(), *files], capture_output=True, text=True)
    print(f"fixed {len(loaded)} library files the breaking models load", file=sys.stderr)
    if args.verbose:
        print(fix.stderr.strip()[-1500:], file=sys.stderr)

    whatif = {} if args.no_whatif else run_models(
        sorted(before), None, args.timeout, tmp, "flags", args.verbose,
        flags="capture_scalar_outputs,capture_dynamic_output_shape_ops")
    rows, lines_before, lines_after, fully, equal, gained, failed = [], 0, 0, 0, 0, [], []
    afters = run_models(sorted(before), root, args.timeout, tmp, "after", args.verbose)
    for mt, res in sorted(before.items()):
        after = afters[mt]
        nb = len({(f, ln) for f, ln, *_ in res["breaks"]})
        if "error" in after:
            failed.append(mt)
            rows.append((mt, nb, None, None, after["error"], _lines(whatif.get(mt))))
            lines_before += nb
            lines_after += nb
            continue
        na = len({(f, ln) for f, ln, *_ in after["breaks"]})
        eq = same_outputs(res["outputs"], after["outputs"])
        lines_before += nb
        lines_after += na
        fully += na == 0
        equal += eq
        if na > nb:
            gained.append(mt)
        rows.append((mt, nb, na, eq, "", _lines(whatif.get(mt))))
        if args.verbose:
            for f, ln, gb, fn in after["breaks"]:
                print(f"    {mt}: {f}:{ln} {fn}: {gb}", file=sys.stderr)

    print(f"{'model':28} {'before':>6} {'after':>6} {'flags':>6}  outputs (fixed vs original)")
    for mt, nb, na, eq, err, nf in rows:
        status = err or ("equal" if eq else "DIFFER")
        print(f"{mt:28} {nb:6} {'-' if na is None else na:>6} {'-' if nf is None else nf:>6}  {status}")
    n = len(before)
    removed = lines_before - lines_after
    print()
    print(f"breaking models          {n}")
    print(f"break lines before       {lines_before}")
    print(f"break lines after        {lines_after}")
    print(f"removed                  {removed} ({100.0 * removed / max(lines_before, 1):.0f}%)")
    print(f"models fully fixed       {fully}/{n} ({100.0 * fully / max(n, 1):.0f}%)")
    print(f"outputs equal            {equal}/{n - len(failed)}")
    print(f"models gaining a break   {len(gained)} {' '.join(gained)}")
    if whatif:
        ok = [r for r in rows if r[5] is not None]
        nf = sum(r[5] for r in ok)
        nb_ok = sum(r[1] for r in ok)
        same = sum(1 for mt in before if "error" not in whatif.get(mt, {"error": 1})
                   and same_outputs(before[mt]["outputs"], whatif[mt]["outputs"]))
        print(f"with capture flags       {nb_ok} -> {nf} break lines on {len(ok)} models "
              f"({100.0 * (nb_ok - nf) / max(nb_ok, 1):.0f}% removed), {sum(r[5] == 0 for r in ok)} break-free, "
              f"outputs equal {same}/{len(ok)} (original code, capture_scalar_outputs + "
              f"capture_dynamic_output_shape_ops)")
    if failed:
        print(f"fixed copy failed to run {len(failed)} {' '.join(failed)}")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
