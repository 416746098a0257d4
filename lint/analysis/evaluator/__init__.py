"""Per-function dataflow: abstract interpretation of one function body.

The evaluator walks statements in order, keeping an environment from local
names to :class:`~dynalint.analysis.values.Value`, and reports events
(:mod:`dynalint.analysis.events`) for every construct rules care about.
Branches are analysed separately and joined; loop bodies are run twice so that
values carried around the loop are seen; calls into functions of the same
file are analysed with the argument values of the call (see
:mod:`dynalint.analysis.program`).

A first, silent pass over a function with untyped parameters collects
*evidence* of what each parameter is (``p.sum()`` says tensor, ``if p:`` or
``p.items()`` say not); the reporting pass then starts from those types.

The evaluator is split by what it handles: :mod:`.core` (the class and its dispatch),
:mod:`.statements`, :mod:`.expressions`, :mod:`.conditions` (truth tests and narrowing),
:mod:`.evidence` (parameter types from uses), :mod:`.annotations` and :mod:`.arith` (operators on values).
"""
from dynalint.analysis.evaluator.annotations import annotation_value, names_numpy_array
from dynalint.analysis.evaluator.core import FunctionEvaluator
from dynalint.analysis.evaluator.evidence import Evidence

__all__ = ["Evidence", "FunctionEvaluator", "annotation_value", "names_numpy_array"]
