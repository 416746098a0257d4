"""A helper that takes a number from tensor data and uses it where Python needs its value (DYN102, under
``capture_scalar_outputs``) -> the helper runs outside the compiled code.

Before::

    import torch

    torch._dynamo.config.capture_scalar_outputs = True

    SIZES = [2, 3, 4]

    def pick(k):
        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    @torch.compile
    def scale(x):
        return x * pick(SIZES)

After::

    import torch

    torch._dynamo.config.capture_scalar_outputs = True

    SIZES = [2, 3, 4]

    @torch.compiler.disable
    def pick(k):
        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    @torch.compile
    def scale(x):
        return x * pick(SIZES)

With ``capture_scalar_outputs`` on, ``.item()`` stays in the graph and its number is a symbol with no
value; indexing a Python list or tuple with it (or seeding ``random.Random`` with it) needs the value, so
Dynamo fails to compile the whole function (``GuardOnDataDependentSymNode``) where with the flag off it
broke the graph at ``.item()`` and went on.  The flag is what removes the other breaks of such code (every
other ``.item()``, every data-dependent size), so the remedy keeps it and runs the one helper that needs a
real number outside the compiled code: ``torch.compiler.disable`` makes Dynamo call it as Python, which
breaks the graph at the call and resumes after it with the number the helper returned, as the code without
the flag did at ``.item()`` (measured on torch 2.13 with torchvision's detection models: the training runs
that failed to compile under the flags compile, and keep only the breaks the flags leave).

Applies to a break the analysis reports as failing to compile under ``capture_scalar_outputs``
(:attr:`~dynalint.analysis.breaks.Cause.CAPTURED_CONSTANT`), when the number and its use are in one
function of this file, defined at module level or in a class body.

Proves, or refuses: the function is not what ``torch.compile`` compiles (disabling it would leave nothing
compiled) nor a module's ``forward`` or ``__call__`` (the whole module would run eagerly); it is neither a
generator nor ``async`` (what Dynamo skips is the call that makes it, not the code it runs); it calls no
module and returns no tensor (alone or in a tuple, list or dict), so what it hands back to compiled code
is the Python value the original broke the graph to make, and no model work leaves the graph.

Unsafe (hazards): the tensor work that makes the number runs eagerly, as in code run without
``torch.compile``; where a compiled loop calls the helper, the graph break at the call makes Dynamo give up
on that loop's frame, as the break at ``.item()`` did without the flag.  The compiled code after the call
is specialised on the number the helper returns, as it was after the break without the flag.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.breaks import Cause, constant_failure, fails_to_compile
from dynalint.analysis.events import CallEvent
from dynalint.analysis.module_index import is_generator_function
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Value
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import use_torch
from dynalint.fixers.support.split import shown

#: methods an ``nn.Module`` runs as its call: disabling one runs the whole module eagerly
_MODULE_CALLS = frozenset({"forward", "__call__"})


@register
class EagerHelper(Fixer):
    name = "eager-helper"
    codes = ("DYN102",)
    safety = "unsafe"
    summary = ("Run a helper that needs the value of a number taken from tensor data outside the compiled "
               "code, so that `capture_scalar_outputs` can stay on.")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                torch._dynamo.config.capture_scalar_outputs = True

                SIZES = [2, 3, 4]

                def pick(k):
                    index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
                    return k[index]

                def scale(x):
                    size = pick(SIZES)
                    return x * size / x.abs().max().item()

                scale = torch.compile(scale, backend="eager")
            """,
            after="""
                import torch

                torch._dynamo.config.capture_scalar_outputs = True

                SIZES = [2, 3, 4]

                @torch.compiler.disable
                def pick(k):
                    index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
                    return k[index]

                def scale(x):
                    size = pick(SIZES)
                    return x * size / x.abs().max().item()

                scale = torch.compile(scale, backend="eager")
            """,
            target="scale",
            compile_target=False,
            expect="compiles",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        brk = finding.brk
        if brk is None or brk.cause is not Cause.CAPTURED_CONSTANT or not fails_to_compile(brk):
            return None
        failure = constant_failure(brk.event)
        if failure is None:
            return None
        plan = FixPlan("", "unsafe")
        name = disable_helper(plan, ctx, brk.node, failure[0])
        plan.description = (f"run `{name}` outside the compiled code (`torch.compiler.disable`): "
                            "`capture_scalar_outputs` makes symbolic a number it uses where Python needs its "
                            "value, and Dynamo fails to compile there")
        return plan


def disable_helper(plan: FixPlan, ctx, use: cst.CSTNode, origin: cst.CSTNode) -> str:
    """Put on ``plan`` the ``torch.compiler.disable`` of the function that makes a number at ``origin`` and
    uses it where Python needs its value at ``use``, and return its name; raises :class:`Refused` with the
    precondition (the module docstring's) it cannot prove.  Shared with ``capture-flags``, which carries
    this rewrite where it turns ``capture_scalar_outputs`` on."""
    function = ctx.enclosing_function(use)
    if function is None or ctx.enclosing_function(origin) is not function:
        raise Refused("the number is made in another function than the one that uses it")
    name = function.name.value
    owner = ctx.parent(ctx.parent(function))
    if not (isinstance(ctx.parent(function), cst.Module)
            or isinstance(owner, cst.ClassDef) and isinstance(ctx.parent(owner), cst.Module)):
        raise Refused(f"`{name}` is nested in a function: a decorator there would not reach the calls "
                      "compiled code makes")
    info = next((fn for fn in ctx.program.index.all_functions if fn.node is function), None)
    if info is None:
        raise Refused(f"`{name}` is not a function of this file's index")
    if id(info) in ctx.program.entry_points.entered:
        raise Refused(f"`{name}` is what torch.compile compiles: disabling it would leave nothing compiled")
    if isinstance(owner, cst.ClassDef) and name in _MODULE_CALLS:
        raise Refused(f"`{name}` is the call of its class: disabling it would run the whole module eagerly")
    if function.asynchronous is not None or is_generator_function(info):
        raise Refused(f"`{name}` is a generator or a coroutine: Dynamo would skip making it, not running it")
    for ev in ctx.program.events:
        if isinstance(ev, CallEvent) and ev.module is not None and ev.function is info:
            raise Refused(f"`{name}` calls a module (`{shown(ctx, ev.node)}`): its work would leave the "
                          "graph")
    for ret in _returns(function):
        value = ctx.value(ret.value) if ret.value is not None else None
        if value is not None and _holds_tensor(value):
            raise Refused(f"`{name}` returns a tensor (in `{shown(ctx, ret.value)}`): the work that makes it "
                          "would leave the graph")
    torch = use_torch(plan, ctx, function)
    decorator = cst.Decorator(decorator=cst.parse_expression(f"{torch}.compiler.disable"))
    plan.replace(function, function.with_changes(decorators=[*function.decorators, decorator]))
    return name


def _returns(function: cst.FunctionDef) -> list[cst.Return]:
    """The ``return`` statements of ``function`` itself, not of a function or class it defines."""
    return [node for node in walk(function.body, into_scopes=False) if isinstance(node, cst.Return)]


def _holds_tensor(value: Value) -> bool:
    """``value`` is a tensor, or a tuple, list or dict the analysis knows to hold one."""
    held = (*(value.items or ()), value.element)
    return value.is_tensor or any(_holds_tensor(v) for v in held if v is not None)
