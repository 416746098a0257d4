"""The fixers, one module per rewrite.  Importing :func:`load` registers them all."""
from __future__ import annotations

import importlib

FIXER_MODULES = (
    "branch_to_where",
    "branch_to_cond",
    "keep_tensor",
    "masked_loss",
    "masked_elementwise_loss",
    "masked_reduction",
    "last_true_pooling",
    "defer_logging",
    "skip_logging_while_compiling",
    "eager_tail",
    "eager_head",
    "eager_callee",
    "eager_helper",
    "async_assert",
    "size_check",
    "check_in_graph",
    "hoist_decision",
    "python_state_to_buffer",
    "global_to_tensor",
    "env_read_once",
    "full_range_loop",
    "expert_gather",
    "capture_flags",
    "allow_rnn",
)


#: When several fixers rewrite one rule code, the order they are tried in: the first that
#: proves its preconditions wins.  Branch-free rewrites come first (they keep one graph
#: and compute nothing twice that matters), ``torch.cond`` next, then the rewrites that
#: move the decision or the check out of the graph.  The expert loop over the whole range (exact, with a
#: flag) comes before its gather form (no flag, sums in another order).  The splits that run Python code
#: outside the compiled part (a callee Dynamo runs eagerly anyway, a prelude) come after the rewrites that
#: keep the work in the graph.  A branch that only logs is skipped while compiling when no rewrite keeps its
#: message.  A Dynamo flag, which changes how the whole compiled function treats
#: data-dependent values (or recurrent modules), is the last resort.
PREFERENCE: dict[str, tuple[str, ...]] = {
    "DYN101": ("branch-to-where", "branch-to-cond", "async-assert", "size-check", "hoist-decision", "eager-callee",
               "eager-head", "skip-logging-while-compiling"),
    "DYN102": ("check-in-graph", "keep-tensor", "full-range-loop", "expert-gather", "eager-callee", "eager-head",
               "eager-helper", "capture-flags"),
    "DYN104": ("masked-loss", "masked-elementwise-loss", "masked-reduction", "last-true-pooling", "full-range-loop",
               "expert-gather", "size-check", "eager-callee", "capture-flags"),
    "DYN105": ("defer-logging", "skip-logging-while-compiling", "eager-tail", "eager-callee", "eager-head",
               "allow-rnn"),
}


def load() -> None:
    for name in FIXER_MODULES:
        importlib.import_module(f"{__name__}.{name}")
