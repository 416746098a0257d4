"""What one measurement found, as plain data.

A measurement runs in a worker process and comes back as JSON; these records
are what the reports, the verdict and the pytest plugin read.  Nothing here
imports torch.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

#: Call outcomes, in the order the timeline legend shows them.
CALL_STATUSES = ("hit", "compile", "recompile", "eager", "error")


@dataclass
class BreakSite:
    """One graph-break site as Dynamo logged it (deduplicated over the stream)."""

    file: str
    line: int
    function: str
    gb_type: str
    gb_id: str | None
    explanation: str
    frame_skipped: bool
    first_call: int
    code: str = ""
    """The source line, for the report."""
    uncertain: bool = False
    """The logged line is not code of the function Dynamo names (a shifted line table, see
    ``verify.break_lines``): shown as uncertain and not matched against predictions."""
    fundamental: bool = False
    """Dynamo's hints call the break fundamental: no setting lets it trace the code."""


@dataclass
class RecompileEvent:
    call: int
    function: str
    guards: list[str]
    """Failing guard of each cache entry (most recent entry first), without Dynamo's comments."""
    categories: list[str]
    user_code: str = ""

    @property
    def category(self) -> str:
        """The kind of the most recent entry's failure: what changed since the last compile."""
        return self.categories[0] if self.categories else "other"


@dataclass
class OutputDiff:
    """One input set's outputs compared: ``equal`` within the dtype's tolerance (as
    ``torch.testing.assert_close``, NaN and inf in the same places), ``bitwise`` when every
    leaf is also identical bit for bit."""

    equal: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    rtol: float = 0.0
    atol: float = 0.0
    note: str = ""
    bitwise: bool = False


@dataclass
class CallRecord:
    index: int
    status: str
    """One of CALL_STATUSES: served from the cache, first compile, recompile, run eagerly, or raised."""
    wall_s: float
    compile_s: float = 0.0
    guard_s: float | None = None
    graphs: int = 0
    """Graphs compiled during this call."""
    new_breaks: list[int] = field(default_factory=list)
    """Indices into Measurement.breaks of the break sites first seen in this call."""
    recompiles: list[int] = field(default_factory=list)
    """Indices into Measurement.recompiles of this call's recompilations."""
    error: str | None = None
    compiled_vs_eager: OutputDiff | None = None
    vs_original: OutputDiff | None = None
    eager_s: float | None = None


@dataclass
class CostModel:
    """``T_avg = T_guard + T_run + f_fail * T_rebuild``, each term measured on the stream."""

    t_guard_s: float | None
    t_run_s: float | None
    f_fail: float
    t_rebuild_s: float | None
    t_avg_model_s: float | None
    t_avg_measured_s: float | None
    compile_s: float
    run_s: float
    eager_run_s: float | None
    recompile_limit: int
    limit_hit: bool
    eager_fallback_calls: int


@dataclass
class WhatIf:
    """The stream rerun with a remedy: for size-driven recompiles, or Dynamo's own settings for breaks."""

    remedy: str
    """``mark_dynamic``, ``pad8`` or ``capture_flags`` (Dynamo's settings for data-dependent values)."""
    dims: list[str]
    """The dimensions marked or padded; for ``capture_flags``, the settings turned on."""
    recompiles: int | None
    saved: int | None
    error: str | None = None
    breaks: int | None = None
    """Break sites in the rerun (``capture_flags`` only)."""
    breaks_saved: int | None = None
    outputs_equal: bool | None = None
    """Whether every call's outputs equal the eager ones (``capture_flags`` only)."""
    bench: "Bench | None" = None
    """Latency of the rerun, with ``--bench`` (``capture_flags`` only; the original's is the measurement's)."""


@dataclass
class Bench:
    """Latency of the compiled stream (see :mod:`dynalint.verify.bench`)."""

    cold_s: float
    """The first call, compilation included, with an empty compiler cache."""
    steady_s: float
    """Median of ``calls`` warm calls."""
    eager_steady_s: float | None
    """The same calls without torch.compile."""
    calls: int
    threads: int


