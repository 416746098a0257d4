"""Evidence of parameter types gathered by a silent pass over a function body.

Untyped parameters get their type from how the body uses them: ``p.sum()`` says tensor, ``if p:`` or
``p.items()`` say not.  :class:`Evidence` holds the verdicts; :class:`EvidenceCollector` is the part of
:class:`~dynalint.analysis.evaluator.core.FunctionEvaluator` that records them while evaluating.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dynalint.analysis.values import Kind, Value


@dataclass
class Evidence:
    """What the uses of each parameter say about its type."""

    positive: set[str] = field(default_factory=set)
    negative: set[str] = field(default_factory=set)

    def tensor_params(self) -> set[str]:
        return self.positive - self.negative


class EvidenceCollector:
    """Records what a use of a value says about the parameters it came from (needs ``self.evidence``)."""

    def tensor_evidence(self, v: Value) -> None:
        if self.evidence is not None and v.params and v.kind is Kind.UNKNOWN:
            self.evidence.positive.update(v.params)

    def not_tensor_evidence(self, v: Value) -> None:
        """Record that a parameter itself is used in a way tensors are not (``if p:``, ``p.items()``)."""
        if self.evidence is not None and v.param is not None:
            self.evidence.negative.add(v.param)
