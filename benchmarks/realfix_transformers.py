#!/usr/bin/env python
"""Graph breaks that ``dynalint fix --unsafe-fixes`` removes from real transformers models.

Every architecture of the installed ``transformers`` is built, for each model head
of ``KINDS`` it has (causal LM, sequence classification, seq2seq LM, image-text
to text, image and audio classification, CTC), from a tiny random-weight
configuration (a few layers, hidden size 32, image size 32, seeded weights) and
run once under ``torch.compile(backend="eager")``; the graph breaks are read
from Dynamo's ``graph_breaks`` log and attributed to the innermost frame inside
the library (a unique *break line* is one ``file:line``).  The models that break
are kept.  Then the library package is copied to a temporary folder, every file
of it that a breaking model loaded is fixed with ``dynalint fix --unsafe-fixes
--scope all`` (the library has no ``torch.compile`` of its own: the user
compiles the model), and each breaking model is run again from the fixed copy,
same seed, same weights, same inputs.  Models are built as users get them: the
library's default attention and experts implementations (``--implementations
eager`` forces the library's own Python loops instead, and then the what-if
column reruns the original with the defaults, so the two can be compared).
Outputs are compared as PyTorch compares compiled code: ``assert_close`` at the
dtype's default tolerances, NaN/inf at the same places, same shapes and dtypes;
the bitwise-equal count is printed beside it.

Inputs come from the configuration alone, one generic builder per kind of input
(``build_inputs``): token ids drawn below ``ORDINARY_IDS`` with the special
token ids of the configuration moved above them (so the two never collide), one
left-padded row; for sequence classification every row ends with the
end-of-sequence token; for image-text models one image per row of the vision
configuration's size, with as many image placeholder tokens as the model's own
``get_image_features`` makes features; raw audio or filter-bank frames for
audio models.  Models whose configuration or inputs do not fit these builders
fail to run and are left out (the scan lists them with their error)::

    OMP_NUM_THREADS=1 nice python benchmarks/realfix_transformers.py [--kinds causal-lm,seq-cls]
        [--models image-text:llava,seq-cls:bart] [--every K] [--limit N] [--scan-dir DIR] [--scan-only]
        [--labels OUT] [--json OUT] [-v]

The original runs (the scan) are kept in ``--scan-dir`` (default
``$TMPDIR/dynalint-realfix-scan``) and not repeated; ``breaking.json`` there
lists the breaking entries and their break lines, ``scan.json`` every entry with
its lines or error.  Prints, in three columns, the table GraphMend reports: the
fixed copy (``rewrites``), the original code run with Dynamo's capture settings
instead (``flags``: ``capture_scalar_outputs``, ``capture_dynamic_output_shape_ops``)
and a second copy, fixed with those flags declared, run under them (``both``: the rewrites a user who
compiles with the flags gets, those that need the flags included): break lines before -> after (a line of
the fixed copy mapped back to the original line it comes from), the share
removed, models break-free, models that raised, models that gained a break line,
outputs within ``assert_close`` (bitwise count beside; compiled and eager); then the
unique break lines by Dynamo category before and in each column.  ``--no-whatif``
runs the ``rewrites`` column only; ``--json`` writes the rows.  Each model runs in its
own process with a timeout, on one thread.

With `--labels OUT` the scan is also written as eval-zoo labels (every library line Dynamo traced,
breaks at the innermost library frame) and `files.txt` beside it, for `score_zoo.py`.

Latest numbers (transformers 5.24, torch 2.13, CPU; also in the README): 529 entries, 334 ran,
74 break; break lines 186 -> 172 (8% removed), 11/74 fully fixed, outputs equal 74/74, no
model gained a break.
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

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                         "realcode")]
from fix import LineMap, capture_options, run_fix  # noqa: E402  (realcode's: a fixed copy's lines, its `fix` run)
from fix_population import FLAGS  # noqa: E402

#: Sizes shrunk in every configuration and sub-configuration that has them (absent keys are left alone).
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
    "image_size": 32, "patch_size": 8, "max_source_positions": 32, "num_mel_bins": 16,
}
LAYER_COUNTS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "decoder_layers", "encoder_layers")
SEQ, BATCH, SEED = 12, 2, 0
KINDS = ("causal-lm", "seq-cls", "seq2seq-lm", "image-text", "image-cls", "audio-cls", "ctc")
#: Random token ids are drawn below this; the special tokens (pad, eos, image placeholder...) of the
#: configuration are moved above it, inside the tiny vocabulary, so that the two never collide.
ORDINARY_IDS = 96


# ---------------------------------------------------------------------------------------------
# heads: which model class, and one generic input builder per kind of input


def _heads() -> dict[str, dict[str, str]]:
    from transformers.models.auto import modeling_auto as m

    return {  # the keys are KINDS
        "causal-lm": m.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        "seq-cls": m.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
        "seq2seq-lm": m.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        "image-text": m.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        "image-cls": m.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES,
        "audio-cls": m.MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES,
        "ctc": m.MODEL_FOR_CTC_MAPPING_NAMES,
    }


def entries(kinds: list[str]) -> list[str]:
    """Benchmark entries ``kind:model_type`` (a bare model type is a causal LM)."""
    heads = _heads()
    return [f"{k}:{mt}" for k in kinds for mt in sorted(heads[k])]


def _split(entry: str) -> tuple[str, str]:
    kind, _, mt = entry.rpartition(":")
    return kind or "causal-lm", mt


def _configs(config) -> list:
    """The configuration and its sub-configurations, each once."""
    out, todo = {}, [config]
    while todo:
        c = todo.pop()
        if id(c) in out or not hasattr(c, "to_dict"):
            continue
        out[id(c)] = c
        todo.extend(getattr(c, k, None) for k in (getattr(c, "sub_configs", None) or {}))
    return list(out.values())


def _tiny_kwargs(default) -> dict:
    d = default.to_dict()
    kwargs = {k: v for k, v in TINY.items() if k in d and not isinstance(d[k], (list, dict))}
    if "partial_rotary_factor" in kwargs and d.get("partial_rotary_factor") in (None, 1.0):
        kwargs.pop("partial_rotary_factor")
    # per-layer settings (a list as long as the default layer count, a dict by layer index) follow the
    # new layer count
    layers = {d[k]: v for k, v in kwargs.items() if k in LAYER_COUNTS and isinstance(d[k], int)}
    for key, value in d.items():
        if key in kwargs or key in getattr(default, "sub_configs", None) or {}:
            continue
        if isinstance(value, list) and len(value) in layers:
            kwargs[key] = value[: layers[len(value)]]
        elif isinstance(value, dict) and value and all(str(k).isdigit() for k in value) and layers:
            n = min(layers.values())
            kwargs[key] = {k: v for k, v in value.items() if int(k) < n}
    for key in getattr(default, "sub_configs", None) or {}:
        sub = getattr(default, key, None)
        if hasattr(sub, "to_dict"):
            kwargs[key] = {**sub.to_dict(), **_tiny_kwargs(sub)}
    return kwargs


def _special_ids(config) -> None:
    """Move every special token id (``*_token_id``, ``*_token_index``) inside the tiny vocabulary,
    above the ordinary ids, one new id per old id across the sub-configurations; a missing pad id
    gets one (sequence classification of a batch needs it)."""
    vocab = int(getattr(config.get_text_config(), "vocab_size", None) or TINY["vocab_size"])
    moved: dict[int, int] = {}
    configs = _configs(config)
    for c in configs:
        for key, value in list(vars(c).items()):
            if not key.endswith(("_token_id", "_token_index")) or isinstance(value, bool):
                continue
            values = value if isinstance(value, list) else [value]
            if not all(isinstance(v, int) for v in values):
                continue
            for v in values:
                if v not in moved:
                    moved[v] = vocab - 1 - len(moved)
            new = [moved[v] for v in values]
            setattr(c, key, new if isinstance(value, list) else new[0])
    for c in configs:
        if "pad_token_id" in vars(c) and c.pad_token_id is None:
            c.pad_token_id = vocab - 1 - len(moved)


def _tiny_config(model_type: str, implementations: str = "defaults"):
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    config = cls(**_tiny_kwargs(cls()))
    _special_ids(config)
    if implementations == "eager":  # the library's own Python loops instead of its defaults
        for sub in _configs(config):
            sub._attn_implementation = "eager"
            try:
                sub._experts_implementation = "eager"
            except Exception:
                pass
    return config


def _token_ids(config, gen, length: int = SEQ):
    import torch

    return torch.randint(0, ORDINARY_IDS, (BATCH, length), generator=gen)


def _padding_mask(length: int = SEQ):
    import torch

    mask = torch.ones(BATCH, length, dtype=torch.long)
    mask[0, :3] = 0  # one left-padded row
    return mask


def _image(config, gen):
    """Pixel values of the image size and channel count the (vision) configuration states."""
    import torch

    vision = getattr(config, "vision_config", None) or config
    size = getattr(vision, "image_size", None) or TINY["image_size"]
    if isinstance(size, dict):
        size = [size.get("height", TINY["image_size"]), size.get("width", TINY["image_size"])]
    h, w = (size, size) if isinstance(size, int) else size[-2:]
    return torch.randn(BATCH, getattr(vision, "num_channels", 3), h, w, generator=gen)


def _placeholder_count(model, pixel_values, hidden: int) -> int:
    """How many image features the model makes of one image (its placeholders in ``input_ids``)."""
    import torch

    out = model.get_image_features(pixel_values=pixel_values)
    out = getattr(out, "pooler_output", None) if not isinstance(out, (torch.Tensor, list, tuple)) else out
    tensors = [out] if isinstance(out, torch.Tensor) else list(out or [])
    return sum(t.numel() for t in tensors) // hidden // BATCH


def build_inputs(kind: str, model, config, gen) -> dict:
    """The inputs of one kind of head, built from the configuration alone."""
    import torch

    if kind in ("causal-lm", "seq2seq-lm"):
        inputs = {"input_ids": _token_ids(config, gen), "attention_mask": _padding_mask()}
        if kind == "seq2seq-lm":
            inputs["decoder_input_ids"] = _token_ids(config, gen, SEQ // 2)
        return {**inputs, "use_cache": False}
    if kind == "seq-cls":  # one end-of-sequence token closing every row, as a tokenizer writes it
        ids = _token_ids(config, gen)
        eos = config.get_text_config().eos_token_id
        if isinstance(eos, list):
            eos = eos[0]
        if eos is not None:
            ids[:, -1] = eos
        return {"input_ids": ids, "attention_mask": _padding_mask(), "use_cache": False}
    if kind == "image-text":  # one image per row, its placeholders between a few text tokens
        pixel_values = _image(config, gen)
        image_token = getattr(config, "image_token_id", None)
        if image_token is None:
            image_token = getattr(config, "image_token_index", None)
        if image_token is None:
            raise ValueError("no image token id in the configuration")
        n = _placeholder_count(model, pixel_values, config.get_text_config().hidden_size)
        ids = _token_ids(config, gen, n + 8)
        ids[:, 3:3 + n] = image_token
        return {"input_ids": ids, "pixel_values": pixel_values, "attention_mask": _padding_mask(n + 8),
                "use_cache": False}
    if kind == "image-cls":
        return {"pixel_values": _image(config, gen)}
    if kind in ("audio-cls", "ctc"):
        if model.main_input_name == "input_features":
            frames = 2 * (getattr(config, "max_source_positions", None) or 32)
            return {"input_features": torch.randn(BATCH, config.num_mel_bins, frames, generator=gen)}
        return {"input_values": torch.randn(BATCH, 1600, generator=gen)}
    raise ValueError(f"unknown head kind {kind}")


# ---------------------------------------------------------------------------------------------
# worker: one model, one process


def _as_tensors(out) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _as_tensors(o)]
    return []


def worker(entry: str, out_path: str) -> None:
    import torch
    import torch._dynamo

    torch.set_num_threads(1)
    import transformers

    from dynalint.verify.probe import DynamoLog

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "realcode"))
    from label import Recorder  # the trace hook that labels benchmarks/realcode

    kind, model_type = _split(entry)
    lib = os.path.dirname(os.path.realpath(transformers.__file__))
    cls = getattr(transformers, _heads()[kind][model_type])
    config = _tiny_config(model_type, os.environ.get("REALFIX_IMPLEMENTATIONS", "defaults"))
    torch.manual_seed(SEED)
    model = cls(config).eval()
    gen = torch.Generator().manual_seed(SEED + 1)
    result: dict = {"lib": lib}
    with torch.no_grad():
        inputs = build_inputs(kind, model, config, gen)
        eager = _as_tensors(model(**inputs))
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="eager")
        flags = {k: True for k in os.environ.get("REALFIX_DYNAMO_FLAGS", "").split(",") if k}
        in_lib = lambda p: os.path.realpath(p).startswith(lib + os.sep)  # noqa: E731
        recorder = Recorder({os.path.basename(lib)})
        recorder.install()
        with torch._dynamo.config.patch(**flags), DynamoLog(is_user=in_lib) as log:
            outs = _as_tensors(compiled(**inputs))
    result["traced_lines"] = {f: sorted(v) for f, v in sorted(recorder.traced.items())}
    result["label_breaks"] = recorder.break_records()
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
               verbose: bool, flags: str = "", implementations: str = "defaults") -> dict[str, dict]:
    """Each model in its own forked process of one zygote (importing torch once)."""
    if not model_types:
        return {}
    env = dict(os.environ, REALFIX_DYNAMO_FLAGS=flags, REALFIX_IMPLEMENTATIONS=implementations,
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
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


def same_outputs(a: str, b: str) -> tuple[bool, bool]:
    """(within ``assert_close``'s rule, bitwise equal) for two runs' eager and compiled outputs."""
    import torch

    from dynalint.verify.outputs import compare, flatten

    x, y = torch.load(a), torch.load(b)
    diffs = [compare(flatten(y[k]), flatten(x[k])) for k in ("eager", "compiled")]
    return all(d.equal for d in diffs), all(d.equal and d.bitwise for d in diffs)


def _write_scan_summary(scan: str) -> None:
    """``breaking.json`` of the scan folder: every entry run, with its break lines or its error."""
    summary = {}
    for f in sorted(os.listdir(scan)):
        for suffix in (".before.json", ".before.json.err"):
            if f.endswith(suffix):
                res = _read(scan, f[: -len(suffix)], "before")
                summary[f[: -len(suffix)]] = res.get("error") or [f"{p}:{ln} {gb}" for p, ln, gb, _ in res["breaks"]]
    with open(os.path.join(scan, "breaking.json"), "w") as fh:
        json.dump({k: v for k, v in summary.items() if isinstance(v, list) and v}, fh, indent=1)
    with open(os.path.join(scan, "scan.json"), "w") as fh:
        json.dump(summary, fh, indent=1)


def write_labels(scan: str, types: list[str], path: str) -> None:
    """The scan's runs as eval-zoo ``labels.json`` records (breaks at the innermost library frame,
    every library line Dynamo traced, paths relative to site-packages), and beside it ``files.txt``:
    the library files some run traced or broke in, the ones to ``check``."""
    records, files = [], set()
    for entry in types:
        res = _read(scan, entry, "before")
        kind, model_type = _split(entry)
        rec = {"spec": entry, "library": "transformers", "model": model_type, "setting": kind}
        if "error" in res or "traced_lines" not in res:
            records.append({**rec, "status": "eager_error", "error": res.get("error", "not labelled")})
            continue
        traced, breaks = res["traced_lines"], res["label_breaks"]
        records.append({**rec, "status": "ok", "breaks": breaks, "traced_lines": traced,
                        "traced_line_count": sum(len(v) for v in traced.values()),
                        "break_location_count": len({(b["file"], b["line"]) for b in breaks if b["in_library"]})})
        files.update(traced)
        files.update(b["file"] for b in breaks if b["in_library"] and b["file"])
    with open(path, "w") as fh:
        json.dump(records, fh, indent=1)
    with open(os.path.join(os.path.dirname(os.path.abspath(path)), "files.txt"), "w") as fh:
        fh.write("".join(f"{f}\n" for f in sorted(files)))


def copy_library(dest: str) -> str:
    import transformers

    src = os.path.dirname(os.path.realpath(transformers.__file__))
    root = os.path.join(dest, "site")
    shutil.copytree(src, os.path.join(root, "transformers"), ignore=shutil.ignore_patterns("__pycache__"))
    return root


def fixed_library(dest: str, loaded: list[str], fix_args: list[str], verbose: bool) -> str:
    """A copy of the library with every file in ``loaded`` fixed (``fix_args`` added to the command); its root."""
    root = copy_library(dest)
    files = [os.path.join(root, "transformers", f) for f in loaded]
    fix = run_fix(root, files, fix_args, prefix=("nice", "-n", "10"))
    print(f"fixed {len(loaded)} library files the breaking models load {' '.join(fix_args)}", file=sys.stderr)
    if verbose:
        print(fix.stderr.strip()[-1500:], file=sys.stderr)
    return root


def judge(model: str, res: dict, runs: dict[str, dict], maps: dict) -> dict:  # type: ignore[no-untyped-def]
    """One breaking model: its break lines and, per column, the lines left (as lines of the original files,
    through ``maps``: the column's copy's line map; none for the original code), whether the run raised, the
    lines it gained, and its outputs against the original's."""
    before = {(f, ln) for f, ln, *_ in res["breaks"]}
    row: dict = {"model": model, "before": len(before)}
    for column, run in runs.items():
        raised = "error" in run
        lines = maps.get(column)
        left = before if raised else {lines.original(f, ln) if lines else (f, ln) for f, ln, *_ in run["breaks"]}
        close, bitwise = (None, None) if raised else same_outputs(res["outputs"], run["outputs"])
        row[column] = {"after": len(left), "raised": raised, "error": run.get("error", ""),
                       "break_free": not raised and not left, "gained": sorted(f"{f}:{ln}" for f, ln in left - before),
                       "close": close, "bitwise": bitwise,
                       "categories": sorted(gb for *_, gb, _ in res["breaks"]) if raised
                       else sorted(gb for *_, gb, _ in run["breaks"])}
    return row


