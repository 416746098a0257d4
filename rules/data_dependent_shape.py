"""DYN104: operations whose output shape depends on tensor data."""
from __future__ import annotations

from typing import Iterator

from dynalint.core import gb_types as GB
from dynalint.analysis.breaks import Cause
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register

@register
class DataDependentShape(Rule):
    code = "DYN104"
    options = ("capture-dynamic-output-shape-ops",)
    name = "data-dependent-shape"
    summary = "`nonzero`, `unique`, `masked_select`, boolean-mask indexing `x[mask]`...: output shape depends on data."
    rationale = """
        A graph is traced with known (or symbolic) sizes. Ops whose output size depends on the values
        in a tensor - `nonzero`, `argwhere`, single-argument `torch.where`, `masked_select`, `unique`,
        `unique_consecutive`, `bincount`, `combinations` (it selects with a mask inside),
        `repeat_interleave` with tensor repeats (`torch.repeat_interleave(counts)` too), and reading through a
        boolean mask `x[mask]` (also `x[mask] += v`, which reads; whatever `x` is: a NumPy array is
        traced as a tensor too), and NumPy's `np.argwhere`, `np.nonzero`, `np.flatnonzero`, `np.unique`,
        single-argument `np.where` of an array, tensor or list - cannot be sized at trace time, so
        Dynamo breaks the graph ("Dynamic shape operator"). The resumed graph then sees a new size on
        most calls and recompiles once before going dynamic. `torch.nonzero(x)` and the other `torch.`
        functions of the list take nothing but a tensor, so they are reported also where the analysis
        could not type `x`.

        A custom op (`torch.library.custom_op`) is one opaque node to Dynamo: its body is never
        traced, but when its fake implementation asks for a fresh size (`ctx.new_dynamic_size()`,
        `create_unbacked_symint()`) its output size depends on the data and a call breaks the same way,
        also when the fake is registered in another module of the package (even one not checked).

        Writing a scalar through a mask (`x[mask] = 0`) is an in-place masked fill and does not break.
        With `torch._dynamo.config.capture_dynamic_output_shape_ops = True` (the
        `capture-dynamic-output-shape-ops` setting) these ops stay in the graph with unbacked sizes,
        and the break moves to where Python needs such a size: a loop over the result, its
        `.tolist()`, or a branch on its length or on a number computed from it (`k = len(u)`,
        `check = k > n`, `if check:`), reported there.
    """
    fix = """
        Keep shapes static: replace `x[mask].sum()` by `(x * mask).sum()` or
        `torch.where(mask, x, 0).sum()`, `x[mask].mean()` by a masked sum over `mask.sum()`,
        `x[mask] += v` by `x = x + v * mask` / `torch.where(mask, x + v, x)`, and select with
        `torch.where(mask, a, b)` instead of compacting. Route tokens with dense one-hot/`gather`
        formulations or a fixed capacity; compute `unique` outside the compiled region.
    """
    gb_types = (GB.DYNAMIC_SHAPE_OPERATOR,)
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def positives(x):
                return x[x > 0].sum()
        """, line=5),
        Example("""
            import torch

            @torch.compile
            def route(x):
                idx = torch.nonzero(x > 0).squeeze(-1)
                return x.index_select(0, idx) * 2
        """, line=5),
        Example("""
            import torch

            @torch.compile
            def bump(x):
                mask = x < 0
                x[mask] += 1
                return x
        """, line=6),
        Example("""
            import torch

            @torch.compile
            def pick(batch, ids):
                keep = torch.any(batch["ids"].unsqueeze(1) == ids, dim=1)
                return batch["feats"][keep]
        """, inputs="[({'ids': torch.arange(6), 'feats': torch.randn(6, 3)}, torch.tensor([1, 4]))]", line=6),
        Example("""
            import torch

            @torch.library.custom_op("dynalint_examples::keep_positive", mutates_args=())
            def keep_positive(x: torch.Tensor) -> torch.Tensor:
                return x[x > 0].clone()

            @keep_positive.register_fake
            def _(x):
                n = torch.library.get_ctx().new_dynamic_size()
                return x.new_empty(n)

            @torch.compile
            def positives(x):
                kept = torch.ops.dynalint_examples.keep_positive(x)
                return kept * 2
        """, target="positives", line=14),
    ]
    VALID = [
        Example("""
            import torch

            @torch.compile
            def positives(x):
                mask = x > 0
                x = x.clone()
                x[mask] = 0.0
                return torch.where(mask, x, 0).sum() + x[torch.tensor([0, 1])].sum()
        """),
        Example("""
            import torch

            @torch.compile
            def route(x):
                return torch.nonzero(x > 0).squeeze(-1)
        """, settings={"capture_dynamic_output_shape_ops": True}),
        Example("""
            import torch

            @torch.library.custom_op("dynalint_examples::double", mutates_args=())
            def double(x: torch.Tensor) -> torch.Tensor:
                return x[x > 0].sum() + x * 2

            @double.register_fake
            def _(x):
                return torch.empty_like(x)

            @torch.compile
            def scaled(x):
                return double(x) + 1
        """, target="scaled"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for brk in ctx.breaks.of(Cause.MASK_INDEX, Cause.DYNAMIC_SHAPE_OP):
            if brk.cause is Cause.MASK_INDEX:
                yield self.reported(
                    brk,
                    f"boolean-mask indexing `{ctx.code(brk.node)}` has a data-dependent size: the graph breaks "
                    "here." + ctx.loop_note(brk),
                    hint="keep the shape static: torch.where(mask, x, 0) or x * mask, then reduce",
                )
                continue
            yield self.reported(
                brk,
                f"`{ctx.code(brk.node)}`: {brk.detail} returns a data-dependent number of elements, so the graph "
                "breaks here." + ctx.loop_note(brk),
                hint="use a static-shape formulation (masks, torch.where, fixed capacity) or move it out of "
                     "the compiled region",
            )