@dataclass
class Measurement:
    """One variant of one target on one device, over the whole input stream."""

    target: str
    variant: str
    device: str
    mode: str
    backend: str
    status: str = "ok"
    """``ok``, ``error`` (user code raised), ``timeout``, ``crash`` or ``skipped``."""
    message: str = ""
    traceback: str = ""
    compile_failed: bool = False
    """The error is that every compiled call raised where the eager calls did not: Dynamo could not compile
    the target (a flag that makes a number symbolic where Python needs its value): a fix can mend it."""
    phase: str = ""
    """The phase reached (eager, compiled, what-if): where a timeout or crash happened."""
    kind: str = ""
    """function, module class, or factory."""
    source_path: str = ""
    n_calls: int = 0
    graph_count: int | None = None
    """Graphs compiled for the first input set (``explain().graph_count``)."""
    graphs_compiled: int = 0
    breaks: list[BreakSite] = field(default_factory=list)
    recompiles: list[RecompileEvent] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    cost: CostModel | None = None
    what_if: list[WhatIf] = field(default_factory=list)
    executed: list[list[int]] = field(default_factory=list)
    """Lines of the target's file that ran in the eager phase, as [first, last] runs (for predicted vs confirmed)."""
    executed_files: dict[str, list[list[int]]] = field(default_factory=dict)
    """The same for every user file that ran (real path -> runs), e.g. the helpers the target imports."""
    threads: int = 0
    """CPU threads torch used (``torch.set_num_threads``) for every timed phase."""
    bench: Bench | None = None
    log_tail: str = ""
    """The end of the output (the target's, its hooks', torch's) of the last phase that ran, kept
    when the measurement did not succeed: it often says why."""
    output_path: str = ""
    """A file keeping that output, phase by phase ("" when there was none); the next run of the
    same target replaces it."""
    output_lines: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each phase (its process's start included), of the worker's start (``start``:
    the wait for a worker process, the torch import of the first one included) and of the whole
    measurement (``total``): where verification spends its time."""
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    """CPU time (user and system) of each phase's process: where verification's work goes, also on
    a machine busy with other work, where wall time says little."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def hits(self) -> int:
        return sum(c.status == "hit" for c in self.calls)

    @property
    def hit_rate(self) -> float | None:
        return self.hits / len(self.calls) if self.calls else None

    @property
    def outputs_equal(self) -> bool | None:
        """Compiled outputs equal eager ones on every input set (None when nothing was compared)."""
        diffs = [c.compiled_vs_eager for c in self.calls if c.compiled_vs_eager is not None]
        return all(d.equal for d in diffs) if diffs else None

    @property
    def equal_to_original(self) -> bool | None:
        diffs = [c.vs_original for c in self.calls if c.vs_original is not None]
        return all(d.equal for d in diffs) if diffs else None

    def bitwise_count(self, attr: str) -> tuple[int, int]:
        """(input sets whose ``attr`` comparison is bitwise equal, input sets compared)."""
        diffs = [getattr(c, attr) for c in self.calls if getattr(c, attr) is not None]
        return sum(d.bitwise for d in diffs), len(diffs)

    @property
    def max_abs(self) -> float:
        return max((d.max_abs for c in self.calls for d in (c.compiled_vs_eager, c.vs_original) if d), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((d.max_rel for c in self.calls for d in (c.compiled_vs_eager, c.vs_original) if d), default=0.0)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.update(hit_rate=self.hit_rate, outputs_equal=self.outputs_equal,
                    equal_to_original=self.equal_to_original, max_abs=self.max_abs, max_rel=self.max_rel,
                    bitwise_compiled_vs_eager=self.bitwise_count("compiled_vs_eager"),
                    bitwise_vs_original=self.bitwise_count("vs_original"),
                    n_breaks=len(self.breaks), n_recompiles=len(self.recompiles))
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Measurement":
        names = {f.name for f in dataclasses.fields(cls)}
        m = cls(**{k: v for k, v in data.items() if k in names})
        m.breaks = [BreakSite(**b) for b in data.get("breaks", [])]
        m.recompiles = [RecompileEvent(**r) for r in data.get("recompiles", [])]
        m.calls = [_call_from_json(c) for c in data.get("calls", [])]
        m.cost = CostModel(**data["cost"]) if data.get("cost") else None
        m.what_if = [WhatIf(**{**w, "bench": Bench(**w["bench"]) if w.get("bench") else None})
                     for w in data.get("what_if", [])]
        m.bench = Bench(**data["bench"]) if data.get("bench") else None
        return m


def _call_from_json(data: dict[str, Any]) -> CallRecord:
    c = CallRecord(**data)
    c.compiled_vs_eager = OutputDiff(**data["compiled_vs_eager"]) if data.get("compiled_vs_eager") else None
    c.vs_original = OutputDiff(**data["vs_original"]) if data.get("vs_original") else None
    return c