def print_columns(rows: list[dict], columns: list[str], verbose: bool) -> None:
    """Per model and in all, per column: break lines left, break-free, raised, gained, outputs."""
    print(f"{'model':34} {'before':>6} | " + " | ".join(f"{c:16}" for c in columns))
    for row in rows:
        cells = []
        for c in columns:
            v = row[c]
            out = "RAISED" if v["raised"] else "bit" if v["bitwise"] else "close" if v["close"] else "DIFFER"
            cells.append(f"{v['after']:4} {out:6}{' +' + str(len(v['gained'])) if v['gained'] else ''}")
        print(f"{row['model']:34} {row['before']:6} | " + " | ".join(f"{x:16}" for x in cells))
        if verbose:
            for c in columns:
                if row[c]["raised"]:
                    print(f"    {c}: {row[c]['error']}")
    n, total = len(rows), sum(r["before"] for r in rows)
    print(f"\n{n} breaking models, {total} break lines")
    for c in columns:
        vs = [r[c] for r in rows]
        left, free = sum(v["after"] for v in vs), sum(v["break_free"] for v in vs)
        ran = sum(not v["raised"] for v in vs)
        print(f"  {c:9} {total} -> {left} ({100.0 * (total - left) / max(total, 1):.0f}% removed), break-free "
              f"{free}/{n} ({100.0 * free / max(n, 1):.0f}%), raised {n - ran}, gained a break "
              f"{sum(bool(v['gained']) for v in vs)}, outputs close {sum(bool(v['close']) for v in vs)}/{ran} "
              f"bitwise {sum(bool(v['bitwise']) for v in vs)}")


