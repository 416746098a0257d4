"""Regenerates :mod:`dynalint.analysis.data_dependent_ops` from the installed torch.

    python -m dynalint.verify.data_dependent_ops_table > lint/analysis/data_dependent_ops.py

torch tags the aten ops whose result depends on tensor data: ``data_dependent_output`` (a Python
value read from data: ``equal``, ``allclose``, ``item``) and ``dynamic_output_shape`` (an output
size read from data: ``nonzero``, ``unique``...). Dynamo breaks on all of them by default. With
``capture_dynamic_output_shape_ops`` it keeps in the graph only the dynamic-shape ops whose fake
implementation can make an unbacked size; for the others its fake tensor raises "no meta kernel"
and the graph still breaks. With ``capture_scalar_outputs`` it keeps only ``item`` and
``_local_scalar_dense`` (the others return a Python bool it cannot make symbolic).

An op that decomposes before it reaches the fake tensor (``CompositeImplicitAutograd``, such as
``argwhere`` into ``nonzero``) takes the behaviour of what it decomposes into, so it is listed by
what its decomposition reaches, which is measured, not read here: such ops are left out.
"""
from __future__ import annotations

import sys


def _overloads():
    import torch

    for qualified in torch._C._dispatch_get_all_op_names():
        ns, _, rest = qualified.partition("::")
        if ns != "aten":
            continue
        name, _, overload = rest.partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, name), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        yield name, qualified, op


def _generic_fake(op) -> bool:
    """Whether the fake tensor has no implementation of its own for ``op`` (it then raises for a
    data-dependent size whatever the capture settings)."""
    from torch._subclasses import fake_impls

    impl = fake_impls.op_implementations_dict.get(op)
    if impl is None:
        for check, found in fake_impls.op_implementations_checks:
            if check(op):
                impl = found
                break
    return impl is None or impl is fake_impls.dyn_shape


def tables() -> tuple[dict[str, bool], list[str]]:
    """(dynamic-shape op -> whether the capture flag keeps it in the graph, data-dependent-output
    ops), aten names without overloads, decomposed ops left out."""
    import torch

    shapes: dict[str, bool] = {}
    values: set[str] = set()
    for name, qualified, op in _overloads():
        if qualified.endswith(".out") or torch._C._dispatch_has_kernel_for_dispatch_key(
                qualified, "CompositeImplicitAutograd"):
            continue
        if torch.Tag.dynamic_output_shape in op.tags:
            # one overload the fake tensor cannot size is enough for the op to break
            shapes[name] = shapes.get(name, True) and not _generic_fake(op)
        if torch.Tag.data_dependent_output in op.tags:
            values.add(name)
    return dict(sorted(shapes.items())), sorted(values)


def main() -> None:
    import torch

    shapes, values = tables()
    w = sys.stdout.write
    w('"""The aten ops whose result depends on tensor data (generated from torch '
      f'{torch.__version__.split("+")[0]}\n'
      "by ``python -m dynalint.verify.data_dependent_ops_table``; do not edit).\n\n"
      "``DYNAMIC_OUTPUT_SHAPE``: op -> whether ``capture_dynamic_output_shape_ops`` keeps it in the\n"
      "graph (False: the fake tensor has no kernel that makes an unbacked size, and Dynamo breaks\n"
      "whatever the flag). ``DATA_DEPENDENT_OUTPUT``: ops that return a Python value read from data.\n"
      'Ops that decompose into others first are not listed.\n"""\n\n')
    w("DYNAMIC_OUTPUT_SHAPE: dict[str, bool] = {\n")
    for name, captured in shapes.items():
        w(f"    {name!r}: {captured!r},\n")
    w("}\n\n")
    w("DATA_DEPENDENT_OUTPUT: frozenset[str] = frozenset({\n")
    for name in values:
        w(f"    {name!r},\n")
    w("})\n")


if __name__ == "__main__":
    main()