def print_inventory(before: dict[str, dict], columns: dict[str, dict[str, dict]]) -> None:
    """Unique break lines (one ``file:line`` across all models) by Dynamo's category, before and in each
    column (a run that raised is left out there), with the lines most models share after the rewrites."""
    def lines(results) -> dict[tuple[str, int], tuple[str, set[str]]]:
        out: dict[tuple[str, int], tuple[str, set[str]]] = {}
        for mt, res in results.items():
            for f, ln, gb, _ in res.get("breaks", []):
                out.setdefault((f, ln), (gb, set()))[1].add(mt)
        return out

    b = lines(before)
    after = {c: lines({mt: r for mt, r in runs.items() if "error" not in r}) for c, runs in columns.items()}
    cats = sorted({gb for gb, _ in b.values()} | {gb for a in after.values() for gb, _ in a.values()},
                  key=lambda c: -sum(gb == c for gb, _ in b.values()))
    print(f"{'unique break lines by category':52} {'before':>6} " + " ".join(f"{c:>8}" for c in columns))
    for cat in cats:
        print(f"{cat[:52]:52} {sum(gb == cat for gb, _ in b.values()):6} "
              + " ".join(f"{sum(gb == cat for gb, _ in a.values()):8}" for a in after.values()))
    print(f"{'total':52} {len(b):6} " + " ".join(f"{len(a):8}" for a in after.values()))
    rewrites = after.get("rewrites", {})
    shared = sorted(((len(ms), f"{f}:{ln}", gb) for (f, ln), (gb, ms) in rewrites.items() if len(ms) > 1),
                    reverse=True)
    for n, where, gb in shared[:8]:
        print(f"  left in {n} models: {where} ({gb})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=2, metavar=("MODEL_TYPE", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--zygote", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"comma-separated head kinds (default: all of {', '.join(KINDS)})")
    ap.add_argument("--models", help="comma-separated entries `kind:model_type` (a bare model type is a causal "
                                     "LM); default: every model of --kinds")
    ap.add_argument("--every", type=int, default=1, metavar="K",
                    help="every K-th entry only (a sample across the heads, the same on every run)")
    ap.add_argument("--limit", type=int, default=0, help="at most N entries")
    ap.add_argument("--json", help="write the breaking models' rows (every column) here")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per model run")
    ap.add_argument("--scan-dir", default=None,
                    help="where the original runs are kept (default: dynalint-realfix-scan[-eager] in the "
                         "temporary folder): an entry with a result there is not run again (delete the folder "
                         "after upgrading the library); breaking.json lists those that break")
    ap.add_argument("--scan-only", action="store_true", help="run the originals (the scan) and stop")
    ap.add_argument("--labels", metavar="OUT",
                    help="write the scan as eval-zoo labels (breaks and traced lines; score_zoo.py scores "
                         "`dynalint check` against them) to OUT, and the files to check to files.txt beside it")
    ap.add_argument("--no-whatif", action="store_true",
                    help="skip the rerun of the original with Dynamo's capture settings")
    ap.add_argument("--implementations", choices=("defaults", "eager"), default="defaults",
                    help="attention and experts implementations: the library's defaults (as users get the "
                         "models), or its own Python loops (`eager`; the what-if then reruns the originals "
                         "with the defaults)")
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

    types = args.models.split(",") if args.models else entries(args.kinds.split(","))
    types = [t if ":" in t else f"causal-lm:{t}" for t in types]
    if args.every > 1:
        types = types[:: args.every]
    if args.limit:
        types = types[: args.limit]
    impl = args.implementations
    scan = args.scan_dir or os.path.join(tempfile.gettempdir(),
                                         "dynalint-realfix-scan" + ("-eager" if impl == "eager" else ""))
    os.makedirs(scan, exist_ok=True)
    t0 = time.time()
    done = {t for t in types if os.path.exists(os.path.join(scan, f"{t}.before.json.err"))
            or "traced_lines" in _read(scan, t, "before")}
    run_models([t for t in types if t not in done], None, args.timeout, scan, "before", args.verbose,
               implementations=impl)
    before: dict[str, dict] = {}
    for mt in types:
        res = _read(scan, mt, "before")
        if args.verbose:
            print(f"  {mt:34} {res.get('error') or len(res['breaks'])}", file=sys.stderr, flush=True)
        if "error" not in res and res["breaks"]:
            before[mt] = res
    _write_scan_summary(scan)
    ran = sum("error" not in _read(scan, t, "before") for t in types)
    print(f"{len(types)} entries, {ran} ran, {len(before)} break ({time.time() - t0:.0f}s)", file=sys.stderr)
    if args.labels:
        write_labels(scan, types, args.labels)
    if args.scan_only:
        return 0

    tmp = tempfile.mkdtemp(prefix="dynalint-realfix-")
    # every library file a breaking model loaded (its modeling file and the shared helpers it uses)
    loaded = sorted({f for res in before.values() for f in res["files"]})
    root = fixed_library(tmp, loaded, args.fix_args.split(), args.verbose)
    lib = next(iter(before.values()))["lib"] if before else ""
    maps = {"rewrites": LineMap(lib, os.path.join(root, "transformers"))}

    flags = ",".join(FLAGS)
    columns = {"rewrites": run_models(sorted(before), root, args.timeout, tmp, "after", args.verbose,
                                      implementations=impl)}
    if not args.no_whatif:
        columns["flags"] = run_models(sorted(before), None, args.timeout, tmp, "flags", args.verbose, flags=flags,
                                      implementations=impl)
        declared = capture_options()
        flags_root = fixed_library(os.path.join(tmp, "flags"), loaded, [*args.fix_args.split(), *declared],
                                   args.verbose)
        maps["both"] = LineMap(lib, os.path.join(flags_root, "transformers"))
        columns["both"] = run_models(sorted(before), flags_root, args.timeout, tmp, "both", args.verbose,
                                     flags=flags, implementations=impl)
    defaults = {} if args.no_whatif or impl == "defaults" else run_models(
        sorted(before), None, args.timeout, tmp, "defaults", args.verbose)
    rows = [judge(mt, res, {c: runs[mt] for c, runs in columns.items()}, maps) for mt, res in sorted(before.items())]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    print_columns(rows, list(columns), args.verbose)
    if defaults:
        ok = {mt: r for mt, r in defaults.items() if "error" not in r}
        nd = sum(_lines(r) for r in ok.values())
        nb_ok = sum(_lines(before[mt]) for mt in ok)
        close = sum(same_outputs(before[mt]["outputs"], r["outputs"])[0] for mt, r in ok.items())
        print(f"with library defaults    {nb_ok} -> {nd} break lines on {len(ok)} models, "
              f"{sum(_lines(r) == 0 for r in ok.values())} break-free, outputs within assert_close "
              f"{close}/{len(ok)} (original code, the library's default attention and experts implementations)")
    print()
    print_inventory(before, columns)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
