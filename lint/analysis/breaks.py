"""Graph breaks: where Dynamo ends the graph in analysed code, of which type and why.

The analysis reports what the code does (:mod:`dynalint.analysis.events`); this module decides, for
the target torch and the capture settings, which of those events Dynamo cannot trace, and makes one
:class:`Break` of each (its Dynamo graph-break type, its cause, the event it is at).  Every entry was
measured on torch 2.13 (the rules' examples run through Dynamo).  Rules report breaks, fixers and
the recompile rules ask the break list questions (what breaks first in a statement, what runs after
a break), and none of them repeats the classification.
"""
from __future__ import annotations

import builtins
import dataclasses
import enum
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Container, Iterable, Iterator, Protocol

import libcst as cst

from dynalint.core import gb_types as GB
from dynalint.analysis import knowledge as K
from dynalint.analysis.calls import DATA_PTR, SUPER_PROPERTY, TENSOR_TEXT, numpy_draw_is_number, \
    python_number as _python_number, traced_random as _traced_random
from dynalint.analysis.capture_settings import (  # noqa: F401 (the flags' names, for the rules and fixers)
    ALLOW_RNN,
    CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS,
    CAPTURE_FLAGS,
    CAPTURE_SCALAR_OUTPUTS,
    NO_CAPTURE,
    OwnCapture,
)
from dynalint.analysis.custom_ops import KnownDynamicOps, OpSource
from dynalint.analysis.data_dependent_ops import DYNAMIC_OUTPUT_SHAPE
from dynalint.analysis.eager_part import (AtEvent, EagerPart, body_order, breaks_inside_method, eager_part,
                                         function_blocks, in_own_loop, skips_frame, split_untraced)
from dynalint.analysis.graph_ends import tensor_for_number
from dynalint.analysis.events import (
    ArithmeticEvent,
    AttributeEvent,
    ObjectAttributeReadEvent,
    TensorAttributeReadEvent,
    ModuleAttributeReadEvent,
    CallEvent,
    ClassStatementEvent,
    ComparisonEvent,
    ComprehensionAssignmentEvent,
    DecoratorEvent,
    ContainmentEvent,
    EagerComprehensionEvent,
    ResumeInputsEvent,
    TensorAttributeStoreEvent,
    ConditionEvent,
    ContextManagerEvent,
    Event,
    ForLoopEvent,
    StringFormatEvent,
    FormattedStringEvent,
    SubscriptEvent,
    WhileLoopEvent,
)
from dynalint.analysis.logging_calls import LOGGING_FUNCTIONS, is_logger, reorderable_arguments
from dynalint.analysis.module_index import is_generator_function, torch_optimizer_base
from dynalint.analysis.nn_functionals import CAUSAL_MASK_CHECKS, MODULE_FUNCTIONALS
from dynalint.analysis.numpy_calls import (BREAKING_NDARRAY_ATTRIBUTES, BREAKING_NDARRAY_METHODS,
                                            BREAKING_NUMPY_CALLS, COMPARED_NUMPY_TYPES, DATA_READING_NUMPY_CALLS,
                                            DYNAMIC_SHAPE_NUMPY_CALLS, TRACED_NUMPY_RANDOM)
from dynalint.analysis.skipped_calls import BREAKING_CALLS, BREAKING_TENSOR_METHODS, PARAMETER_MODULES, \
    SKIPPED_PACKAGES
from dynalint.analysis.syntax import (assigned_names, children, dotted_name, encloses, evaluated_before,
                                      may_bind, own_nodes, parent_map, root_name, simple_statements, walk)
from dynalint.analysis.tensor_members import INPLACE_VIEW_METHODS
from dynalint.analysis.values import Kind, Value, tensor
from dynalint.core.gb_types import GraphBreakType
from dynalint.config.settings import Settings, Version

if TYPE_CHECKING:  # pragma: no cover
    from typing import Callable

    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex


class Analysed(Protocol):
    """What the break classification reads of an analysed module (a ``Program``)."""

    index: "ModuleIndex"
    capture: OwnCapture
    """The capture flags the module's own code turns on."""
    events: list[Event]
    project: OpSource | None
    """The checked files as one program (asked for the custom ops other modules register)."""


class Cause(enum.Enum):
    """What makes Dynamo break; each rule reports some causes."""

    CONDITION = "condition"
    """A Python bool of tensor data: ``if``, ternary, ``and``/``or``/``not``, ``assert``, a filter."""
    BOOL_OF_EACH = "bool-of-each"
    """``any(...)``/``all(...)`` over tensors: a Python bool of each."""
    LOOP_CONDITION = "loop-condition"
    """A ``while`` test, or a loop exit, decided by tensor data."""
    TENSOR_RANGE = "tensor-range"
    """``range(t)``: Python counts iterations with a tensor."""
    NUMBER_ARGUMENT = "number-argument"
    """A tensor computed in the graph where a torch op takes a Python number or size."""
    SCALAR_EXTRACTION = "scalar-extraction"
    """``.item()``, ``int(t)``, ``math.*(t)``...: tensor data moved into a Python value."""
    TENSOR_MEMBERSHIP = "tensor-membership"
    """``item in t`` of a tensor ``t``: ``Tensor.__contains__`` reads ``(item == t).any()`` with ``.item()``, inside
    torch's code, where Dynamo cannot resume: the rest of the function runs eagerly (measured on torch 2.13;
    with ``capture_scalar_outputs`` it is traced, and a branch on it breaks)."""
    NUMPY_TYPE_COMPARISON = "numpy-type-comparison"
    """``out_type == np.uint8``: Dynamo holds a NumPy scalar type as an object it cannot compare with ``==``."""
    CAUSAL_MASK_CHECK = "causal-mask-check"
    """A transformer module given a mask and no causal flag (``nn.TransformerEncoder(...)(x, mask=m)``): its
    ``forward`` compares the mask with a causal one and reads the answer with ``bool(...)``."""
    DATA_INDEX = "data-index"
    """A tensor read at a 0-d index computed from data (``boxes[scores.argmax()]``)."""
    PYTHON_INDEX = "python-index"
    """A tensor as a slice bound or as the index of a tuple/list/shape."""
    CAPTURED_CONSTANT = "captured-constant"
    """A number ``capture_scalar_outputs`` keeps symbolic, used where Python needs its value (a list
    index, ``range(n)``, ``random.Random(n)``: :func:`constant_failure`): Dynamo fails to compile there, or
    breaks the graph."""
    MASK_INDEX = "mask-index"
    """Reading through a boolean mask (``x[mask]``): a data-dependent size."""
    DYNAMIC_SHAPE_OP = "dynamic-shape-op"
    """``nonzero``, ``unique``, a custom op asking for a fresh size...: a data-dependent size."""
    UNTRACEABLE_CALL = "untraceable-call"
    """A call Dynamo skips or cannot put in a graph (``print``, ``warnings.warn``, ``loss.backward()``...)."""
    PERCENT_FORMAT = "percent-format"
    """``"%s" % tensor``."""
    DATA_POINTER = "data-pointer"
    """Comparing ``t.data_ptr()`` values."""
    LOCK = "lock"
    """``with`` on a lock, on a ``torch.device``, or on a context manager of the checked code made
    outside the compiled code: Dynamo cannot enter it and runs the whole function eagerly."""
    ENVIRONMENT_WRITE = "environment-write"
    """``os.environ[k] = v``: the store calls ``os.putenv``, which Dynamo skips."""
    CLASS_STATEMENT = "class-statement"
    """A ``class`` statement in traced code: Dynamo cannot call ``__build_class__``."""
    TENSOR_TEXT = "tensor-text"
    """Using an f-string that formats a tensor (its length, a method, ``+``, ``==``, ``in``): Dynamo holds
    it unformatted and cannot."""
    TENSOR_ATTRIBUTE = "tensor-attribute"
    """``t.requires_grad = ...`` on a tensor: Dynamo does not set it while tracing; ``t.data = ...`` on one
    the compiled code made."""
    SYMBOLIC_INT = "symbolic-int"
    """A call Dynamo traces on an int but not on a symbolic one, given a size or int the calls change: met on
    the recompile that traces it as symbolic (:attr:`Breaks.recompiled`), not on the first compile."""
    EAGER_COMPREHENSION = "eager-comprehension"
    """A list/set/dict comprehension Dynamo compiles as a frame of its own, which cannot step the
    iterator it receives (:class:`~dynalint.analysis.events.EagerComprehensionEvent`)."""
    CACHED_NESTED_FUNCTION = "cached-nested-function"
    """``@functools.cache``/``lru_cache`` on a function defined in traced code: Dynamo cannot build the cache
    wrapper ("Unsupported method call" at the decorator)."""
    CACHED_PROPERTY = "cached-property"
    """A ``functools.cached_property`` of a class of the checked code read in traced code: on Python before
    3.12 its ``__get__`` enters an ``RLock`` Dynamo cannot enter ("Unsupported context manager")."""
    COMPREHENSION_ASSIGNMENT = "comprehension-assignment"
    """An assignment expression inside a list, set or dict comprehension: on Python before 3.12 the
    comprehension is a function of its own, which sets the name as a cell of the enclosing function; Dynamo
    reads that cell before it is set ("Read uninitialized cell")."""
    TRACED_RANDOM = "traced-random"
    """Arithmetic on a number ``random.randint``/``randrange``/``uniform`` drew in traced code: Dynamo
    holds it as a tensor and has no rule for a Python operator on it and a number."""
    ATTRIBUTE_READ = "attribute-read"
    """An attribute of a tensor Dynamo cannot read: ``a.dtype`` on a NumPy array, which it holds as a tensor
    (:data:`~dynalint.analysis.numpy_calls.BREAKING_NDARRAY_ATTRIBUTES`), ``t.__dict__`` on an instance of a
    ``torch.Tensor`` subclass."""
    SPARSE_RESUME = "sparse-resume"
    """The first use of a sparse tensor made at a call Dynamo skips (``torch.sparse_coo_tensor``), in the
    frame Dynamo resumes in after that call: it cannot take the tensor as an input there, and runs the rest
    of the function eagerly (``knowledge.SPARSE_TENSOR``)."""
    ASSERTED_OBJECT = "asserted-object"
    """``assert`` on a module, an object, or a list or tuple of them or of tensors: Dynamo turns the assert into
    ``torch._assert(value)`` and cannot put such a value in the graph (:func:`asserted_object`)."""
    UNINITIALIZED_MODULE = "uninitialized-module"
    """The first use of ``self`` in an ``__init__`` of an ``nn.Module`` built in compiled code whose
    ``__init__`` breaks, or built where the function runs eagerly: Dynamo then compiles the ``__init__`` as a
    frame of its own, which receives the module before ``nn.Module.__init__`` ran, and cannot take it
    ("Uninitialized nn.Module"); so does each base's ``__init__`` that its ``super().__init__(...)`` runs
    (:func:`_uninitialized_modules`)."""
    SUPER_PROPERTY = "super-property"
    """A property read through ``super()`` whose method is called or that is passed to torch: Dynamo holds the
    attribute unresolved instead of running the getter."""
    GENERATOR_ARGUMENT = "generator-argument"
    """A generator expression handed to ``math.prod``/``math.fsum``, or to ``max``/``min`` with ``default=``:
    Dynamo cannot pass it on, and cannot rebuild the generator it started to resume after the call, so the
    rest of the function runs eagerly (measured on torch 2.13)."""
    HELD_TENSOR_METHOD = "held-tensor-method"
    """A tensor method call (``x.masked_fill(make_mask(n), 0.0)``) one of whose arguments breaks the graph
    while it is computed: Dynamo resumes with the method already looked up on its stack, a builtin it then
    calls as a function marked as skipped, so the call breaks too (measured on torch 2.13; a ``torch.*``
    function, an ``F.*`` function, a module call, an operator or the argument on a line of its own do not)."""
    FRESH_OBJECT_METHOD = "fresh-object-method"
    """A method of an object the function made itself (``s = Solver(y); s.integrate(t)``) whose body
    breaks: Dynamo breaks at the call, cannot rebuild the bound method of an object without a source to
    resume after it ("Reconstruction failure") and runs the rest of the function eagerly. The same for a
    method of the class of a ``torch.Tensor`` subclass instance, passed in or not."""


@dataclass(frozen=True, eq=False)
class Break(AtEvent):
    """One place where Dynamo ends the graph."""

    event: Event
    """The analysis event it is at (its node is what a diagnostic points at)."""
    cause: Cause
    gb: GraphBreakType
    """Dynamo's graph-break type there."""
    detail: str = ""
    """What the cause names: the argument that is a tensor, the op, or why the call is not traced."""
    read_in_python: bool = False
    """A data-dependent size whose length the code reads in Python later in the same graph
    (:func:`counted_rows`), or a number a later condition of the same graph tests: the capture flag
    moves the break there."""
    needs_constant: bool = False
    """A number the code then uses where Python needs its value, later in the same graph (an index into a
    Python list or tuple, ``range(n)``, ``random.Random(n)``: :func:`needs_constant`): with
    ``capture_scalar_outputs`` Dynamo fails to compile or breaks the graph there."""


#: the causes of a break at a call whose Python result is made outside the graph
VALUE_CAUSES = frozenset({Cause.SCALAR_EXTRACTION, Cause.UNTRACEABLE_CALL})


def capture_flag(brk: Break) -> str | None:
    """The ``torch._dynamo.config`` flag under which Dynamo keeps this break's operation in the
    graph, or None when no flag does.

    It is the flag the classifier itself reads for the cause, so a finding with a flag is one that
    ``check`` stops reporting with that option on, and one whose break the flag only moves names none
    (:attr:`Break.read_in_python`): a Python branch on a captured value breaks at the branch (measured on
    torch 2.13: ``n = t.item(); if n > 0:`` breaks at the ``if``).
    Not claimed for a tensor where an op takes a number: with the flag, ``F.pad(x, (0, t - n))`` of
    an entered 0-d ``t`` raises ``PendingUnbackedSymbolNotFound`` inside Dynamo instead of breaking.
    Nor for ``.tolist()``: the flag keeps an integer tensor's in the graph, a floating one's still
    breaks ("Tensor.tolist() with non-integer tensor", measured on torch 2.13), and the analysis does
    not know the dtype.  Nor for a data-dependent size whose length the code then reads in Python
    (:func:`counted_rows`): the flag moves that break to the loop, or makes ``.tolist()`` raise.  Nor for
    a number the code then uses where Python needs its value (:attr:`Break.needs_constant`)."""
    if brk.cause in (Cause.MASK_INDEX, Cause.DYNAMIC_SHAPE_OP):
        if brk.gb is not GB.DYNAMIC_SHAPE_OPERATOR or brk.read_in_python \
                or (isinstance(brk.event, CallEvent) and uncaptured_shape_call(brk.event)):
            return None
        return CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS
    if brk.cause is Cause.PYTHON_INDEX and isinstance(brk.event, SubscriptEvent) \
            and not _index_captured(brk.event):
        return None
    if brk.cause in (Cause.PYTHON_INDEX, Cause.CAUSAL_MASK_CHECK):
        return CAPTURE_SCALAR_OUTPUTS
    if brk.cause is Cause.SCALAR_EXTRACTION and isinstance(brk.event, CallEvent) and not brk.read_in_python \
            and not brk.needs_constant and brk.event.method != "tolist" and scalar_extraction(brk.event, True) is None:
        return CAPTURE_SCALAR_OUTPUTS
    return None


class Breaks:
    """The breaks of one analysed module, in evaluation order, and what follows from their order."""

    def __init__(self, program: Analysed, breaks: list[Break], untraced: list[Break] | None = None,
                 unreached: list[Break] | None = None) -> None:
        self.program = program
        self.all = breaks
        self.unreached = unreached or []
        """What would break after a break Dynamo cannot resume from in the middle of a statement (a fresh
        object's method, an RNN, ``in`` on a tensor: :func:`_eager_after_fresh_calls`): not reported, but
        a remedy that removes that first break would meet them."""
        self.untraced = untraced or []
        """What would break in the parts of functions Dynamo runs eagerly
        (:mod:`dynalint.analysis.eager_part`), which it never traces: not reported, but what the code there
        makes (a size taken from tensor data handed to a frame of its own) still matters."""
        self.recompiled: list[Break] = []
        """The breaks Dynamo meets only on the recompile that traces a size or int as symbolic
        (:attr:`Cause.SYMBOLIC_INT`): reported, but no part of the first compile's frames, resumes and eager
        parts, which every other question here is about."""
        self._by_node: dict[int, list[Break]] = {}
        self._by_statement: dict[int, list[Break]] = {}
        self._loops: dict[int, WhileLoopEvent] | None = None
        self._python_ops: set[int] | None = None
        self._frame_events: dict[int, list[Event]] | None = None
        """The events :meth:`resumed_frame_compiles` reads, by ``id`` of their function, in order."""
        self._resume_inputs: dict[int, frozenset[str]] | None = None
        """By ``id`` of a statement that may break: the names that hold nothing tensor-related after it."""
        self._loop_breaks: dict[int, int | None] = {}
        """By ``id`` of a function: the earliest position of a statement holding a break inside one of
        its loops (:meth:`loop_break_before`)."""
        for b in breaks:
            self._by_node.setdefault(id(b.node), []).append(b)
            self._by_statement.setdefault(id(b.statement), []).append(b)

    def __iter__(self) -> Iterator[Break]:
        return iter(self.all)

    def __len__(self) -> int:
        return len(self.all)

    def of(self, *causes: Cause) -> list[Break]:
        found = [b for b in self.all if b.cause in causes]
        return found + self.recompiled if Cause.SYMBOLIC_INT in causes and self.recompiled else found

    def at(self, node: cst.CSTNode) -> list[Break]:
        """The breaks at the event about ``node``."""
        return self._by_node.get(id(node), [])

    def in_statement(self, statement: cst.CSTNode) -> list[Break]:
        """The breaks of one statement in the order Dynamo meets them (evaluation order: the calls in
        an argument list before the call itself), so the first is the one the graph ends at."""
        return self._by_statement.get(id(statement), [])

    def in_comprehension(self, brk: Break, around: cst.CSTNode | None = None) -> bool:
        """``brk`` is inside a comprehension of its statement: a frame of its own under Dynamo, with the
        iterator as its input, whose resumption the analysis does not model.  With ``around``: ``brk`` and
        ``around`` both run in one comprehension's own frame (not in its first iterable, which the enclosing
        frame evaluates; measured on torch 2.13: a number taken from data there and used in the same
        comprehension, ``[x * t.item() for t in ts]``, recompiles nothing: Dynamo runs its loop eagerly)."""
        if around is None:
            return any(isinstance(n, _COMPREHENSIONS) and encloses(n, brk.node)
                       for n in walk(brk.statement, into_scopes=False))
        return any(isinstance(n, _COMPREHENSIONS) and _in_own_frame(n, brk.node) and _in_own_frame(n, around)
                   for n in walk(brk.statement, into_scopes=False))

    def follows_a_break(self, brk: Break) -> bool:
        """An earlier break of the same function: ``brk`` is then in a resumed frame, whose inputs
        include what was alive at that break."""
        for b in self.all:
            if b is brk:
                return False
            if b.event.function is brk.event.function and b.statement is not brk.statement:
                return True
        return False

    def loop_break_before(self, ev: Event) -> bool:
        """A break inside a loop of ``ev``'s own function, in a statement before ``ev``'s: Dynamo gives
        up on the frame at that loop and runs the rest of it eagerly, so nothing at ``ev`` breaks and the
        functions it calls are frames of their own (a loop after a break at ``ev`` is in the frame
        resumed after it)."""
        fn = ev.function
        order = self.positions(fn)
        if id(fn) not in self._loop_breaks:  # once per function: the rules ask about many of its events
            loops = [b for b in function_blocks(fn) if type(b) in (cst.For, cst.While)]
            self._loop_breaks[id(fn)] = min(
                (order.get(id(b.statement), -1) for b in self.all if b.in_loop and b.event.function is fn
                 and any(encloses(loop, b.node) for loop in loops)), default=None)
        first = self._loop_breaks[id(fn)]
        return first is not None and first < order.get(id(ev.statement), -1)

    def positions(self, fn: "FunctionInfo") -> dict[int, int]:
        """Node id -> its position in a walk of ``fn``'s body (nested scopes not entered), made once per
        definition (:meth:`FunctionInfo.derived`)."""
        return body_order(fn)

    def inside(self, node: cst.CSTNode) -> list[Break]:
        """The breaks at events within ``node`` (a loop body, say), in order."""
        return [b for b in self.all if b.node is not node and encloses(node, b.node)]

    def body_breaks(self, loop: cst.While) -> bool:
        """The body of ``loop`` breaks the graph, at an event of its own or in a function it calls:
        Dynamo then runs the loop eagerly (measured on torch 2.13)."""
        if self._loops is None:
            self._loops = {id(ev.node): ev for ev in self.program.events if isinstance(ev, WhileLoopEvent)}
        ev = self._loops.get(id(loop))
        return (ev is not None and ev.body_calls_break) or bool(self.inside(loop.body))

    def header_break(self, loop: cst.While) -> Break | None:
        """The break at the test of ``loop`` where Dynamo resumes at the loop header on every iteration:
        none when the test does not break, or when the loop runs eagerly (it sits in another loop, a
        call in its test or its body breaks)."""
        at_test = self.in_statement(loop)
        header = next((b for b in at_test if b.cause is Cause.LOOP_CONDITION and not b.in_loop), None)
        if header is None or any(b.in_loop for b in at_test) or self.body_breaks(loop) \
                or unresumable_loop_test(header):
            return None
        return header

    def first_in_statement(self, statement: cst.CSTNode) -> Break | None:
        found = self.in_statement(statement)
        return found[0] if found else None

    def next_in_statement(self, brk: Break, causes: frozenset[Cause] = VALUE_CAUSES) -> Break | None:
        """The next break of ``causes`` in ``brk``'s statement while the value made at ``brk`` is still
        pending (``{"loss": loss.item(), "acc": acc.item()}``: the second ``.item()``): the frame resumed
        there receives that value as an input.  A call that takes the value as an argument (an enclosing
        call) consumes it and does not count."""
        found = [b for b in self.in_statement(brk.statement) if b.cause in causes and not b.in_loop]
        position = next((i for i, b in enumerate(found) if b.node is brk.node), None)
        if position is None:
            return None
        earlier = {id(b.node) for b in found[:position + 1]}
        for b in found[position + 1:]:
            if id(b.node) in earlier:
                return None  # the statement analysed again (a helper called twice): another frame
            if not encloses(b.node, brk.node):
                return b
        return None

    def resumed_frame_compiles(self, brk: Break, stop_at_break: bool = False) -> bool:
        """Whether Dynamo compiles the frame that resumes after ``brk`` (and so guards on the Python
        values it receives).  It does not when nothing after the break is compiled - no tensor operation,
        traced call or further break: Dynamo skips a frame without a graph (measured on torch 2.13) - nor
        when a graph break inside a loop after it makes Dynamo run the whole resumed frame eagerly.
        ``stop_at_break``: the frame that ends at the next break is the one asked about (a value it
        guards there, such as the size of a tensor read right after the break), so a loop after that
        break is the next frame's (measured).  Unsure code counts as compiled."""
        event = brk.event
        if brk.cause is Cause.FRESH_OBJECT_METHOD:
            return False  # Dynamo cannot resume after it: the rest of the function runs eagerly
        after = _code_after(event.function.node, event.statement)
        if not after:
            return True
        # (what the statement evaluates before the break ran in the graph before it: `abs(loss)` in
        # `return abs(loss), round(loss.item(), 3)`; measured on torch 2.13, the resumed frame has no graph)
        before = evaluated_before(event.statement, event.node)
        skip = {id(n) for part in (event.node, *before) for n in walk(part)}
        nodes = [n for stmt in after for n in walk(stmt, into_scopes=False) if id(n) not in skip]
        region = {id(n) for n in nodes}
        python_only = self._python_operations()
        works = any(isinstance(n, _OPERATORS) and id(n) not in python_only for n in nodes)
        if self._holds_nothing_tensor(event, nodes, before):
            return False
        for ev in self._events_of(event.function):
            if id(ev.node) not in region and not (isinstance(ev, ClassStatementEvent) and id(ev.statement) in region):
                continue  # (a `class` statement's name is inside the scope it opens, which the walk skips)
            breaks = self._breaks_at(ev)
            if in_own_loop(ev) and (breaks or self.at(ev.node)):
                return False  # any break in a later loop: Dynamo runs the resumed frame eagerly
            if breaks and stop_at_break:
                return True  # the frame ends at this break, compiled: a loop after it is the next frame's
            works = works or breaks or (self.body_works(ev.callee) if _helper_call(ev) else _works(ev))
        return works

    def _holds_nothing_tensor(self, event: Event, nodes: list[cst.CSTNode], before: list[cst.CSTNode]) -> bool:
        """Whether the frame resumed after the break at ``event`` provably holds nothing tensor-related, which
        Dynamo skips ("no tensor-related objects found in frame", measured on torch 2.13 for
        ``return x.reshape(int(t.sum()), -1)``): the code after the break (``nodes``) reads no name but a
        builtin's (a local may hold a tensor, a global may be torch), and what the statement evaluated before
        the break and keeps for after it is a literal or a tensor's method (``x.reshape``), not the tensor; and
        the function names no torch or NumPy module anywhere (the resumed frame's code keeps the function's
        global names, and one bound to torch counts as tensor-related: ``torch.arange(t.max().item()) * 2``
        is compiled and recompiles, measured)."""
        fn = event.function
        index = self.program.index
        names = fn.names_read()
        if fn.outer is not None or any((index.imports.get(name) or "").split(".")[0] in ("torch", "numpy")
                                       for name in names):
            return False  # (a nested function's frame also holds what it closes over)
        bound = fn.local_names | set(fn.param_names()) | index.imports.keys() | index.globals.keys() \
            | index.functions.keys() | index.classes.keys()
        not_read = {id(n.attr) for n in nodes if type(n) is cst.Attribute} \
            | {id(n.keyword) for n in nodes if type(n) is cst.Arg and n.keyword is not None}
        if _tensor_on_stack(event):
            return False
        plain = _plain_locals(event) | self._plain_at(event)
        if any(type(n) is cst.Name and id(n) not in not_read and n.value in bound and n.value not in plain
               for n in nodes):
            return False
        calls = {id(ev.node.func): ev for ev in self._events_of(fn)
                 if isinstance(ev, CallEvent) and isinstance(ev.node, cst.Call)}
        for part in before:
            if isinstance(part, cst.Arg):
                part = part.value
            if isinstance(part, (cst.Integer, cst.Float, cst.SimpleString)):
                continue
            if type(part) is cst.Name and (part.value in plain or part.value not in bound):
                continue  # (`enumerate` of `enumerate(t.tolist())`: a builtin, or a name holding no tensor)
            call = calls.get(id(part))
            if call is None or call.method is None or call.qualname is not None or call.callee is not None \
                    or call.receiver is None or not call.receiver.is_tensor:
                return False
        return True

    def _plain_at(self, event: Event) -> frozenset[str]:
        """The names that hold nothing tensor-related after the statement of ``event`` (a statement outside
        any loop), in every calling context the analysis ran it in (:class:`ResumeInputsEvent`)."""
        if self._resume_inputs is None:
            self._resume_inputs = {}
            for ev in self.program.events:
                if isinstance(ev, ResumeInputsEvent):
                    seen = self._resume_inputs.get(id(ev.node))
                    self._resume_inputs[id(ev.node)] = ev.plain if seen is None else seen & ev.plain
        return self._resume_inputs.get(id(event.statement), frozenset())

    def _events_of(self, fn: "FunctionInfo") -> "list[Event]":
        """The events of ``fn`` that may make a frame's graph (:data:`_FRAME_EVENTS`), grouped once."""
        if self._frame_events is None:
            self._frame_events = {}
            for ev in self.program.events:
                if isinstance(ev, _FRAME_EVENTS):
                    self._frame_events.setdefault(id(ev.function), []).append(ev)
        return self._frame_events.get(id(fn), [])

    def body_works(self, fn: "FunctionInfo", depth: int = 3) -> bool:
        """Whether a function of the project called after a break does something Dynamo compiles in
        its own body: a tensor operation, a traced call, a break.  A helper that only tests or returns
        the Python values it is given adds no graph, and the resumed frame stays without one (measured
        on torch 2.13: ``assert p["v"] >= 0``, ``return h, p[1]`` or ``r = v; return h, r`` in the
        helper).  A function the analysis recorded nothing for counts as compiled when its body calls,
        indexes, branches or loops; so does one more than ``depth`` calls deep."""
        events = self._events_of(fn)
        python_only = self._python_operations()
        body = list(walk(fn.node.body, into_scopes=False))
        if any(isinstance(n, _OPERATORS) and id(n) not in python_only for n in body):
            return True
        if not events:  # nothing recorded: compiled unless the body cannot make a graph operation
            return depth == 0 or any(isinstance(n, _MAY_WORK) for n in body)
        if depth == 0:
            return True
        return any(self._breaks_at(ev) or self.at(ev.node)
                   or (self.body_works(ev.callee, depth - 1) if _helper_call(ev)
                       else _works(ev) and not _container_change(ev))
                   for ev in events)

    def _python_operations(self) -> set[int]:
        """``id`` of the operators whose every evaluation combined or compared Python values only
        (numbers, sizes, numbers taken from tensors): no graph operation, so not what makes Dynamo
        compile a resumed frame (measured on torch 2.13: ``return x, n + 1`` after ``n = t.item()``
        leaves a frame without a graph, which Dynamo skips)."""
        if self._python_ops is None:
            python, tensor = set(), set()
            calls = {id(ev.node): ev for ev in self.program.events if isinstance(ev, CallEvent)}
            skipped = {id(b.node) for b in self.all if b.cause is Cause.UNTRACEABLE_CALL}
            for ev in self.program.events:
                if isinstance(ev, (ArithmeticEvent, ComparisonEvent)):
                    plain = all(_plain_python(v, calls, skipped) for v in ev.operands)
                    (python if plain else tensor).add(id(ev.node))
            self._python_ops = python - tensor
        return self._python_ops

    def in_skipped_frame(self, ev: Event) -> bool:
        """``ev`` runs only in frames resumed after graph breaks of its function that Dynamo does not
        compile (see :meth:`resumed_frame_compiles`): nothing there is guarded."""
        function = ev.function
        # (a break in an argument of a call ``ev`` comes before it: `record(stamp=time.time())` runs `record`
        # in the frame resumed there)
        call = ev.call if isinstance(ev, CallEvent) and isinstance(ev.call, cst.Call) else None
        args = [a.value for a in call.args] if call is not None else []

        def after(b: Break, node: cst.CSTNode) -> bool:
            return any(n is node for stmt in _code_after(function.node, b.statement)
                       for n in walk(stmt, into_scopes=False))

        before = [b for b in self.all if b.event.function is function and (
            b.statement is not ev.statement and after(b, ev.node)
            or b.statement is ev.statement and (any(encloses(a, b.node) for a in args)
                                                or _stored_after(ev.statement, ev.node, b.node)))]
        # a break every way to ``ev`` passes after an earlier one ends the frame resumed there before ``ev``
        # (`print(total.item())`, then `self.calls += 1`: only the frame resumed after the print holds it)
        last = [b for b in before if not any(
            o is not b and not o.in_loop and _always_before(function.node, o.statement, ev.node)
            and (o.statement is b.statement and encloses(o.node, b.node)  # (the call a value breaks in)
                 or o.statement is not b.statement and after(b, o.node))
            for o in before)]
        return bool(last) and not any(
            b.in_loop or self.in_comprehension(b) or self.resumed_frame_compiles(b) for b in last)

    def _breaks_at(self, ev: Event) -> bool:
        """A break at ``ev`` for the resumed-frame question: a Python bool of a tensor (a traced
        ``assert`` included), or a call whose result is made outside the graph."""
        if isinstance(ev, ConditionEvent):
            return ev.value is not None and ev.value.is_tensor
        return isinstance(ev, CallEvent) and any(b.event is ev and b.cause in VALUE_CAUSES for b in self.at(ev.node))


#: what a lock's constructor returns: Dynamo cannot enter one
_LOCKS = frozenset({"threading.Lock()", "threading.RLock()", "multiprocessing.Lock()"})
#: objects torch makes that work as context managers in eager code but that Dynamo has no rule to
#: enter (measured on torch 2.13: "does not know how to enter a `device` context manager")
_UNENTERABLE = {"torch.device()": "torch.device"}

_FRAME_EVENTS = (CallEvent, SubscriptEvent, ConditionEvent, ForLoopEvent, ClassStatementEvent)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_OPERATORS = (cst.BinaryOperation, cst.Comparison, cst.AugAssign)
#: what may make a graph operation, besides an operator: a body without any only moves values around
_MAY_WORK = (cst.Call, cst.Subscript, cst.For, cst.While, cst.If, cst.IfExp, cst.With, cst.Lambda,
             cst.UnaryOperation, cst.BooleanOperation, cst.Assert, cst.ListComp, cst.SetComp, cst.DictComp,
             cst.GeneratorExp, cst.Yield, cst.Await, cst.Raise, cst.Try)
#: kinds of values an operator combines without a graph operation
_PYTHON_KINDS = (Kind.PYTHON, Kind.SIZE, Kind.SCALAR, Kind.SEQUENCE)


#: calls Dynamo traces on an int but not on a symbolic one (measured on torch 2.13, each with ``dynamic=True``
#: and after automatic dynamic; with a static int each folds to a constant) -> the graph-break type
SYMBOLIC_INT_BREAKS: dict[str, GraphBreakType] = {
    **dict.fromkeys(("builtins.str", "builtins.bin", "builtins.hex", "builtins.oct", "builtins.chr",
                     "builtins.complex", "builtins.pow"), GB.BUILTIN_OPERATOR),
    "builtins.divmod": GB.OBSERVED_EXCEPTION,
    **dict.fromkeys(("math.gcd", "math.lcm", "math.isqrt", "math.factorial", "math.comb", "math.perm"),
                    GB.NON_TENSOR_OP),
    "builtins.sorted": GB.SORT_NON_CONSTANT_KEYS,
    "math.isclose": GB.NON_TENSOR_OP,
    # (traced on a Python int: given a symbolic one Dynamo calls the function itself, which it skips)
    **dict.fromkeys(("random.randint", "random.randrange", "random.uniform"), GB.SKIPPED_FUNCTION),
}


#: the detail of a break on a symbolic int (:attr:`Cause.SYMBOLIC_INT`), ``what`` the operation
_SYMBOLIC_DETAIL = ("{what} a size or number that the calls change, which Dynamo then traces as symbolic "
                    "(after the recompile the change makes), is not traced")


def _symbolic_int_call(call: CallEvent) -> tuple[GraphBreakType, str] | None:
    """A call of :data:`SYMBOLIC_INT_BREAKS` (or a string's ``format``) given a size or int that Dynamo traces
    as symbolic once the calls change it (:attr:`Value.dynamic`): it breaks there, on the recompile."""
    q = call.qualname
    if q in SYMBOLIC_INT_BREAKS and (q != "builtins.pow" or len(call.args) == 3):
        gb = SYMBOLIC_INT_BREAKS[q]
    elif call.method == "format" and call.receiver is not None and isinstance(call.receiver.const, str) \
            and not (isinstance(call.statement, cst.Assign) and call.statement.value is call.node):
        # (bound to a name, the string is kept unformatted, and the graph breaks where it is used, measured
        # on torch 2.13: `label = "{}-{}".format(tag, n)` then `len(label)`)
        gb, q = GB.OBSERVED_EXCEPTION, "str.format"
    else:
        return None
    given = [*call.args, *call.kwargs.values()]
    if q == "builtins.sorted" and "key" in call.kwargs and call.sort_keys is not None:
        given = [call.sort_keys]  # (what the key function returns for each element is compared)
    # (a whole shape too: `str(x.size())`)
    if not any(v.dynamic or (v.kind is Kind.SEQUENCE and any(i.dynamic for i in _held(v)))
               or (v.kind is Kind.SIZE and v.dynamic_dims) for v in given):
        return None
    name = q.rsplit(".", 1)[-1] if q != "str.format" else "str.format"
    return gb, _SYMBOLIC_DETAIL.format(what=f"`{name}` of")


def _held(seq: Value) -> tuple[Value, ...]:
    """What a sequence holds: its items when known, else the value of every element (when known)."""
    if seq.items is not None:
        return seq.items
    return (seq.element,) if seq.element is not None else ()


def _tensor_on_stack(event: Event) -> bool:
    """The break at ``event`` leaves what it makes on the stack of the frame resumed after it, and that may be
    a tensor: a mask index or a call whose result is not known to be a Python value, not stored in a local
    nor dropped by its statement (measured on torch 2.13: ``return x[x > 0].sum()`` resumes in a frame holding
    the selected tensor, compiled and guarded on its size)."""
    statement = event.statement
    if isinstance(statement, (cst.Assign, cst.Expr)) and statement.value is event.node:
        return False  # (a local's later reads are read by name)
    if isinstance(event, SubscriptEvent):
        return event.base is not None and event.base.kind is Kind.TENSOR and not event.store
    if isinstance(event, CallEvent):
        return event.result is None or event.result.kind not in (Kind.PYTHON, Kind.SCALAR, Kind.SIZE)
    return False


def _plain_locals(event: Event) -> frozenset[str]:
    """The names of the function of ``event`` that the frame resumed after its break receives as nothing
    Dynamo counts as tensor-related (it looks into lists, tuples, dicts and named tuples, not into other
    objects): ``self`` of a method of a class of the checked code that is no module and derives from nothing
    else, and the name the break's statement binds to the Python number it takes (``frac = t.mean().item()``;
    measured on torch 2.13: Dynamo skips such a frame, and guards on nothing it reads)."""
    fn = event.function
    out: set[str] = set()
    cls = fn.cls
    params = fn.param_names()
    if cls is not None and cls.plain and fn.is_method and not fn.is_classmethod and not fn.is_static \
            and params:
        out.add(params[0])
    statement = event.statement
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
            and type(statement.targets[0].target) is cst.Name and statement.value is event.node \
            and isinstance(event, CallEvent) and event.result is not None \
            and event.result.kind in (Kind.SCALAR, Kind.PYTHON, Kind.SIZE):
        out.add(statement.targets[0].target.value)
    return frozenset(out)


def _in_own_frame(comprehension: cst.CSTNode, node: cst.CSTNode) -> bool:
    """``node`` runs in the frame of ``comprehension``: inside it, but not in its first iterable, which the
    enclosing frame evaluates and hands it (``[f(v) for v in torch.split(x, n.tolist())]``)."""
    first = comprehension.for_in.iter  # type: ignore[attr-defined]
    return encloses(comprehension, node) and not encloses(first, node)


def _plain_python(v: Value | None, calls: dict[int, CallEvent], skipped: set[int]) -> bool:
    """A value Dynamo handles as plain Python: a number, a size, a list, a number read from a tensor or
    returned by a call Dynamo skips (``time.time()``: measured on torch 2.13, ``int(time.time()) % 3``
    adds no graph)... but not another object made by a library (a NumPy array is traced as a tensor)."""
    if v is None or v.kind not in _PYTHON_KINDS:
        return False
    if v.kind is Kind.SCALAR:
        made = calls.get(id(v.origin)) if v.origin is not None else None
        return made is not None and (takes_tensor_data(made) or id(made.node) in skipped)
    return v.qualname is None or v.qualname.startswith("builtins.")


def _short_circuited(ev: Event) -> bool:
    """``ev`` is in an operand that Python may skip (the right side of ``and``/``or``, a branch of
    ``x if c else y``): the analysis does not know the operands before it, so not whether it runs."""
    for n in walk(ev.statement, into_scopes=False):
        if isinstance(n, cst.BooleanOperation) and encloses(n.right, ev.node):
            return True
        if isinstance(n, cst.IfExp) and (encloses(n.body, ev.node) or encloses(n.orelse, ev.node)):
            return True
    return False


def _code_after(function: cst.CSTNode, statement: cst.CSTNode) -> list[cst.CSTNode]:
    """What runs after a break in ``statement``: the statement itself (the rest of it, or the blocks of a
    compound statement whose header breaks) and every statement that follows it in the enclosing blocks."""
    out: list[cst.CSTNode] = []
    if isinstance(function, cst.FunctionDef):
        _search_after(function.body, statement, out)
    return out


def _search_after(node: cst.CSTNode, statement: cst.CSTNode, out: list[cst.CSTNode]) -> bool:
    """:func:`_code_after` below ``node``; whether ``statement`` was found there (a function of the module,
    not a closure: a closure that calls itself is a reference cycle, which would keep the tree alive)."""
    if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        statements = simple_statements(node)
        for i, stmt in enumerate(statements):
            if stmt is statement or _search_after(stmt, statement, out):
                if stmt is statement:
                    out.append(stmt)
                out.extend(statements[i + 1:])
                return True
        return False
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    return any(_search_after(child, statement, out) for child in children(node))


def _always_before(function: cst.CSTNode, statement: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Every way to ``node`` runs ``statement`` first: both sit in one block (or ``node`` deeper inside a later
    statement of it), ``statement`` before the one that holds ``node``."""
    parents = parent_map(function)
    held: cst.CSTNode | None = statement
    while held is not None and not isinstance(parents.get(id(held)), cst.IndentedBlock):
        held = parents.get(id(held))
    block = parents.get(id(held)) if held is not None else None
    holder: cst.CSTNode | None = node
    while holder is not None and parents.get(id(holder)) is not block:
        holder = parents.get(id(holder))
    if block is None or holder is None or holder is held:
        return False
    order = [id(s) for s in block.body]  # type: ignore[attr-defined]
    return order.index(id(held)) < order.index(id(holder))


def _stored_after(statement: cst.CSTNode, node: cst.CSTNode, brk: cst.CSTNode) -> bool:
    """``node`` is in the target of an assignment in ``statement`` whose value holds ``brk``: Python evaluates
    the value first (``self.stats["mean"] = y.mean().item()`` reads ``self.stats`` after the break)."""
    return any(type(n) is cst.Assign and encloses(n.value, brk) and any(encloses(t.target, node) for t in n.targets)
               for n in walk(statement, into_scopes=False))


def _helper_call(ev: Event) -> bool:
    """A call of a function of the project (not a module's ``forward``): Dynamo inlines its body."""
    return isinstance(ev, CallEvent) and ev.callee is not None and ev.module is None


def fresh_receiver(call: CallEvent, events: "list[Event]") -> list[cst.Call]:
    """The calls that made the object ``call`` is a method call on, when its own function made it:
    ``Cls(...).method()``, or a local name every assignment of which (and nothing else) binds to a class
    of the checked code called there; none otherwise.  Such an object has no source Dynamo could load it
    from (measured on torch 2.13: a parameter, a global, an object a helper made and passed in, and a
    module called as ``m(x)`` rebuild; plain classes, dataclasses, named tuples and ``m.forward(x)`` do
    not)."""
    func = call.call.func
    if not isinstance(func, cst.Attribute):
        return []
    receiver = func.value
    if isinstance(receiver, cst.Call):
        values: list[cst.BaseExpression] = [receiver]
    elif isinstance(receiver, cst.Name):
        values = _assigned_values(call.function, receiver.value)
    else:
        return []
    made = [v for v in values if isinstance(v, cst.Call) and _constructs(v, call.function, events)]
    return made if len(made) == len(values) else []


def _constructs(node: cst.Call, function: "FunctionInfo", events: "list[Event]") -> bool:
    """Every analysis of ``node`` in ``function`` called a class of the checked code (or one of
    several such classes), or a factory of one (:func:`_returns_new_instance`): its result is a new instance."""
    made = [ev for ev in events if ev.node is node and isinstance(ev, CallEvent) and ev.function is function]
    return bool(made) and all(
        (ev.callee is None or _returns_new_instance(ev.callee)) and ev.qualname is None and ev.module is None
        and ev.result is not None
        and all(v.cls is not None and v.kind in (Kind.UNKNOWN, Kind.MODULE)
                for v in ev.result.alternatives)
        for ev in made)


#: builtins Dynamo evaluates on constants alone (measured on torch 2.13: `dir(x)`, `dir(Bag(1))` and
#: `ascii(x)` break, "Failed to trace builtin operator"; `dir([1, 2])` and `ascii("ab")` are traced)
_CONSTANT_ONLY_BUILTINS = frozenset({"builtins.dir", "builtins.ascii"})


def _an_object(v: Value) -> bool:
    """A tensor, a module or an instance of a class of the checked code: a value that is no constant (a class,
    also an instance of a metaclass, is one: measured on torch 2.13, `dir(cls)` of a class is traced)."""
    return v.is_tensor or v.kind is Kind.MODULE or (
        v.cls is not None and v.kind is Kind.UNKNOWN and _builtin_base(v.cls, ("type",)) is None)


#: decorators that wrap a function in a cache of its results
_CACHING_DECORATORS = frozenset({"functools.cache", "functools.lru_cache"})
#: decorators that make a function dispatch on its first argument's type
_DISPATCHING_DECORATORS = frozenset({"functools.singledispatch"})

#: Python's own exception classes
_BUILTIN_EXCEPTIONS = frozenset(n for n, v in vars(builtins).items()
                                if isinstance(v, type) and issubclass(v, BaseException))


def _builtin_base(cls: "ClassInfo", names: Container[str]) -> str | None:
    """The builtin class among ``names`` that ``cls`` derives from (through its bases in the checked code), if
    any."""
    for c in cls.mro():
        resolved = {b.name for b in c.base_classes}
        for base in c.bases:
            name = base.rpartition(".")[2]
            if name in names and name not in resolved:
                return name
    return None


def _exception_slot_call(call: CallEvent) -> tuple[GraphBreakType, str] | None:
    """``super().__init__(msg)`` or ``Exception.__init__(self, msg)`` in a method of an exception class of the
    checked code, where no class of the checked code defines the method: Dynamo cannot call the builtin
    exception's slot (measured on torch 2.13: building such an exception in compiled code, to raise it or not,
    breaks at that call, "Attempted to call a super() attribute that is not a function or method" and
    "Unsupported method call"; an exception class without ``__init__``, or one that only sets attributes, is
    traced)."""
    node, fn = call.node, call.function
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute or fn is None or fn.cls is None:
        return None
    name, owner = node.func.attr.value, node.func.value
    if not (name.startswith("__") and name.endswith("__")):
        return None
    base = _builtin_base(fn.cls, _BUILTIN_EXCEPTIONS)
    if base is None or any(name in c.methods for c in list(fn.cls.mro())[1:]):
        return None
    if type(owner) is cst.Call and dotted_name(owner.func) == "super":
        return GB.SUPER_NOT_FUNCTION, (f"`super().{name}` of an exception class is the builtin "
                                       f"`{base}.{name}`, which Dynamo cannot call")
    if dotted_name(owner) in _BUILTIN_EXCEPTIONS:
        return GB.UNSUPPORTED_METHOD, f"Dynamo cannot call the builtin `{dotted_name(owner)}.{name}`"
    return None


def _library_object(v: Value) -> bool:
    """An object a library made (``torch.no_grad()``, ``contextlib.nullcontext()``), not one of a class or
    generator function of the checked code, nor a value the analysis does not know."""
    return v.cls is None and v.func is None and v.kind is not Kind.SEQUENCE \
        and (v.qualname is not None or v.kind is Kind.PYTHON)


def _list_expression(node: cst.BaseExpression) -> bool:
    """A list display or comprehension, or ``list(...)``."""
    return type(node) in (cst.List, cst.ListComp) \
        or (type(node) is cst.Call and dotted_name(node.func) == "list")


def _a_list(call: CallEvent) -> bool:
    """The one argument of ``call`` is a list expression, a name the function binds only to list
    expressions, or a parameter annotated as a list."""
    node = call.call.args[0].value if isinstance(call.call, cst.Call) and call.call.args else None
    if node is not None and _list_expression(node):
        return True
    if type(node) is not cst.Name or call.function is None:
        return False
    fn = call.function.node
    params = [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
    declared = next((p.annotation for p in params if p.name.value == node.value), None)
    if declared is not None:
        ann = declared.annotation
        base = ann.value if type(ann) is cst.Subscript else ann
        return (dotted_name(base) or "").rpartition(".")[2] in ("list", "List")
    values = _assigned_values(call.function, node.value)
    return bool(values) and all(map(_list_expression, values))


def unresumable_loop_test(b: Break) -> bool:
    """A break at an operand of a ``while`` test's ``and``/``or`` chain other than its last (``while
    p[t].max() < thr and t < n:``): Dynamo cannot resume in the middle of the loop's test, and runs the whole
    function eagerly (measured on torch 2.13: "Failed to handle graph break gracefully", no recompile and no
    later break but the first in the loop's body, which the frame resumed in the test meets in its one pass
    over the body; a break at the last operand, or at an ``if`` test's first, resumes)."""
    if b.cause is not Cause.LOOP_CONDITION or type(b.statement) is not cst.While:
        return False
    test = b.statement.test
    return type(test) is cst.BooleanOperation and b.node is not test and not encloses(test.right, b.node)


def _returns_new_instance(fn: "FunctionInfo") -> bool:
    """Every ``return`` of ``fn`` calls a class of its module, ``cls`` of a classmethod, ``type(self)`` or
    ``self.__class__`` (``Rigid.identity(t)``, ``r.compose(q)``): what it returns is made in the call, so in
    the compiled frame that inlines it (measured on torch 2.13: a method whose body breaks, called on such a
    result, breaks again at the call, as on ``Rigid(...)``)."""
    returns = [n for n in walk(fn.node.body, into_scopes=False) if type(n) is cst.Return]
    return bool(returns) and all(
        type(r.value) is cst.Call and _names_own_class(fn, r.value.func) for r in returns)


def _names_own_class(fn: "FunctionInfo", func: cst.BaseExpression) -> bool:
    if type(func) is cst.Name:
        return (fn.is_classmethod and func.value == "cls") or (
            fn.owner is not None and func.value in fn.owner.classes)
    if type(func) is cst.Attribute:
        return func.attr.value == "__class__" and type(func.value) is cst.Name  # `self.__class__(...)`
    return type(func) is cst.Call and dotted_name(func.func) == "type"  # `type(self)(...)`


def _assigned_values(function: "FunctionInfo", name: str) -> list[cst.BaseExpression]:
    """The values of the plain assignments ``name = value`` of ``function``'s body; none when ``name``
    is a parameter, is declared global or nonlocal, or is bound any other way (unpacking, ``for``,
    ``with ... as``, ``:=``, ``+=``, an import, a nested definition, an exception)."""
    fn = function.node
    if not isinstance(fn, cst.FunctionDef) or name in function.global_decls:
        return []
    p = fn.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params]
    params += [a for a in (p.star_arg, p.star_kwarg) if isinstance(a, cst.Param)]
    if any(a.name.value == name for a in params):
        return []
    values: list[cst.BaseExpression] = []
    for n in walk(fn.body):
        if isinstance(n, (cst.Global, cst.Nonlocal)) and any(a.name.value == name for a in n.names):
            return []
        if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.name.value == name:
            return []
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    values.append(n.value)
                elif _names(t.target, name):
                    return []
        elif isinstance(n, cst.AnnAssign) and _names(n.target, name):
            if n.value is None or not isinstance(n.target, cst.Name):
                return []
            values.append(n.value)
        elif isinstance(n, (cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor)) and _names(n.target, name):
            return []
        elif isinstance(n, cst.AsName) and _names(n.name, name):  # `with ... as`, `except ... as`, imports
            return []
        elif isinstance(n, cst.ImportAlias) and n.asname is None and _names(n.name, name):
            return []
    return values


def _names(target: cst.CSTNode, name: str) -> bool:
    """``target`` binds ``name`` (a name itself, or one inside a tuple or list of names)."""
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_names(e.value, name) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _names(target.value, name)
    return False


def _container_change(ev: Event) -> bool:
    """``seen["stamp"].append(t)``: a list's (deque's, set's, dict's) own method changing it with Python
    values, which a helper's frame does without a graph (measured on torch 2.13: a callback that only appends
    a time to a global list, called in a frame resumed after a break, leaves that frame without one).  Held
    on the stack of a resumed frame itself, the bound method is another matter (see
    :func:`~dynalint.analysis.resume_paths.builtin_method_held`)."""
    return isinstance(ev, CallEvent) and ev.qualname is None and ev.method in K.LENGTH_CHANGES \
        and ev.receiver is not None and ev.receiver.kind in (Kind.SEQUENCE, Kind.UNKNOWN) \
        and not any(v.kind in (Kind.TENSOR, Kind.MODULE) for v in (*ev.args, *ev.kwargs.values()))


def _works(ev: Event) -> bool:
    """The event is something Dynamo compiles (a tensor operation, a call it may trace)."""
    if isinstance(ev, CallEvent):
        if ev.callee is not None or ev.module is not None:
            return True
        if ev.result is not None and ev.result.kind in (Kind.TENSOR, Kind.MODULE):
            return True
        if ev.qualname is None and ev.result is not None and _plain_record(ev.result.cls):
            return False  # a dataclass of the checked code built: its fields are stored, no graph operation
        # (measured on torch 2.13: `p = Pack(h, n)` after a break leaves the resumed frame without a graph)
        if ev.qualname is None and ev.result is not None and ev.result.kind is Kind.SEQUENCE \
                and ev.result.keys is not None:
            return False  # a `collections.namedtuple` built: a tuple of what it is given
        if ev.receiver is not None and ev.receiver.kind is Kind.PYTHON:
            return False  # a method of a str/list/dict: no graph operation of its own
        if ev.qualname is None or not ev.qualname.startswith(("builtins.", "math.")):
            return True  # (a `math` function of Python numbers is folded: no graph operation)
        return any(v.kind in (Kind.TENSOR, Kind.MODULE, Kind.SEQUENCE, Kind.UNKNOWN)
                   for v in (*ev.args, *ev.kwargs.values()))
    if isinstance(ev, SubscriptEvent):
        return ev.base is not None and ev.base.kind is Kind.TENSOR
    if isinstance(ev, ForLoopEvent):
        return ev.iterable is not None and ev.iterable.kind is Kind.TENSOR
    return False


def _plain_record(cls: "ClassInfo | None") -> bool:
    """A class of the checked code whose construction runs no code of its own: neither it nor a base
    defines a method (a dataclass's generated ``__init__`` only stores the fields), and every base is a
    class of the checked code."""
    return cls is not None and not cls.is_module and all(
        not c.methods and len(c.base_classes) == len(c.bases) for c in cls.mro())


def find_breaks(program: Analysed, settings: Settings, classifier: "BreakClassifier | None" = None) -> Breaks:
    """Every graph break in the analysed code of ``program`` under ``settings``, in evaluation order.
    ``classifier``: the one the evaluator asked while it ran, under the same settings (the events it
    classified then are not classified again)."""
    classifier = classifier if classifier is not None else BreakClassifier(program, settings)
    found = [b for ev in program.events for b in classifier.breaks_of(ev)]
    found = _sparse_resumes(program.events, _first_traced_random([_read_in_python(b, classifier) for b in found]))
    reached, unreached = _eager_after_fresh_calls(found, _unresumable_calls(program.events))
    traced, untraced = split_untraced(reached)
    found_breaks = Breaks(program, _uninitialized_modules(program.events, traced, traced + untraced),
                          untraced, unreached)
    found_breaks.recompiled = _symbolic_breaks(program.events, found_breaks)
    return found_breaks


def _uninitialized_modules(events: list[Event], found: list[Break], every: list[Break]) -> list[Break]:
    """``found`` with a :attr:`Cause.UNINITIALIZED_MODULE` break at the first use of ``self`` in each
    ``__init__`` that runs as a frame of its own when compiled code builds an ``nn.Module``: where the
    ``__init__`` breaks the graph, or where the part of the function that builds it runs eagerly (``every``:
    the breaks, those of eager parts too).  The class's own ``__init__``, then, while that use is the
    statement calling ``super().__init__(...)``, the base's ``__init__`` it runs (measured on torch 2.13: a
    subclass whose base's ``__init__`` calls ``float(a.sum())`` breaks at both ``super().__init__`` lines
    too; a module built without a break does not)."""
    built = [ev for ev in events if isinstance(ev, CallEvent) and ev.built_module is not None]
    if not built:
        return found
    by_function: dict[int, list[Break]] = {}
    for b in every:
        by_function.setdefault(id(b.event.function), []).append(b)
    parts: dict[int, EagerPart | None] = {}

    def eagerly(call: CallEvent) -> bool:
        key = id(call.function)
        if key not in parts:  # (one eager part per function, however many modules it builds)
            mine = by_function.get(key)
            parts[key] = eager_part(mine, call.function) if mine else None
        part = parts[key]
        return part is not None and part.eager(call.statement)

    built = [ev for ev in built if ev.callee_broke or eagerly(ev)]
    if not built:
        return found
    added: list[Break] = []
    done: set[int] = set()
    for call in built:
        why = ("the module's `__init__` breaks the graph, so Dynamo runs it" if call.callee_broke else
               "the module is built where the function runs eagerly, so Dynamo compiles its `__init__`")
        init = call.built_module.instance_method("__init__")
        while init is not None and id(init) not in done:
            done.add(id(init))
            first = _first_self_use(init)
            inside = [ev for ev in events if ev.function is init and first is not None and encloses(first, ev.node)]
            if not inside:
                break
            # the statement's outermost call (`super().__init__(a)`, not the `super()` in it)
            at = next((ev for ev in inside if _calls_super_init(ev.node)), inside[0])
            added.append(Break(at, Cause.UNINITIALIZED_MODULE, GB.UNINITIALIZED_MODULE,
                               f"{why} as a frame of its own, which receives the module before `nn.Module.__init__` "
                               "ran"))
            init = _base_init(init) if _calls_super_init(first) else None
    if not added:
        return found
    position = {id(ev): i for i, ev in enumerate(events)}
    return sorted(found + added, key=lambda b: position.get(id(b.event), -1))


def _first_self_use(init: "FunctionInfo") -> cst.CSTNode | None:
    """The first statement of ``init``'s body that reads its first parameter or calls ``super()``."""
    names = init.param_names()
    if not names:
        return None
    me = names[0]
    for stmt in simple_statements(init.node.body):
        if any((type(n) is cst.Name and n.value in (me, "super")) for n in walk(stmt, into_scopes=False)):
            return stmt
    return None


def _calls_super_init(node: cst.CSTNode) -> bool:
    """``node`` holds a call of ``super().__init__``."""
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "__init__"
               and type(n.func.value) is cst.Call and dotted_name(n.func.value.func) == "super"
               for n in walk(node, into_scopes=False))


def _base_init(init: "FunctionInfo") -> "FunctionInfo | None":
    """The ``__init__`` of the checked code that ``super().__init__(...)`` in ``init`` runs."""
    if init.cls is None:
        return None
    for cls in list(init.cls.mro())[1:]:
        fn = cls.methods.get("__init__")
        if fn is not None:
            return fn if not fn.is_static and not fn.is_classmethod else None
    return None


_SUPER_PROPERTY_WHY = ("a property read through `super()` is held unresolved while tracing (Dynamo does not run the "
                       "getter there), and Dynamo cannot use it")


def _objects(seq: Value) -> bool:
    """``seq`` is a list or tuple of instances of a class of the checked code (or of modules), no tensor."""
    if seq.kind is not Kind.SEQUENCE:
        return False
    held = _held(seq)
    return bool(held) and all(v.cls is not None and not v.is_tensor and not v.maybe_none and _an_object(v)
                              for v in held)


def _tensor_keys(keys: Value) -> bool:
    """A sort by ``keys`` (:attr:`CallEvent.sort_keys`) compares tensors: they are tensors, or tuples holding one
    (``sorted(d.items())`` of a dict of tensors).  Dynamo sorts only by keys it knows as constants."""
    return _holds_tensor(keys.elements())


def _holds_tensor(v: Value) -> bool:
    """``v`` is a tensor, or a tuple or list holding one at any depth."""
    if v.is_tensor:
        return True
    if v.kind is not Kind.SEQUENCE:
        return False
    if v.items is not None:
        return any(map(_holds_tensor, v.items))
    return v.element is not None and _holds_tensor(v.element)


def _assumed_tensor(v: Value) -> bool:
    """``v`` is only taken for a tensor (an untyped parameter, which may as well be a dict: ``sorted(d,
    key=lambda k: d[k])``): what iterating it gives is not known."""
    return v.kind is Kind.TENSOR and v.assumed


def _unresumable_calls(events: list[Event]) -> list[Event]:
    """The calls of generator functions of the checked code whose body breaks the graph, and the ``with``
    blocks whose ``__enter__`` breaks: Dynamo cannot resume the caller in the middle of stepping a generator
    it inlines or of entering a block, and runs the rest of the caller eagerly (measured on torch 2.13: a
    branch on a tensor after ``torch.cat(list(chunks(x)))``, whose generator calls ``.item()``, is not
    reported, after the same call of a plain function it is; after ``time.perf_counter()`` in ``__enter__``,
    "Failed to handle graph break gracefully", nothing in the block or in ``__exit__`` is)."""
    return [ev for ev in events if (isinstance(ev, CallEvent) and ev.callee_broke and ev.callee is not None
                                    and is_generator_function(ev.callee))
            or (isinstance(ev, ContextManagerEvent) and ev.enter_broke)]


def _in_generator_expression(b: Break) -> bool:
    """A break inside a generator expression: Dynamo cannot rebuild the generator it was stepping to resume
    after the break, and runs the rest of the function eagerly, whatever consumes the generator (measured on
    torch 2.13: "Generator reconstruction with mutations", then "Failed to handle graph break gracefully", for
    ``sum``, ``any``, ``all``, ``list``, ``tuple``, ``max``, ``sorted``, ``dict`` and ``set`` of one; a branch
    on a tensor after it is not reported)."""
    stmt = b.statement
    return stmt is not None and any(type(n) is cst.GeneratorExp and encloses(n, b.node) for n in walk(stmt))


def _symbolic_format(ev: StringFormatEvent | FormattedStringEvent) -> tuple[GraphBreakType, str] | None:
    """``"rows%03d" % n`` of a size or int the calls change: Dynamo raises formatting the symbolic int
    (measured on torch 2.13: "Observed exception"); a static one it formats.  An f-string cannot build its
    text from a number passed to the compiled function as a symbolic int or float either, whether the string
    is used or not (measured on torch 2.13: "BUILD_STRING type error" at ``f"n={n}"`` and ``f"{lr:.3e}"``),
    except a float with no format spec, kept unformatted and breaking where it is used, and a size read from
    a tensor, which the f-string specialises (each new size recompiles)."""
    if isinstance(ev, FormattedStringEvent):
        statement = ev.statement
        message = statement.msg if isinstance(statement, cst.Assert) else None
        if isinstance(statement, cst.Raise) or message is not None and encloses(message, ev.node):
            return None  # (the message of an error, built only when it is raised)
        if not any(v.dynamic and v.kind is Kind.PYTHON and (spec or v.qualname != "builtins.float")
                   for v, spec in zip(ev.values, ev.specified)):
            return None
        return GB.BUILD_STRING_TYPE, _SYMBOLIC_DETAIL.format(what="an f-string of")
    if not any(v.dynamic for v in ev.values):
        return None
    return GB.OBSERVED_EXCEPTION, _SYMBOLIC_DETAIL.format(what="`%`-formatting")


def _symbolic_breaks(events: list[Event], breaks: "Breaks") -> list[Break]:
    """The breaks Dynamo meets on the recompile that traces a size or int as symbolic
    (:func:`_symbolic_int_call`), in the parts of their functions that the first compile traced too (the
    eager part of a function runs eagerly on every compile), without those after one that Dynamo meets as an
    exception it raises itself ("Observed exception": ``divmod`` of a symbolic int), in the code after it: on
    that compile Dynamo then skips the function and runs it eagerly (measured on torch 2.13: a ``math.gcd`` of
    a symbolic size after such a ``divmod`` does not break; a ``print`` after it breaks on the first compile,
    which traced the ints as they were)."""
    found: list[Break] = []
    parts: dict[int, EagerPart | None] = {}
    for ev in events:
        symbolic = _symbolic_int_call(ev) if isinstance(ev, CallEvent) else \
            _symbolic_format(ev) if isinstance(ev, (StringFormatEvent, FormattedStringEvent)) else None
        if symbolic is None:
            continue
        fn = ev.function
        if id(fn) not in parts:
            parts[id(fn)] = eager_part([b for b in breaks.all if b.event.function is fn], fn)
        part = parts[id(fn)]
        if part is None or not part.eager(ev.statement):
            found.append(Break(ev, Cause.SYMBOLIC_INT, *symbolic))
    dropped: set[int] = set()
    for skip in (b for b in found if b.gb is GB.OBSERVED_EXCEPTION):
        after = {id(n) for stmt in _code_after(skip.event.function.node, skip.statement) for n in walk(stmt)}
        dropped.update(id(b) for b in found if b is not skip and b.event.function is skip.event.function
                       and id(b.node) in after and not encloses(b.node, skip.node))
    return [b for b in found if id(b) not in dropped]


def _eager_after_fresh_calls(found: list[Break], stops: list[Event] = ()) -> tuple[list[Break], list[Break]]:
    """``found`` split into the breaks Dynamo meets and those of a function that come after a break at a
    method call on an object it made (:attr:`Cause.FRESH_OBJECT_METHOD`) in its code: Dynamo cannot resume
    there and runs the rest of the function eagerly, where nothing breaks (measured on torch 2.13: a ``print``
    and a branch on a tensor after such a call are not reported; the functions it calls are frames of their
    own). So does a break at an attribute read (:attr:`Cause.ATTRIBUTE_READ`), which is no call to resume
    after (measured on torch 2.13: an untraceable NumPy call after ``a.dtype`` in the same function is not
    reported), and a break at an ``assert`` Dynamo cannot turn into ``torch._assert``
    (:attr:`Cause.ASSERTED_OBJECT`; measured: a second such ``assert`` after it is not reported), a generator
    handed to a function Dynamo cannot pass it to (:attr:`Cause.GENERATOR_ARGUMENT`), ``in`` on a tensor
    (:attr:`Cause.TENSOR_MEMBERSHIP`), a break at a ``while`` test's operand but its last
    (:func:`unresumable_loop_test`; the frame resumed there still traces one pass of the loop's body and
    breaks at the body's first break: measured), a call of an ``nn.LSTM``/``GRU``/``RNN`` (measured: a
    ``print`` or a second RNN after it is not reported, whether a graph came before it or not; not a method
    that visits the submodules and returns no generator, ``model.train()``:
    :func:`~dynalint.analysis.eager_part.skips_frame`), and a break inside a generator expression
    (:func:`_in_generator_expression`).  ``stops``: other events after which the rest of their function runs
    eagerly (:func:`_unresumable_calls`), whose breaks come before them in ``found``."""
    fresh = [(i, found[i].event) for i, b in enumerate(found)
             if b.cause in (Cause.FRESH_OBJECT_METHOD, Cause.ATTRIBUTE_READ, Cause.SPARSE_RESUME,
                            Cause.ASSERTED_OBJECT, Cause.GENERATOR_ARGUMENT, Cause.TENSOR_MEMBERSHIP)
             or skips_frame(b)
             or _in_generator_expression(b) or unresumable_loop_test(b)]
    fresh += [(-1, ev) for ev in stops]
    if not fresh:
        return found, []
    dropped: set[int] = set()
    for i, event in fresh:
        after = {id(n) for stmt in _code_after(event.function.node, event.statement) for n in walk(stmt)}
        # (a method that calls `torch._dynamo.graph_break()` itself still breaks, in a frame of its own)
        later = [j for j in range(i + 1, len(found)) if found[j].event is not event
                 and found[j].event.function is event.function and id(found[j].statement) in after
                 and not breaks_inside_method(found[j])]
        if later and i >= 0 and unresumable_loop_test(found[i]) \
                and encloses(found[i].statement.body, found[later[0]].node):
            later = later[1:]  # the frame resumed in the test traces the body once, up to its first break
        dropped.update(later)
    return [b for j, b in enumerate(found) if j not in dropped], [b for j, b in enumerate(found) if j in dropped]


def _sparse_resumes(events: list[Event], found: list[Break]) -> list[Break]:
    """``found`` with a :attr:`Cause.SPARSE_RESUME` break at the first later event of its function that uses
    a sparse tensor made at a call that breaks (the frame resumed after that call starts there or before)."""
    made = [i for i, ev in enumerate(events) if isinstance(ev, CallEvent) and _sparse(ev.result)]
    if not made:
        return found
    skipped = {id(b.event) for b in found if b.cause is Cause.UNTRACEABLE_CALL}
    added = []
    for i in made:
        call = events[i]
        if id(call) not in skipped:
            continue
        use = next((ev for ev in events[i + 1:] if ev.function is call.function and ev.statement is not call.statement
                    and any(_sparse(v) for v in _used_values(ev))), None)
        if use is not None:
            added.append(Break(use, Cause.SPARSE_RESUME, GB.SPARSE_TENSOR,
                               "the frame Dynamo resumes in after the call that made this sparse tensor cannot "
                               "take it as an input"))
    if not added:
        return found
    position = {id(ev): i for i, ev in enumerate(events)}
    return sorted(found + added, key=lambda b: position.get(id(b.event), -1))


def _sparse(v: Value | None) -> bool:
    return v is not None and v.kind is Kind.TENSOR and v.qualname == K.SPARSE_TENSOR


def _used_values(ev: Event) -> "tuple[Value | None, ...]":
    """The values an event reads (a call's receiver and arguments, an operator's operands...)."""
    if isinstance(ev, CallEvent):
        return (ev.receiver, *ev.args, *ev.kwargs.values())
    if isinstance(ev, SubscriptEvent):
        return (ev.base, *ev.index)
    if isinstance(ev, (ArithmeticEvent, ComparisonEvent)):
        return ev.operands
    if isinstance(ev, ConditionEvent):
        return (ev.value,)
    if isinstance(ev, ForLoopEvent):
        return (ev.iterable,)
    return ()


def _read_in_python(brk: "Break", classifier: "BreakClassifier") -> "Break":
    """``brk`` marked :attr:`Break.read_in_python` when it is a data-dependent size the code then reads in
    Python (:meth:`BreakClassifier.counted_after`), or a number a condition then tests
    (:meth:`BreakClassifier.branched_on`), the graph unbroken in between; marked
    :attr:`Break.needs_constant` when it is a number the code then uses where Python needs its value
    (:meth:`BreakClassifier.used_as_constant`)."""
    if (brk.cause in (Cause.MASK_INDEX, Cause.DYNAMIC_SHAPE_OP) and brk.gb is GB.DYNAMIC_SHAPE_OPERATOR
            and classifier.counted_after(brk.event) is not None) \
            or (brk.cause is Cause.SCALAR_EXTRACTION and classifier.branched_on(brk.event)):
        return dataclasses.replace(brk, read_in_python=True)
    if brk.cause is Cause.SCALAR_EXTRACTION and classifier.used_as_constant(brk.event):
        return dataclasses.replace(brk, needs_constant=True)
    return brk


#: calls whose argument Dynamo needs as a Python value: given a captured number, ``random.Random(n)``
#: raises ``AsPythonConstantNotImplementedError`` and ``range(n)`` breaks (measured on torch 2.13)
CONSTANT_ARGUMENT_CALLS = frozenset({"random.Random", "builtins.range"})

#: containers whose subscript by a captured number Dynamo does not trace: a list or tuple (an index raises
#: ``GuardOnDataDependentSymNode``, a slice bound or a store breaks), a dict, an ``nn.ModuleList`` (break)
_PYTHON_CONTAINERS = (Kind.SEQUENCE, Kind.MODULE, Kind.PYTHON)


def needs_constant(ev: Event, origin: cst.CSTNode) -> bool:
    """``ev`` uses the number ``origin`` extracts where Python needs its value: with
    ``capture_scalar_outputs`` the number is an unbacked symbol there, and Dynamo raises or breaks the
    graph instead of tracing (measured on torch 2.13: ``seq[n]`` of a Python list or tuple, also of
    ``.tolist()``'s elements, and ``x.shape[n]`` raise ``GuardOnDataDependentSymNode``; ``d[n]``,
    ``seq[:n]``, ``seq[n] = v``, ``modules[n]`` and ``range(n)`` break; arithmetic, ``math`` functions and
    a tensor's ``x[n]`` are traced).  Wider than :func:`constant_failure`: a subscript of any container
    of :data:`_PYTHON_CONTAINERS` counts, and ``origin``'s number wherever it is among the numbers used,
    not only the first."""
    return any(v.origin is origin for v, _ in _constant_uses(ev, _PYTHON_CONTAINERS))


def constant_failure(ev: Event) -> "tuple[cst.CSTNode, bool] | None":
    """Where ``ev`` uses a data-dependent number as a Python value in a way Dynamo cannot trace once
    ``capture_scalar_outputs`` makes it symbolic: the number's origin, and whether Dynamo then fails to
    compile (True) or breaks the graph (False).  Measured on torch 2.13: ``seq[n]`` of a Python list or
    tuple (also ``seq[-n]``, ``seq[n % k]``, ``seq[int(f)]``, and ``seq[n] += v``, which reads it) raises
    ``GuardOnDataDependentSymNode``,
    ``random.Random(n)`` raises ``AsPythonConstantNotImplementedError``; ``seq[n] = v``, ``seq[:n]``,
    ``range(n)`` and a loop over it break; a tensor's ``x[n]``, ``x[:n]``, arithmetic and sizes of torch ops
    are traced.  Not claimed: ``[0] * n``, a dict key, a string index, an ``nn.ModuleList`` index (they
    break, but the analysis does not tell those values apart from other Python values).  The origin is
    the first known one among the numbers used, in the order :func:`_constant_uses` walks them (an index
    before the slice bounds)."""
    return next(((v.origin, raises) for v, raises in _constant_uses(ev, (Kind.SEQUENCE,))
                 if v.origin is not None), None)


def _constant_uses(ev: Event, containers: "Container[Kind]") -> "Iterator[tuple[Value, bool]]":
    """The Python numbers (:attr:`Kind.SCALAR`) ``ev`` uses where Python needs their value, each with
    whether Dynamo raises there (True) or breaks the graph (False) once ``capture_scalar_outputs`` keeps
    the number symbolic: the index of a subscript of a container whose kind is in ``containers``
    (raising unless only stored to: ``seq[n] += v`` reads it, and raises as a read does), then its slice
    bounds (breaking); the arguments of a call of :data:`CONSTANT_ARGUMENT_CALLS` (``random.Random(n)``
    raising); the arguments of a loop's ``range`` (breaking).  The one walk of :func:`needs_constant`
    and :func:`constant_failure`, which pass what each of them claims."""
    found: "Iterable[tuple[Value | None, bool]]" = ()
    if isinstance(ev, SubscriptEvent):
        if ev.base is not None and ev.base.kind in containers:
            found = [*((v, not ev.store or ev.augmented) for v in ev.index), *((v, False) for v in ev.bounds)]
    elif isinstance(ev, CallEvent):
        if ev.qualname in CONSTANT_ARGUMENT_CALLS:
            raises = ev.qualname == "random.Random"
            found = [(v, raises) for v in (*ev.args, *ev.kwargs.values())]
    elif isinstance(ev, ForLoopEvent):
        found = [(v, False) for v in ev.range_args or ()]
    return ((v, raises) for v, raises in found if v is not None and v.kind is Kind.SCALAR)


#: tensor methods whose result is an integer tensor whatever the receiver's dtype
_INTEGER_RESULT_METHODS = frozenset({"argsort", "argmax", "argmin", "long", "int"})
#: torch functions whose result is an integer tensor (without a ``dtype`` argument)
_INTEGER_RESULT_FUNCTIONS = frozenset({"torch.randperm", "torch.argsort", "torch.argmax", "torch.argmin"})


def fails_to_compile(brk: Break) -> bool:
    """A :attr:`Cause.CAPTURED_CONSTANT` break where Dynamo raises rather than breaks
    (:func:`constant_failure`): the compile fails, nothing runs after it."""
    if brk.cause is not Cause.CAPTURED_CONSTANT:
        return False
    failure = constant_failure(brk.event)
    return failure is not None and failure[1]


def _runs_whenever(ev: Event, other: Event) -> bool:
    """``ev`` is in ``other``'s function and in no block of it that ``other`` is outside of (the body or
    ``else`` of an ``if``, a loop, a ``try``...): it runs whenever ``other`` does."""
    if ev.function is not other.function or ev.function is None:
        return False
    blocks = (b for n in walk(ev.function.node) if isinstance(n, _BRANCHING)
              for b in (getattr(n, "body", None), getattr(n, "orelse", None), *getattr(n, "handlers", ()),
                        getattr(n, "finalbody", None), *getattr(n, "cases", ()))
              if b is not None)
    return all(encloses(b, other.statement) for b in blocks if encloses(b, ev.statement))


#: statements whose blocks may not run
_BRANCHING = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


def _first_traced_random(found: list[Break]) -> list[Break]:
    """``found`` without the traced-random breaks that come after another traced-random break of their
    function in its code: Dynamo cannot resume after such a break, so it runs the rest of that function
    eagerly (measured on torch 2.13: "Failed to handle graph break gracefully", also when the function is
    inlined, once its own frame is compiled).  After a break of another kind the frame resumed there is
    traced, and its traced-random break is logged there (`if rng.random() > p: ...` then `f0 + w`)."""
    if not any(b.cause is Cause.TRACED_RANDOM for b in found):
        return found
    order: dict[int, dict[int, int]] = {}

    def position(b: Break) -> int:
        fn = b.event.function
        if id(fn) not in order:
            order[id(fn)] = {id(n): i for i, n in enumerate(walk(fn.node))}
        return order[id(fn)].get(id(b.statement), -1)

    first: dict[int, int] = {}
    for b in found:
        if b.cause is not Cause.TRACED_RANDOM:
            continue
        at = position(b)
        first[id(b.event.function)] = min(first.get(id(b.event.function), at), at)
    return [b for b in found if b.cause is not Cause.TRACED_RANDOM
            or position(b) <= first.get(id(b.event.function), position(b))]


class BreakClassifier:
    """Turns events into breaks, appending to :attr:`found` (one pass over the events, by event type).

    The evaluator asks it too, while it runs (:meth:`breaks_at`): a statement that broke resumes the
    rest of its block in a new frame, whose inputs are the values alive there."""

    def __init__(self, program: Analysed, settings: Settings, own: OwnCapture | None = None) -> None:
        self.index = program.index  # (not the program, which keeps the classifier: no cycle)
        self.settings = settings
        self.own = program.capture if own is None else own
        """The capture flags the module's own code turns on (:mod:`dynalint.analysis.capture_settings`),
        on top of the settings' (``NO_CAPTURE`` to classify under the settings alone)."""
        self.found: list[Break] = []
        self._may: dict[int, tuple[Event, bool]] = {}
        self._at: dict[int, tuple[Event, list[Break]]] = {}
        """:meth:`breaks_of` by ``id`` of the event: each event is classified once, whoever asks."""
        """:meth:`may_break_at` by ``id`` of the event (the evaluator asks again for the events of a call
        at each statement of its callers)."""
        self.reorderable = {n if "." in n else f"builtins.{n}" for n in settings.reorderable_logging_functions} \
            | program.index.reorderable
        self.dynamic_ops = KnownDynamicOps(program.index.dynamic_output_ops, program.project)
        self.events = program.events
        """The events reported so far (a loop over a data-dependent result looks back for the op)."""
        self._uses: dict[int, tuple[Event, tuple[cst.CSTNode, cst.CSTNode] | None]] = {}
        self._names: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}
        """:func:`counting_names` by ``id`` of the function's node."""
        self._positions: dict[int, int] = {}
        """Where each event is in :attr:`events`, by ``id`` (filled as far as asked: see :meth:`_position`)."""
        self._indexed = 0
        self._last_indexed: Event | None = None
        self._hooked: dict[int, set[str]] = {}
        """:meth:`_backward_hooked_attributes` by ``id`` of the class."""

    def classify(self, ev: Event) -> bool:
        """Append the breaks at ``ev`` to :attr:`found`; False for an event no break is made of.  (The
        handlers are looked up by type in a table of the class: bound methods kept on the instance
        would tie it, and the program and tree it holds, in a cycle only a garbage collection frees.)"""
        handler = _HANDLERS.get(type(ev))
        if handler is None:
            return False
        handler(self, ev)
        return True

    def breaks_at(self, ev: Event) -> bool:
        """Whether Dynamo breaks the graph at ``ev``."""
        return bool(self.breaks_of(ev))

    def breaks_of(self, ev: Event) -> list[Break]:
        """The breaks at ``ev``, classified the first time anyone asks (the evaluator while it runs,
        :func:`find_breaks` after it) and remembered for the others."""
        known = self._at.get(id(ev))
        if known is None or known[0] is not ev:  # (an event let go may leave its id to another)
            known = self._at[id(ev)] = (ev, self._classified(ev))
        return known[1]

    def _classified(self, ev: Event) -> list[Break]:
        """The breaks at ``ev``, classified now and not kept in :attr:`found`."""
        before = len(self.found)
        self.classify(ev)
        made = self.found[before:]
        del self.found[before:]
        return made

    def may_break_at(self, ev: Event) -> bool:
        """Whether Dynamo breaks at ``ev``, or would if the receiver of a method only tensors (and
        NumPy arrays, traced as tensors) have were one: ``mask.nonzero()`` with ``mask`` a parameter
        the analysis could not type, or one that may be None.  What runs after such a call may be in a resumed frame, so a
        finding that needs a value computed in the same graph is not certain there."""
        known = self._may.get(id(ev))
        if known is None or known[0] is not ev:  # (an event let go may leave its id to another)
            known = self._may[id(ev)] = (ev, self._may_break_at(ev))
        return known[1]

    def _may_break_at(self, ev: Event) -> bool:
        if self.breaks_at(ev):
            return True
        recv = ev.receiver if isinstance(ev, CallEvent) and ev.qualname is None else None
        if recv is None or ev.method not in _BREAKING_ON_TENSORS:
            return False
        if recv.kind is Kind.UNKNOWN:  # (an event made for the question: not remembered)
            return bool(self._classified(dataclasses.replace(ev, receiver=tensor(params=recv.params))))
        if recv.kind is Kind.TENSOR and recv.maybe_none:  # a tensor argument that may be omitted
            return bool(self._classified(dataclasses.replace(ev, receiver=recv.with_(maybe_none=False))))
        return False

    def flag_free(self) -> bool:
        """Whether no capture flag applies to any event (neither the settings nor the module's own code
        turn one on).  The flags are what make a classification look at the other events (a size read
        later, a number tested across a break): without them an event's breaks depend on the event, the
        settings and what of the module :func:`~dynalint.analysis.replay.module_facts` and the class
        shells hold."""
        return not self.own and not any(getattr(self.settings, flag) for flag in CAPTURE_FLAGS)

    def carry(self, earlier: "BreakClassifier") -> None:
        """Take over what ``earlier``, the classifier of the analysis before an edit, found for the events
        of its program: an analysis that replays a record puts back the same event objects (looked up by
        identity), whose breaks are then the ones found before.  Only between flag-free classifiers under
        equal settings (the caller vouches for the module facts and class shells: a replay does)."""
        if not (self.flag_free() and earlier.flag_free() and earlier.settings == self.settings):
            return
        kept = {id(ev) for ev in earlier.events}
        self._at.update((k, v) for k, v in earlier._at.items() if k in kept)
        self._may.update((k, v) for k, v in earlier._may.items() if k in kept)
        # where the code reads a size an event makes: of the event's function's text alone, which a
        # replayed event's function keeps
        self._uses.update((k, v) for k, v in earlier._uses.items() if k in kept)

    def captures(self, flag: str, ev: Event) -> bool:
        """Whether Dynamo traces ``ev`` with ``flag`` on: set in the settings, or by the module's own code
        for the compiled code ``ev`` is in."""
        return getattr(self.settings, flag, False) or self.own.on(flag, ev.function)

    def condition(self, ev: ConditionEvent) -> None:
        if asserted_object(ev):
            self.found.append(Break(ev, Cause.ASSERTED_OBJECT, GB.PROXY_ARGUMENTS,
                                    "Dynamo turns this `assert` into `torch._assert(value)`, which cannot take a "
                                    "value that is neither a tensor nor a constant (a module, an object, a list or "
                                    "tuple of them or of tensors)"))
            return
        if not data_dependent_test(ev, self.captures(CAPTURE_SCALAR_OUTPUTS, ev)):
            self.counted_length(ev)  # (a length read, or a number computed from one: _count_bound)
            return
        if (not ev.value.is_tensor or ev.value.origin is not None) and self._resumed_with(ev):
            return
        if ev.construct == "while" or ev.exits_loop:
            self.found.append(Break(ev, Cause.LOOP_CONDITION, GB.DATA_DEPENDENT_BRANCHING))
        elif not (traced_assertion(ev) and self.settings.target_torch >= (2, 13)):
            gb = GB.DATA_DEPENDENT_OPERATOR if ev.construct == "not" else GB.DATA_DEPENDENT_BRANCHING
            self.found.append(Break(ev, Cause.CONDITION, gb))

    def call(self, call: CallEvent) -> None:
        found = self.found
        capture = self.captures(CAPTURE_SCALAR_OUTPUTS, call)
        q = call.qualname
        if q in ("builtins.any", "builtins.all") and call.args and call.args[0].elements().is_tensor:
            found.append(Break(call, Cause.BOOL_OF_EACH, GB.DATA_DEPENDENT_BRANCHING))
        if q == "builtins.range" and any(a.is_tensor for a in call.args):
            found.append(Break(call, Cause.TENSOR_RANGE, GB.BUILTIN_OPERATOR))
        where = None if capture else tensor_for_number(call)
        if where is not None:
            found.append(Break(call, Cause.NUMBER_ARGUMENT, GB.DATA_DEPENDENT_OPERATOR, where))
        elif not capture and tensor_for_number(call, _traced_random) is not None:
            # (measured on torch 2.13: `torch.roll(x, random.randint(0, 3))`, `F.dropout(x, p=random.uniform(...))`;
            # a parameter that takes a tensor too, `torch.full`'s value or `clamp`'s bounds, is traced)
            found.append(Break(call, Cause.TRACED_RANDOM, GB.DATA_DEPENDENT_OPERATOR, "argument"))
        else:
            gb = scalar_extraction(call, capture)
            if gb is not None:
                found.append(Break(call, Cause.SCALAR_EXTRACTION, gb))
        checked = None if capture else causal_mask_check(call)
        if checked is not None:
            found.append(Break(call, Cause.CAUSAL_MASK_CHECK, GB.ITEM, checked))
        op = None if self.captures(CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, call) else dynamic_shape_call(call, self.dynamic_ops)
        op = op or uncaptured_shape_call(call)
        if op is not None:
            found.append(Break(call, Cause.DYNAMIC_SHAPE_OP, GB.DYNAMIC_SHAPE_OPERATOR, op))
        if _may_count(call.node):
            self.counted_length(call)
        untraced = self.untraceable(call)
        if untraced is None and call.method in INPLACE_VIEW_METHODS and call.qualname is None \
                and call.receiver is not None and call.receiver.is_tensor and call.receiver.entered:
            # (measured on torch 2.13: `x.unsqueeze_(0)` of an argument breaks, of a tensor made here not)
            untraced = GB.UNSUPPORTED_DELAYED_CALL, \
                f"`{call.method}` changes in place the shape of a tensor the compiled code was given"
        if untraced is not None:
            found.append(Break(call, Cause.UNTRACEABLE_CALL, untraced[0], untraced[1]))
        elif q == "builtins.len" or (call.method is not None and call.receiver is not None):
            used = (call.receiver, *call.args[:1]) if q != "builtins.len" else call.args[:1]
            if call.method == "join" and call.args and call.receiver is not None \
                    and call.receiver.kind is Kind.PYTHON:
                # `" ".join(parts)` reads each string of its argument
                used = (*used, *(call.args[0].items or ()), call.args[0].element)
            self._tensor_text(call, used)
        self._super_property(call)
        handed = _generator_handed(call)
        if handed is not None:
            found.append(Break(call, Cause.GENERATOR_ARGUMENT, *handed))
        if call.method is not None and call.qualname is None and call.receiver is not None \
                and call.receiver.is_tensor and not call.in_loop and self._argument_broke(call):
            found.append(Break(call, Cause.HELD_TENSOR_METHOD, GB.SKIPPED_FUNCTION,
                               f"an argument of `{call.method}` breaks the graph while it is computed, and Dynamo "
                               "resumes with the tensor's method already looked up, which it cannot call"))
        if call.callee_broke and call.method is not None and not call.in_loop and self._fresh_object_call(call):
            found.append(Break(call, Cause.FRESH_OBJECT_METHOD, GB.RECONSTRUCTION_FAILURE,
                               f"`{call.method}` breaks the graph inside, and Dynamo cannot rebuild the method "
                               "of an object made in the compiled function to resume after the call"))
        elif call.callee_broke and call.method is not None and not call.in_loop and call.callee is not None \
                and call.receiver is not None and _subclass_instance(call.receiver):
            found.append(Break(call, Cause.FRESH_OBJECT_METHOD, GB.RECONSTRUCTION_FAILURE,
                               f"`{call.method}` breaks the graph inside, and Dynamo cannot rebuild the method "
                               "of a tensor subclass instance to resume after the call"))
        self.captured_constant(call)

    def _argument_broke(self, call: CallEvent) -> bool:
        """Whether computing an argument of ``call`` breaks the graph: a break at an event of its function
        inside one of the call's arguments, or a call there whose callee breaks (the events before ``call``
        while they are inside it; the receiver's are not: it is computed before the method is looked up)."""
        node = call.node
        if type(node) is not cst.Call:
            return False
        nodes = [n for a in node.args for n in walk(a.value)]
        if not any(type(n) is cst.Call for n in nodes):
            return False  # (only arguments that hold a call are looked into)
        inside = {id(n) for n in nodes}
        events = self.events
        at = self._position(call)
        for ev in reversed(events[:at if at >= 0 else len(events)]):
            if ev.function is not call.function:
                continue  # (a callee's own events)
            if id(ev.node) not in inside:
                if encloses(node, ev.node):
                    continue  # the receiver
                return False
            if (isinstance(ev, CallEvent) and ev.callee_broke) or self.breaks_at(ev):
                return True
        return False

    def _position(self, ev: Event) -> int:
        """Where ``ev`` is in :attr:`events` (-1 when it is not there yet: the evaluator asks about an event
        before reporting it).  The events are indexed as far as they were asked about; a list cut back since
        (an analysis undone to be replayed) is indexed again."""
        events, positions = self.events, self._positions
        known = positions.get(id(ev))
        if known is not None and known < len(events) and events[known] is ev:
            return known
        indexed = self._indexed
        if indexed and (indexed > len(events) or events[indexed - 1] is not self._last_indexed):
            positions.clear()
            indexed = 0
        for i in range(indexed, len(events)):
            positions[id(events[i])] = i
        self._indexed = len(events)
        self._last_indexed = events[-1] if events else None
        known = positions.get(id(ev))
        return known if known is not None and events[known] is ev else -1

    def _fresh_object_call(self, call: CallEvent) -> bool:
        """``call`` is a method call on an object its function made (:func:`fresh_receiver`) with no
        break between the making and the call: after such a break Dynamo resumes in a new frame, which
        receives the object as an argument it can load again (measured on torch 2.13)."""
        made = {id(n) for n in fresh_receiver(call, self.events)}
        if not made:
            return False
        events = self.events
        at = self._position(call)
        for ev in reversed(events[:max(at, 0)]):
            if ev.function is not call.function:
                continue
            if id(ev.node) in made and isinstance(ev, CallEvent):
                return True
            if self.may_break_at(ev) or (isinstance(ev, CallEvent) and ev.callee_broke):
                return False
        return False

    def subscript(self, sub: SubscriptEvent) -> None:
        if sub.store and sub.base.qualname == "os.environ":
            self.found.append(Break(sub, Cause.ENVIRONMENT_WRITE, GB.SKIPPED_FUNCTION,
                                    "setting an environment variable calls os.putenv, which Dynamo skips"))
        if not self.captures(CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, sub) and mask_index(sub):
            self.found.append(Break(sub, Cause.MASK_INDEX, GB.DYNAMIC_SHAPE_OPERATOR))
        # an index read from data breaks with capture_scalar_outputs too: Dynamo cannot specialise
        # the unbacked index to bound-check it (measured on torch 2.13: `x[x.argmax()]`)
        if tensor_indexed_by_data_scalar(sub) or zero_dim_mask_index(sub):
            self.found.append(Break(sub, Cause.DATA_INDEX, GB.DATA_DEPENDENT_OPERATOR))
        elif tensor_in_python_index(sub) and not (self.captures(CAPTURE_SCALAR_OUTPUTS, sub)
                                                  and _index_captured(sub)):
            self.found.append(Break(sub, Cause.PYTHON_INDEX, GB.ITEM))
        gb = traced_random_index(sub)
        if gb is not None:
            self.found.append(Break(sub, Cause.TRACED_RANDOM, gb, "index"))
        self.captured_constant(sub)

    def counted_length(self, ev: Event) -> None:
        """With ``capture_dynamic_output_shape_ops`` on, the break where Python reads the length of a
        data-dependent result made earlier in the function (:func:`counted_rows`): "graph break in loop"
        at a loop over it, Dynamo raising at its ``.tolist()``."""
        if not self.captures(CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, ev):
            return
        for made in self.events:
            if made is ev:
                return
            what = made.function is ev.function and self._dynamic_result(made)
            use = self._use_of(made) if what else None
            # (the use first: a condition between them is classified while the graph is followed to it)
            if use is not None and use[0] is ev.node and self.counted_after(made) is ev.node:
                gb = GB.DATA_DEPENDENT_BRANCHING if isinstance(ev, ConditionEvent) else GB.LOOP \
                    if isinstance(ev, ForLoopEvent) or not _calls_method(ev.node, "", "tolist") \
                    else GB.DATA_DEPENDENT_OPERATOR
                read = "its length is read" if not isinstance(ev, ConditionEvent) or _reads_length(ev.node, None) \
                    else "a number computed from its length is tested"
                detail = f"{read} in Python here, and {what}"
                self.found.append(Break(ev, Cause.DYNAMIC_SHAPE_OP, gb, detail))
                return

    def _dynamic_result(self, ev: Event) -> str | None:
        """The op of an event that makes a data-dependent size (under no capture flag)."""
        if isinstance(ev, CallEvent):
            return dynamic_shape_call(ev, self.dynamic_ops)
        return "boolean-mask indexing" if isinstance(ev, SubscriptEvent) and mask_index(ev) else None

    def counted_after(self, made: Event) -> cst.CSTNode | None:
        """:func:`counted_rows`'s node for ``made`` when the graph runs on from ``made`` to it: no event in
        between breaks but where a capture flag removes the break.  After a break the result enters the
        resumed frame with a known length, and a loop over it is traced (measured on torch 2.13: a
        ``print`` between ``hit = m.nonzero()`` and ``for e in hit:``, the flag on, breaks at the print only)."""
        use = self._use_of(made)
        if use is None:
            return None
        node, statement = use
        if node is made.node:  # `[e for e in m.nonzero()]`: read where it is made
            return node
        later = statement is not made.statement  # (in the op's own statement: at the use's own event)
        reached = self._unbroken(made, lambda ev: ev.node is node or (later and ev.statement is statement))
        return node if reached else None

    def _use_of(self, made: Event) -> tuple[cst.CSTNode, cst.CSTNode] | None:
        """:func:`counted_rows` of ``made`` (remembered)."""
        known = self._uses.get(id(made))
        if known is not None and known[0] is made:
            return known[1]
        fn = made.function
        names = self._names.get(id(fn.node)) if fn is not None else None
        if fn is not None and (names is None or names[0] is not fn.node):
            names = self._names[id(fn.node)] = (fn.node, counting_names(fn.node))
        use = counted_rows(made, names[1] if names is not None else None)
        self._uses[id(made)] = (made, use)
        return use

    def _unbroken(self, made: Event, until: "Callable[[Event], bool]") -> bool:
        """Whether an event ``until`` accepts follows ``made`` with no break between them that a capture
        flag does not remove (so both are in one graph)."""
        after = False
        for ev in self.events:
            if not after:
                after = ev is made
            elif until(ev):
                return True
            elif any(capture_flag(b) is None for b in self.breaks_of(ev)):
                return False
        return False

    def branched_on(self, made: Event) -> bool:
        """Whether a condition later in the same graph tests the number ``made`` extracts: with
        ``capture_scalar_outputs`` the number stays symbolic and the branch breaks instead (measured on
        torch 2.13: ``n = t.item(); if n > 0:`` breaks at the ``if``)."""
        return self._unbroken(made, lambda ev: isinstance(ev, ConditionEvent) and ev.value is not None
                              and ev.value.kind is Kind.SCALAR and ev.value.origin is made.node)

    def used_as_constant(self, made: Event) -> bool:
        """Whether the code may use the number ``made`` extracts where Python needs its value
        (:func:`needs_constant`) later in the same graph.  A break that runs whenever both do separates
        them: the number enters the resumed frame as a Python value (measured on torch 2.13:
        ``n = t.item(); print(n); seq[n]`` breaks at the ``print`` only); one in a block that may not run
        (an ``if`` around an ``assert`` on a tensor) does not, as the flag's claim must hold on every path."""
        between: list[Event] = []
        after = False
        for ev in self.events:
            if not after:
                after = ev is made
            elif needs_constant(ev, made.node):
                if not any(_runs_whenever(b, made) or _runs_whenever(b, ev) for b in between):
                    return True
            elif any(capture_flag(b) is None for b in self.breaks_of(ev)):
                between.append(ev)
        return False

    def _call_at(self, node: cst.CSTNode) -> CallEvent | None:
        """The first call event at ``node``: where a number or tensor the rules follow was made."""
        return next((e for e in self.events if isinstance(e, CallEvent) and e.node is node), None)

    def _resumed_with(self, ev: ConditionEvent) -> bool:
        """A captured number ``ev`` tests that reaches it across a break: it enters the resumed frame as a
        Python value, and the branch is traced (measured on torch 2.13: ``n = t.item(); print(n); if n > 0:``
        breaks at the ``print`` only).  So does a traced random number, and what comparing one gives
        (``s = k > 1; print(s); if s:`` breaks at the ``print`` only)."""
        origin = ev.value.origin
        made = self._made_for(ev, origin) if origin is not None else None
        return made is not None and not self._unbroken(made, lambda e: e is ev)

    def _made_for(self, ev: Event, origin: cst.CSTNode) -> CallEvent | None:
        """Where the value ``ev`` uses was made at ``origin``: in a function ``ev``'s calls, the last call of
        that function before ``ev`` (``if coin(p):`` twice, each drawing anew: the analysis records the
        helper's body once), else the first call event at ``origin``."""
        if not encloses(ev.function.node, origin):
            latest = None
            for e in self.events:
                if e is ev:
                    break
                if isinstance(e, CallEvent) and e.function is ev.function and e.callee is not None \
                        and encloses(e.callee.node, origin):
                    latest = e
            if latest is not None:
                return latest
        return self._call_at(origin)

    def captured_constant(self, ev: Event) -> None:
        """The failure where ``ev`` uses a number ``capture_scalar_outputs`` keeps symbolic as a Python value
        (:func:`constant_failure`): the number comes from an extraction the flag keeps in the graph, with no
        break between them (after one, the number enters the resumed frame as a Python value: measured on
        torch 2.13, ``n = t.item(); print(n); seq[n]`` is traced).  ``.tolist()`` counts only for an index
        read into a Python list or tuple and a tensor the analysis proves integer (:meth:`_integer_list`): a
        floating tensor's still breaks at ``.tolist()``."""
        failure = constant_failure(ev)
        if failure is None:
            return
        origin, raises = failure
        made = self._call_at(origin)
        if made is None or (made.method == "tolist" and not (raises and isinstance(ev, SubscriptEvent)
                                                             and self._integer_list(made))) \
                or not self.captures(CAPTURE_SCALAR_OUTPUTS, made) \
                or scalar_extraction(made, False) is None or scalar_extraction(made, True) is not None \
                or not self._unbroken(made, lambda e: e is ev):
            return
        code = self.index.module.code_for_node(origin).strip()
        shown = code if len(code) <= 50 else code[:47] + "..."
        error = "AsPythonConstantNotImplementedError" if isinstance(ev, CallEvent) else "GuardOnDataDependentSymNode"
        outcome = f"Dynamo fails to compile here ({error}) instead of breaking the graph" \
            if raises else "the graph breaks here"
        self.found.append(Break(ev, Cause.CAPTURED_CONSTANT, GB.DATA_DEPENDENT_OPERATOR,
                                f"the number from `{shown}`, which `capture_scalar_outputs` keeps symbolic, is used "
                                f"where Python needs its value: {outcome}"))

    def _integer_list(self, tolist: CallEvent) -> bool:
        """``tolist`` is ``.tolist()`` called right on the result of an op whose tensor is integer
        (:data:`_INTEGER_RESULT_METHODS`, :data:`_INTEGER_RESULT_FUNCTIONS`): with ``capture_scalar_outputs``
        its elements are symbolic ints (measured on torch 2.13: ``seq[torch.randperm(3).tolist()[0]]``,
        ``seq[x.argsort().tolist()[0]]``, ``.long()``, ``.int()``, ``argmax`` and a loop over them raise
        ``GuardOnDataDependentSymNode``).  A receiver of unknown dtype (a name, a parameter, a NumPy array, a
        value only taken for a tensor) is not claimed."""
        func = tolist.node.func if isinstance(tolist.node, cst.Call) else None
        receiver = func.value if isinstance(func, cst.Attribute) else None
        made = self._call_at(receiver) if isinstance(receiver, cst.Call) else None
        if made is None or "dtype" in made.kwargs:
            return False
        if made.qualname is None:
            recv = made.receiver
            return made.method in _INTEGER_RESULT_METHODS and recv is not None and recv.is_tensor \
                and not recv.assumed and recv.qualname != K.NUMPY_ARRAY
        return made.qualname in _INTEGER_RESULT_FUNCTIONS

    def for_loop(self, ev: ForLoopEvent) -> None:
        # (a call that iterates or counts is the call's event; a view of an op's result, ``for e in
        # m.nonzero().flatten():``, the loop's)
        if isinstance(ev.node, (cst.Name, cst.Call, cst.Subscript)) and not _may_count(ev.node):
            self.counted_length(ev)
        if ev.range_args and any(map(_traced_random, ev.range_args)):
            # Dynamo cannot step a `range` of a number it holds as a tensor (measured on torch 2.13:
            # "Unsupported python_type() call", and the function runs eagerly; a `range` never
            # iterated is traced)
            self.found.append(Break(ev, Cause.TRACED_RANDOM, GB.PYTHON_TYPE, "range"))
        self.captured_constant(ev)

    def arithmetic(self, ev: ArithmeticEvent) -> None:
        if any(_traced_random(v) for v in ev.operands) \
                and all(_traced_random(v) or _python_number(v) for v in ev.operands):
            self.found.append(Break(ev, Cause.TRACED_RANDOM, GB.TENSOR_BUILTIN_OPERATOR))
        self._tensor_text(ev, ev.operands)
        if any(v is not None and v.qualname == DATA_PTR for v in ev.operands) and not _short_circuited(ev):
            # Dynamo holds the pointer as an object of its own, with no arithmetic: the operator raises
            # while tracing and the function runs eagerly (measured on torch 2.13: `+`, `//`, `%`, `+=`)
            self.found.append(Break(ev, Cause.DATA_POINTER, GB.OBSERVED_EXCEPTION, "arithmetic"))

    def string_format(self, ev: StringFormatEvent) -> None:
        # (a parameter only taken for a tensor may as well be the string or number the callers pass)
        if any(v.is_tensor and not v.assumed for v in ev.values):
            self.found.append(Break(ev, Cause.PERCENT_FORMAT, GB.NON_TENSOR_OP))

    def _tensor_text(self, ev: Event, values: "tuple[Value | None, ...]") -> None:
        """A break where ``ev`` uses an f-string formatted from a tensor (measured on torch 2.13: ``len``,
        ``+``, ``==``, ``in`` and its methods break; passing it on does not)."""
        if any(v is not None and v.qualname == TENSOR_TEXT for v in values) and not _short_circuited(ev):
            self.found.append(Break(ev, Cause.TENSOR_TEXT, GB.OBSERVED_EXCEPTION,
                                    "a string formatted from a tensor is held unformatted while tracing (its "
                                    "text needs the tensor's data), and Dynamo cannot use it"))

    def _super_property(self, call: CallEvent) -> None:
        """A method of a property read through ``super()`` called, or the property passed to torch
        (:data:`~dynalint.analysis.calls.SUPER_PROPERTY`)."""
        if call.method is not None and call.receiver is not None and call.receiver.qualname == SUPER_PROPERTY:
            self.found.append(Break(call, Cause.SUPER_PROPERTY, GB.UNSUPPORTED_METHOD, _SUPER_PROPERTY_WHY))
        elif (call.qualname or "").startswith("torch.") and any(
                v.qualname == SUPER_PROPERTY for v in (*call.args, *call.kwargs.values())):
            self.found.append(Break(call, Cause.SUPER_PROPERTY, GB.PROXY_ARGUMENTS, _SUPER_PROPERTY_WHY))

    def containment(self, ev: ContainmentEvent) -> None:
        self._tensor_text(ev, (ev.container,))
        c = ev.container
        # (a string looked up, `"dim" in kwargs`: a mapping, whatever the container was taken for)
        keyed = ev.key is not None and isinstance(ev.key.const, str)
        if c is not None and c.is_tensor and not (c.assumed or c.maybe_none or keyed) \
                and not self.captures(CAPTURE_SCALAR_OUTPUTS, ev):
            self.found.append(Break(ev, Cause.TENSOR_MEMBERSHIP, GB.ITEM))

    def comparison(self, ev: ComparisonEvent) -> None:
        # two traced random numbers compared: Dynamo has no rule for the operator on them (measured on
        # torch 2.13: ``random.uniform(0, 1) < random.uniform(0, 1)``); one and a number is traced
        if sum(_traced_random(v) for v in ev.operands) > 1 \
                and all(_traced_random(v) or _python_number(v) for v in ev.operands):
            self.found.append(Break(ev, Cause.TRACED_RANDOM, GB.TENSOR_BUILTIN_OPERATOR, "comparison"))
        self._tensor_text(ev, ev.operands)
        if any(v.qualname == DATA_PTR for v in ev.operands):
            self.found.append(Break(ev, Cause.DATA_POINTER, GB.DATA_POINTER))
        compared = next((v.qualname for v in ev.operands if v.qualname in COMPARED_NUMPY_TYPES), None)
        if compared is not None and isinstance(ev.node, cst.Comparison) and any(
                isinstance(c.operator, (cst.Equal, cst.NotEqual)) for c in ev.node.comparisons):
            self.found.append(Break(ev, Cause.NUMPY_TYPE_COMPARISON, GB.RICHCOMPARE,
                                    f"Dynamo cannot compare `{compared.replace('numpy.', 'np.', 1)}` with `==` or "
                                    f"`!=` (a NumPy type)"))

    def context_manager(self, ev: ContextManagerEvent) -> None:
        if (ev.value.qualname or "") in _LOCKS:
            self.found.append(Break(ev, Cause.LOCK, GB.CONTEXT_MANAGER, "Dynamo cannot enter a lock"))
        elif (ev.value.qualname or "") in _UNENTERABLE:
            what = f"Dynamo cannot enter a `{_UNENTERABLE[ev.value.qualname or '']}` as a context manager"
            self.found.append(Break(ev, Cause.LOCK, GB.CONTEXT_MANAGER, what))
        elif _context_made_outside(ev):
            what = f"Dynamo cannot enter a `{ev.value.cls.name}` made outside the compiled code"
            self.found.append(Break(ev, Cause.LOCK, GB.CONTEXT_MANAGER, what))

    def class_statement(self, ev: ClassStatementEvent) -> None:
        self.found.append(Break(ev, Cause.CLASS_STATEMENT, GB.BUILD_CLASS))

    def decorator(self, ev: DecoratorEvent) -> None:
        if ev.qualname in _CACHING_DECORATORS:
            # (measured on torch 2.13: `@functools.cache` and `@functools.lru_cache(maxsize=None)` on a
            # function defined in compiled code, "Unsupported method call" at the decorator; at module level
            # they are applied before tracing, and calling the cached function is traced)
            self.found.append(Break(ev, Cause.CACHED_NESTED_FUNCTION, GB.UNSUPPORTED_METHOD,
                                    "Dynamo cannot build the cache wrapper (`functools._lru_cache_wrapper`) "
                                    "of a function defined in compiled code"))

    def attribute(self, ev: AttributeEvent | ObjectAttributeReadEvent) -> None:
        if sys.version_info < (3, 12) and ev.cls is not None and not getattr(ev, "write", False) \
                and not getattr(ev, "on_class", False):
            method = ev.cls.find_method(ev.name)
            if method is not None and any(d in _CACHED_PROPERTIES for d in method.decorators):
                # (measured on torch 2.13 with Python 3.11, the first read of an instance's value; Python
                # 3.12 dropped the lock)
                self.found.append(Break(ev, Cause.CACHED_PROPERTY, GB.CONTEXT_MANAGER,
                                        "the first read of a `functools.cached_property` enters the `RLock` of "
                                        "its `__get__`, which Dynamo cannot enter"))

    def comprehension_assignment(self, ev: ComprehensionAssignmentEvent) -> None:
        if sys.version_info < (3, 12):
            # (measured on torch 2.13 with Python 3.11: in a list, set or dict comprehension, whatever the
            # value; Python 3.12 inlines comprehensions into the function, and a generator expression is
            # traced)
            self.found.append(Break(ev, Cause.COMPREHENSION_ASSIGNMENT, GB.UNINITIALIZED_CELL,
                                    "the comprehension's frame assigns a cell of the enclosing function, "
                                    "which Dynamo reads before it is set"))

    def tensor_attribute(self, ev: TensorAttributeStoreEvent) -> None:
        if ev.name == "data":
            self.found.append(Break(ev, Cause.TENSOR_ATTRIBUTE, GB.MUTATE_TENSOR_DATA,
                                    "Dynamo sets `Tensor.data` only of a tensor made outside the compiled "
                                    "code"))
        else:
            self.found.append(Break(ev, Cause.TENSOR_ATTRIBUTE, GB.SETATTR_REQUIRES_GRAD,
                                    f"Dynamo does not set `Tensor.{ev.name}` while tracing"))

    def attribute_read(self, ev: TensorAttributeReadEvent) -> None:
        if ev.value.qualname == K.NUMPY_ARRAY and ev.name in BREAKING_NDARRAY_ATTRIBUTES:
            self.found.append(Break(ev, Cause.ATTRIBUTE_READ, _GB_BY_TEXT[BREAKING_NDARRAY_ATTRIBUTES[ev.name]],
                                    f"Dynamo's NumPy arrays (`torch._numpy`) have no `ndarray.{ev.name}`"))
        elif ev.name == "__dict__" and _subclass_instance(ev.value):
            self.found.append(Break(ev, Cause.ATTRIBUTE_READ, GB.SUBCLASS_ATTRIBUTE,
                                    "Dynamo cannot read the `__dict__` of a tensor subclass instance"))

    def module_attribute_read(self, ev: ModuleAttributeReadEvent) -> None:
        if not self.captures(ALLOW_RNN, ev):
            # (measured on torch 2.13: "Attempted to wrap RNN, GRU, or LSTM" at `self.gru.hidden_size`)
            read = f"to read its `{ev.name}`" if ev.name else "that the code reads here"
            self.found.append(Break(ev, Cause.ATTRIBUTE_READ, GB.RNN_MODULE,
                                    f"Dynamo cannot build an nn.LSTM/GRU/RNN module {read}"))

    def eager_comprehension(self, ev: EagerComprehensionEvent) -> None:
        why = "its body breaks the graph" if ev.why == "body" else "the function runs eagerly (it breaks " \
            "the graph inside a loop or enters a context manager Dynamo cannot)"
        self.found.append(Break(ev, Cause.EAGER_COMPREHENSION, GB.MISSING_TP_ITERNEXT,
                                f"{why}, so Dynamo compiles the comprehension as a frame of its own, "
                                "which cannot step the iterator it receives"))

    def untraceable(self, call: CallEvent) -> tuple[GraphBreakType, str] | None:
        """(graph-break type, why) if Dynamo cannot trace this call on the target torch."""
        q = call.qualname
        if call.callee is not None and call.callee.disabled:
            return GB.DISABLED_FUNCTION, f"`{call.callee.name}` is decorated to be skipped by torch.compile"
        if q is not None and q.startswith(K.OPEN_FILE + "."):
            return GB.UNSUPPORTED_METHOD, "methods of a file object are not traced"
        if K.disabled_function(q):
            return GB.DISABLED_FUNCTION, f"the function called is what `{q[:-2]}(...)` returned, which Dynamo skips"
        if q in self.reorderable:
            if reorderable_arguments(call):
                return None
            return GB.NOT_REORDERABLE, ("it is a reorderable logging function, but Dynamo only reorders calls "
                                        "whose arguments are tensors, constants or format strings")
        if call.module is not None and self._is_rnn(call.module) and not self.captures(ALLOW_RNN, call):
            return GB.RNN_MODULE, "Dynamo does not trace nn.LSTM/GRU/RNN modules"
        if call.module is not None and self._backward_hooked(call):
            return GB.MODULE_BACKWARD_HOOKS, "the submodule has a backward hook, which needs compiled autograd"
        built = call.built_tensor_class
        if built is not None and _init_needs_arguments(built):
            return GB.INLINE_BINDING, (f"Dynamo runs the `__init__` of the tensor subclass `{built.name}` with the "
                                       "new instance alone, and this one requires more arguments")
        if call.classmethod_forward is not None:
            return GB.INLINE_BINDING, (f"the `forward` of `{call.classmethod_forward.name}` is a classmethod, which "
                                       "Dynamo cannot bind when it traces the function for autograd (inputs that "
                                       "require grad)")
        if call.built_partial_typed_dict is not None:
            return GB.OPTIONAL_KEYS_TYPED_DICT, (f"Dynamo cannot build the TypedDict "
                                                 f"`{call.built_partial_typed_dict.name}`, which has optional keys")
        if call.method is not None and call.receiver is not None and call.receiver.kind is Kind.MODULE \
                and self._is_rnn(call.receiver) and not self.captures(ALLOW_RNN, call):
            return GB.RNN_MODULE, f"Dynamo does not trace nn.LSTM/GRU/RNN modules, their `{call.method}()` included"
        if call.walks_rnn and not self.captures(ALLOW_RNN, call):
            return GB.RNN_MODULE, (f"`{call.method}()` visits every submodule, and one is an "
                                   "nn.LSTM/GRU/RNN, which Dynamo does not trace")
        if q == "torch.Generator":
            return GB.OPAQUE_OBJECT, "a torch.Generator cannot be created inside the compiled region"
        if call.method is not None and call.receiver is not None and call.receiver.qualname == "random.Random()" \
                and call.method not in K.TRACED_RANDOM_METHODS | K.RANDOM_STATE_METHODS:
            return GB.UNSUPPORTED_METHOD, ("Dynamo traces only `random`, `randint`, `randrange`, `uniform` and the "
                                           "state methods of a `random.Random`")
        storage = call.receiver is not None and call.receiver.qualname == K.UNTYPED_STORAGE
        if storage and call.method is not None and call.method not in K.TRACED_STORAGE_METHODS:
            return GB.UNSUPPORTED_METHOD, ("Dynamo traces only `size()` and `resize_()` of a tensor's "
                                           f"untyped storage, not `{call.method}()`")
        if call.method is not None and call.receiver is not None and not call.receiver.maybe_none \
                and call.receiver.qualname == K.TORCH_GENERATOR:
            # every method (measured on torch 2.13: `g.manual_seed(s)`, `g.initial_seed()`, `g.get_state()` of a
            # generator argument or global)
            return GB.GENERATOR_METHOD, "the methods of a torch.Generator change or read its state outside the graph"
        generator = call.kwargs.get("generator")
        if generator is not None and (generator.qualname or "").startswith("torch.Generator") \
                and not generator.maybe_none and (
                (q or "").startswith("torch.") or (call.receiver is not None and call.receiver.is_tensor)):
            return GB.PROXY_ARGUMENTS, "Dynamo cannot pass a torch.Generator to an op in the graph"
        if call.method == "share_memory_" and call.receiver is not None and call.receiver.is_tensor \
                and call.qualname is None:
            return GB.UNHANDLED_METHOD_ARGS, "moving a tensor to shared memory is not traced"
        if q in ("builtins.max", "builtins.min") and call.kwargs and (any(
                not _assumed_tensor(a) and (a.is_tensor or a.elements().is_tensor) for a in call.args)
                or ("key" in call.kwargs and call.sort_keys is not None and _tensor_keys(call.sort_keys))):
            # (also when the key gives tensors: `min(range(n), key=lambda i: losses[i])`, measured on torch 2.13)
            return GB.BUILTIN_HANDLER_ARGUMENTS, (f"Dynamo's `{q[len('builtins.'):]}` of tensors takes no "
                                                  f"`{next(iter(call.kwargs))}=`")
        if q in ("builtins.max", "builtins.min") and "key" in call.kwargs and len(call.args) == 1 \
                and _objects(call.args[0]):
            # (measured on torch 2.13: `max(hyps, key=lambda h: h.score)` of a list of hypotheses; of numbers,
            # a range or a dict's keys it folds)
            return GB.BUILTIN_HANDLER_ARGUMENTS, (f"Dynamo's `{q[len('builtins.'):]}` with `key=` takes "
                                                  "constants only, not objects")
        if call.sort_keys is not None and q not in ("builtins.max", "builtins.min") and _tensor_keys(call.sort_keys):
            return GB.SORT_NON_CONSTANT_KEYS, "sorting tensors compares their data in Python"
        if q == "builtins.print":
            return GB.BUILTIN_OPERATOR, "print() cannot be traced"
        if q == "contextlib.ExitStack().enter_context" and call.args and _library_object(call.args[0]):
            # a context manager of torch or the standard library (measured on torch 2.13: `torch.no_grad()`,
            # `nullcontext()`, `torch.autocast(...)`); one the checked code defines (a class, a generator with
            # `@contextmanager`) is traced
            return GB.SKIPPED_FUNCTION, ("`ExitStack.enter_context` binds the context manager's exit method "
                                         "with `types.MethodType`, which Dynamo does not trace")
        if q is not None and q.startswith("logging.") and q.count(".") == 1 and q.split(".")[1] in LOGGING_FUNCTIONS:
            return GB.PYTHON_TYPE, "module-level logging functions cannot be traced"
        if call.method is not None and is_logger(call.receiver):
            # any method of a `logging.Logger`, not only those that log (`isEnabledFor`, `getEffectiveLevel`:
            # measured on torch 2.13, Dynamo's variable for a logger has no method it traces)
            return GB.LOGGER_METHOD, "logger methods cannot be traced"
        if q in SKIPPED_CALLS:
            if SKIPPED_CALLS[q].active(self.settings.target_torch) and not _wraps_graph_input(call) \
                    and not SKIPPED_CALLS[q].traced(call):
                return SKIPPED_CALLS[q].gb, SKIPPED_CALLS[q].why
        elif q in BREAKING_CALLS:
            return _GB_BY_TEXT[BREAKING_CALLS[q]], "Dynamo does not trace this " + (
                "torch function" if q.startswith("torch.") else "standard-library function")
        elif q is not None and call.callee is None and q.split(".", 1)[0] in SKIPPED_PACKAGES:
            return GB.SKIPPED_FUNCTION, f"Dynamo skips every function of the `{q.split('.', 1)[0]}` package"
        elif q in BREAKING_NUMPY_CALLS:
            gb = _GB_BY_TEXT[BREAKING_NUMPY_CALLS[q]]
            if gb is GB.NUMPY_METHOD:
                return gb, "Dynamo traces NumPy through `torch._numpy`, and cannot call a method of a ufunc"
            return gb, ("Dynamo traces NumPy through `torch._numpy`, whose version of this function returns no "
                        "array" if gb is GB.NON_TENSOR_OP else "Dynamo traces NumPy through `torch._numpy`, "
                        "which has no such function")
        if call.method == "as_subclass" and call.receiver is not None and _subclass_instance(call.receiver) \
                and _torch_dispatches(call.receiver):
            return GB.AS_SUBCLASS, "Dynamo cannot call `as_subclass` on a tensor subclass instance"
        if call.method == "as_subclass" and call.receiver is not None and call.receiver.is_tensor \
                and call.receiver.cls is None and not call.receiver.open_class and not call.receiver.assumed \
                and len(call.args) == 1 and call.args[0].qualname == "torch.Tensor":
            # (measured on torch 2.13: on a plain tensor too; `as_subclass(Subclass)` of one is traced; on an
            # instance of a subclass, see above: its own `__torch_function__` may hold the break, so a tensor
            # that may be one, untyped or narrowed by a class the analysis cannot see, is not judged)
            return GB.AS_SUBCLASS, "Dynamo cannot make a plain `torch.Tensor` with `as_subclass`"
        if call.method in BREAKING_NDARRAY_METHODS and call.qualname is None and call.receiver is not None \
                and call.receiver.is_tensor and call.receiver.qualname == K.NUMPY_ARRAY:
            return _GB_BY_TEXT[BREAKING_NDARRAY_METHODS[call.method]], \
                f"Dynamo's NumPy arrays (`torch._numpy`) have no `ndarray.{call.method}()`"
        if q is not None and q.startswith("numpy.random."):
            if "()." in q or f"{q}()" in K.NUMPY_GENERATOR_OBJECTS:
                return GB.DATA_DEPENDENT_OPERATOR, "NumPy's random generators are not traced"
            if q not in TRACED_NUMPY_RANDOM:
                return GB.NUMPY_UNSUPPORTED, ("Dynamo traces NumPy's global RNG through `torch._numpy.random`, "
                                              "which has no such function")
            if numpy_draw_is_number(q, call.node):
                return GB.DATA_DEPENDENT_OPERATOR, ("Dynamo draws the number as a tensor with torch's generator "
                                                    "and reads it from the tensor's data")
        if q in DATA_READING_NUMPY_CALLS and call.args and _array_like(call.args[0]):
            return GB.DATA_DEPENDENT_OPERATOR, ("Dynamo's NumPy (`torch._numpy`) reads the arrays' data in this "
                                                "function (`torch.equal`, `.item()`)")
        if q in _DATA_READING_COMPOSITES or (call.qualname is None and call.method in _DATA_READING_COMPOSITES_METHODS
                                              and call.receiver is not None and call.receiver.is_tensor):
            return GB.DATA_DEPENDENT_OPERATOR, "it compares tensors with `torch.equal` inside, which reads their data"
        if q == "copy.deepcopy" and call.args and _has_tensors(call.args[0]):
            return GB.DEEPCOPY_TENSOR, "deep-copying tensors is not traced"
        if q in ("dataclasses.asdict", "dataclasses.astuple") and call.result is not None \
                and any(_has_tensors(v) for v in call.result.items or ()):
            return GB.DEEPCOPY_TENSOR, f"`{q}` deep-copies the fields, and deep-copying tensors is not traced"
        if q == "dataclasses.fields" and call.args and call.args[0].is_class:
            # (measured on torch 2.13: `fields(Cfg)` and `fields(type(cfg))` break, `fields(cfg)` is traced)
            return GB.DATACLASS_FIELDS, ("Dynamo reads the fields of a dataclass instance only, not of the "
                                         "class")
        if q == "copy.copy" and call.args and call.args[0].is_tensor:
            return GB.NON_TENSOR_OP, "copy.copy of a tensor is not traced"
        wanted = call.kwargs.get("requires_grad")
        if (q or "").startswith("torch.") and wanted is not None and wanted.has_const and wanted.const is True \
                and call.result is not None and call.result.is_tensor:
            # (measured on torch 2.13: `torch.tensor`, `zeros`, `randn`, `full`, `zeros_like` with it)
            return GB.CREATION_REQUIRES_GRAD, "Dynamo does not make a tensor that requires grad in the graph"
        if q == "copy.copy" and call.args and _a_list(call):
            # (measured on torch 2.13: `copy.copy` of a list calls the unbound `list.copy`, skipped as
            # `dict.copy` is; a tuple's and a dataclass's are traced)
            return GB.SKIPPED_FUNCTION, "copy.copy of a list calls the unbound `list.copy`, which Dynamo skips"
        if q == "copy.copy" and call.args and call.args[0].is_mapping:
            # `copy` dispatches a dict to the unbound `dict.copy`, a builtin Dynamo skips (measured on torch
            # 2.13; `d.copy()` itself is traced, and so are `copy.copy` of a tuple or an object)
            return GB.SKIPPED_FUNCTION, "copy.copy of a dict calls the unbound `dict.copy`, which Dynamo skips"
        if q == "builtins.str" and call.args and call.args[0].is_tensor:
            return GB.BUILTIN_OPERATOR, "str() of a tensor needs its data"
        if q == "builtins.repr" and call.args and call.args[0].is_tensor:
            return GB.REPR_TENSOR, "repr() of a tensor needs its data"
        slot = _exception_slot_call(call)
        if slot is not None:
            return slot
        if call.callee is not None and any(d in _DISPATCHING_DECORATORS for d in call.callee.decorators):
            # (measured on torch 2.13: the dispatch iterates the argument's class's MRO, a tuple Dynamo holds
            # as a constant it cannot iterate: "missing tp_iter", whatever the argument)
            return GB.MISSING_TP_ITER, (f"`{call.callee.name}` is a `functools.singledispatch` function, "
                                        "whose dispatch on the argument's type Dynamo cannot trace")
        if q in _CONSTANT_ONLY_BUILTINS and call.args and _an_object(call.args[0]):
            what = "tensor" if call.args[0].is_tensor else "module or object"
            name = q[len("builtins."):]
            return GB.BUILTIN_OPERATOR, f"Dynamo folds `{name}()` of constants only, not of a {what}"
        if q == "torch._assert" and call.args and call.args[0].is_tensor:
            return GB.DATA_DEPENDENT_OPERATOR, "torch._assert on a tensor condition needs its data"
        if _registers_module_hook(call):
            return GB.UNSUPPORTED_SETATTR, ("registering a module hook creates a `RemovableHandle`, whose "
                                            "class-level id counter Dynamo cannot update")
        if call.method in K.BREAKING_MODULE_METHODS and call.callee is None and call.receiver is not None \
                and call.receiver.kind is Kind.MODULE:
            return _GB_BY_TEXT[K.BREAKING_MODULE_METHODS[call.method]], \
                f"Dynamo does not trace nn.Module.{call.method}()"
        training = _training_step(call)
        if training is not None:
            return training
        if q == "torch.nn.functional.one_hot" and call.args and call.args[0].is_tensor \
                and _classes_from_data(call):
            return GB.ONE_HOT_DYNAMIC, "without `num_classes`, one_hot reads the number of classes from the data"
        if _creates_parameters(call):
            return GB.PARAMETER_CONSTRUCTOR, f"building `{q}` creates parameters, which Dynamo does not support"
        if _breaking_tensor_method(call):
            gb = _GB_BY_TEXT[BREAKING_TENSOR_METHODS[call.method]]
            return gb, f"Dynamo does not trace `Tensor.{call.method}()`"
        if _tensor_method_call(call) and call.method in K.ARGUMENT_TENSOR_METHODS:
            gb = _GB_BY_TEXT[K.ARGUMENT_TENSOR_METHODS[call.method or ""]]
            return gb, f"Dynamo does not trace `Tensor.{call.method}()`"
        if call.method == "requires_grad_" and call.receiver is not None and call.receiver.is_tensor \
                and call.qualname is None and _turns_grad_on(call) and _grad_off_parameter(call):
            return GB.UNSUPPORTED_REQUIRES_GRAD, "turning on requires_grad of an input is not traced"
        if call.method == "requires_grad_" and call.receiver is not None and call.receiver.is_tensor \
                and call.qualname is None and (_turns_grad_on(call) and not _on_parameter(call)
                                               or not _turns_grad_on(call) and _a_module_parameter(call)):
            return GB.REQUIRES_GRAD, "changing requires_grad inside the graph is not supported"
        if call.method == "requires_grad_" and call.receiver is not None and call.receiver.kind is Kind.MODULE \
                and call.callee is None:
            # `nn.Module.requires_grad_` sets it on every parameter, on or off (measured on torch 2.13)
            return GB.UNSUPPORTED_REQUIRES_GRAD, "changing requires_grad of a module's parameters is not traced"
        return None

    def _backward_hooked(self, call: CallEvent) -> bool:
        """A call of a submodule ``self.<name>(...)`` on which a method of the class (or of a base in this
        module) registers a backward hook (``self.lin.register_full_backward_hook(self._record)``)."""
        func = call.node.func if isinstance(call.node, cst.Call) else None
        fn = call.function
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and fn.cls is not None
                and fn.param_names()[:1] == [func.value.value]):
            return False
        return func.attr.value in self._backward_hooked_attributes(fn.cls)

    def _backward_hooked_attributes(self, cls: "ClassInfo") -> set[str]:
        """The names ``self.<name>.register_full_backward_hook(...)`` calls in methods of ``cls`` and of its
        bases in this module register a hook on (once per class)."""
        found = self._hooked.get(id(cls))
        if found is None:
            classes = {id(c) for c in cls.mro()}
            found = self._hooked[id(cls)] = set()
            for name in K.BACKWARD_HOOK_REGISTRATIONS:
                for registration, where in self.index.call_sites.get(name, ()):
                    owner = registration.func.value if isinstance(registration.func, cst.Attribute) else None
                    if where is not None and where.cls is not None and id(where.cls) in classes \
                            and isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) \
                            and where.param_names()[:1] == [owner.value.value]:
                        found.add(owner.attr.value)
        return found

    def _is_rnn(self, module: Value) -> bool:
        """An ``nn.LSTM``/``GRU``/``RNN`` instance, or one of a class derived from them."""
        if module.qualname in K.NN_RNN_CLASSES:
            return True
        if module.cls is None:
            return False
        index = self.index
        return any((index.resolve(b) or b) in K.NN_RNN_CLASSES for c in module.cls.mro() for b in c.bases)


# --- conditions -----------------------------------------------------------------------------------

def data_dependent_test(ev: ConditionEvent, capture_scalar_outputs: bool) -> bool:
    """Whether converting this value to a Python bool needs the tensor's data (a traced random number
    is such data: measured on torch 2.13, ``if random.randint(0, 1):`` breaks)."""
    if ev.value.is_tensor or _traced_random(ev.value):
        return True
    # With capture_scalar_outputs, `.item()` stays in the graph as a symbolic
    # value, and branching on it is what breaks.
    return capture_scalar_outputs and ev.value.kind is Kind.SCALAR


#: how code names ``functools.cached_property`` as a decorator
_CACHED_PROPERTIES = frozenset({"functools.cached_property", "cached_property"})

_HANDLERS = {
    ArithmeticEvent: BreakClassifier.arithmetic,
    ConditionEvent: BreakClassifier.condition, CallEvent: BreakClassifier.call,
    SubscriptEvent: BreakClassifier.subscript, StringFormatEvent: BreakClassifier.string_format,
    ComparisonEvent: BreakClassifier.comparison, ContextManagerEvent: BreakClassifier.context_manager,
    ClassStatementEvent: BreakClassifier.class_statement,
    ComprehensionAssignmentEvent: BreakClassifier.comprehension_assignment,
    AttributeEvent: BreakClassifier.attribute, ObjectAttributeReadEvent: BreakClassifier.attribute,
    DecoratorEvent: BreakClassifier.decorator, ForLoopEvent: BreakClassifier.for_loop,
    EagerComprehensionEvent: BreakClassifier.eager_comprehension,
    TensorAttributeStoreEvent: BreakClassifier.tensor_attribute,
    TensorAttributeReadEvent: BreakClassifier.attribute_read,
    ModuleAttributeReadEvent: BreakClassifier.module_attribute_read,
    ContainmentEvent: BreakClassifier.containment,
}


def traced_assertion(ev: ConditionEvent) -> bool:
    """Whether Dynamo turns this ``assert`` test into an in-graph assertion instead of a branch.

    It does so only for the operand whose failure jumps straight to the ``raise`` (the whole test,
    or the last operand of an ``and``/``or`` chain), not negated, with no message or a constant
    string one: a computed message (an f-string, ``.format``, a name) and every earlier operand
    of the chain are plain branches (measured on torch 2.13)."""
    stmt = ev.statement
    if ev.construct != "assert" or ev.negated or not isinstance(stmt, cst.Assert):
        return False
    last: cst.BaseExpression = stmt.test
    while True:
        if isinstance(last, cst.BooleanOperation):
            last = last.right
        elif isinstance(last, cst.UnaryOperation) and isinstance(last.operator, cst.Not):
            last = last.expression
        else:
            break
    return last is ev.node and (stmt.msg is None or _constant_string(stmt.msg))


def asserted_object(ev: ConditionEvent) -> bool:
    """An ``assert`` test Dynamo turns into ``torch._assert(value, msg)`` (:func:`traced_assertion`) on a value
    that is neither a tensor nor a constant: Dynamo cannot put it in the graph and breaks ("Failed to convert
    args/kwargs to proxy"; measured on torch 2.13 for a module, an object of a plain class, a list or tuple of
    modules, of objects or of tensors; a dict or tuple of constants, a shape, a number and a string are
    constants, and ``if`` on any of them is traced)."""
    return ev.value is not None and not ev.value.maybe_none and traced_assertion(ev) and _holds_objects(ev.value)


def _holds_objects(v: Value) -> bool:
    """``v`` is, or is a list or tuple holding, a module, an object of a class of the checked code or (in a
    list or tuple) a tensor: what Dynamo holds as no constant.  A ``NamedTuple`` is a tuple: one of constants
    is a constant (measured), so it counts only where its fields are known to hold such values."""
    if v.kind is Kind.UNKNOWN and v.cls is not None and v.func is None and not v.choices:
        if not _named_tuple(v.cls):
            return True
        return any(i.is_tensor or _holds_objects(i) for i in v.items or ())
    if v.kind is Kind.MODULE:
        return True
    if v.kind is not Kind.SEQUENCE or v.is_mapping:
        return False
    items = v.items if v.items is not None else (v.element,) if v.element is not None else ()
    return any(i.is_tensor or _holds_objects(i) for i in items)


def _named_tuple(cls: "ClassInfo") -> bool:
    return any(b.rsplit(".", 1)[-1] == "NamedTuple" for c in cls.mro() for b in c.bases)


def _constant_string(node: cst.BaseExpression) -> bool:
    """A string the compiler folds into one constant: literals, implicit concatenation, ``+``."""
    if isinstance(node, cst.SimpleString):
        return True
    if isinstance(node, cst.ConcatenatedString):
        return _constant_string(node.left) and _constant_string(node.right)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _constant_string(node.left) and _constant_string(node.right)
    return False


# --- Python numbers from tensor data --------------------------------------------------------------

_EXTRACTING_METHODS = {"item": GB.ITEM, "tolist": GB.DATA_DEPENDENT_OPERATOR, "__bool__": GB.ITEM,
                       "__int__": GB.ITEM, "__float__": GB.ITEM, "__index__": GB.ITEM}
#: what reads a tensor as a Python number (``operator.index`` as ``int`` does, measured on torch 2.13)
_CONVERSIONS = ("builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "operator.index")
#: the ``operator`` functions that read a tensor as a Python bool: they break whatever the flag (measured on
#: torch 2.13: "Failed to trace builtin operator")
_OPERATOR_TESTS = frozenset({"operator.truth", "operator.not_"})
#: the conversions that read a NumPy reduction's number (see :func:`scalar_extraction`)
_ARRAY_NUMBERS = frozenset({"builtins.int", "builtins.float"})
#: the methods of :data:`_EXTRACTING_METHODS` that read a NumPy array's data whatever its dtype
_ARRAY_EXTRACTING = frozenset({"item", "tolist"})


def scalar_extraction(call: CallEvent, capture_scalar_outputs: bool) -> GraphBreakType | None:
    """The graph-break type if this call moves tensor data into Python and breaks, else None."""
    if reads_data(call) or _is_nonzero(call):  # a Python bool Dynamo cannot make symbolic: whatever the flag
        return GB.DATA_DEPENDENT_OPERATOR
    recv = call.receiver
    # (a tensor of Python numbers, `torch.div(x.shape[-1], 2)`, is a constant of the graph, but reading it into
    # Python still breaks: measured on torch 2.13, `int(h)` and `h.item()` of it break, where `x.new_zeros(h)`
    # does not)
    if call.method in _EXTRACTING_METHODS and recv is not None and recv.is_tensor \
            and call.qualname is None:
        if capture_scalar_outputs or (recv.qualname == K.NUMPY_ARRAY and call.method not in _ARRAY_EXTRACTING):
            return None
        # an array Dynamo holds is a tensor: ``a.item()``/``a.tolist()`` read its data whatever its dtype
        # (measured on torch 2.13: "Data dependent operator", "Tensor.tolist() with non-integer tensor" for a
        # float array's ``tolist``; with ``capture_scalar_outputs`` an integer array's ``tolist`` is traced)
        return GB.DATA_DEPENDENT_OPERATOR if recv.qualname == K.NUMPY_ARRAY else _EXTRACTING_METHODS[call.method]
    if call.qualname in K.TENSOR_CHECKS:
        return None if capture_scalar_outputs else GB.ITEM
    if _splits_at_tensor(call):
        # `torch.tensor_split(x, starts)` with a tensor of split points reads them as Python numbers (measured on
        # torch 2.13: "Data dependent operator", for the function and the method; traced with the flag)
        return None if capture_scalar_outputs else GB.DATA_DEPENDENT_OPERATOR
    if call.qualname in _CONVERSIONS and call.args and call.args[0].is_tensor \
            and call.args[0].qualname != K.NUMPY_ARRAY:
        return None if capture_scalar_outputs else GB.ITEM
    if call.qualname in _OPERATOR_TESTS and call.args and call.args[0].is_tensor \
            and call.args[0].qualname != K.NUMPY_ARRAY:
        return GB.BUILTIN_OPERATOR
    if call.qualname == "builtins.map" and len(call.args) == 2 and call.args[0].qualname in _CONVERSIONS \
            and call.args[1].is_tensor and call.args[1].qualname != K.NUMPY_ARRAY and not call.args[1].assumed:
        # `map(float, t)`: the conversion of each element (measured on torch 2.13: `list(map(float, t))` breaks
        # as `float(t[0])` does)
        return None if capture_scalar_outputs else GB.ITEM
    if call.qualname in _ARRAY_NUMBERS and call.args and call.args[0].qualname == K.NUMPY_ARRAY \
            and call.args[0].zero_dim:
        # the number of a NumPy reduction, which Dynamo holds as a 0-d tensor (measured on torch 2.13:
        # ``int(np.prod(x.shape))``, ``int(np.sum([a, b]))``, ``float(np.mean([1.0, 2.0]))`` break; what an
        # elementwise function of one number gives is not judged, see ``knowledge.NUMPY_ARRAY``).  With
        # ``capture_scalar_outputs`` ``int()`` is traced, and ``float()`` of an integer array still breaks
        # ("torch.* op returned non-Tensor": ``float(np.prod(x.shape[1:]))``), of a float one not: its dtype
        # is not known here, so it is not promised
        if not capture_scalar_outputs:
            return GB.DATA_DEPENDENT_OPERATOR
        return GB.NON_TENSOR_OP if call.qualname == "builtins.float" else None
    if call.qualname is not None and call.qualname.startswith("math.") and any(
        (a.is_tensor and not a.constant and a.qualname != K.NUMPY_ARRAY)
        or (capture_scalar_outputs and a.kind is Kind.SCALAR)
        for a in call.args
    ):
        # math.* calls float() on a tensor (or guards on a symbolic scalar): always a break
        return GB.DATA_DEPENDENT_OPERATOR
    return None


def _is_nonzero(call: CallEvent) -> bool:
    """``t.is_nonzero()`` / ``torch.is_nonzero(t)`` on a tensor: the truth of its one element, read from the
    data (measured on torch 2.13: "Data dependent operator", also with ``capture_scalar_outputs``)."""
    if call.qualname is None:
        recv = call.receiver
        return call.method == "is_nonzero" and recv is not None and recv.is_tensor and not recv.constant \
            and recv.qualname != K.NUMPY_ARRAY
    return call.qualname == "torch.is_nonzero" and bool(call.args) and call.args[0].is_tensor \
        and not call.args[0].constant


def reads_data(call: CallEvent) -> bool:
    """``torch.equal(a, b)``, ``a.allclose(b)``: an op torch tags ``data_dependent_output`` that
    returns a Python value, called on a tensor (measured on torch 2.13: "Data dependent operator",
    with and without the capture flags)."""
    if call.qualname is None:
        recv = call.receiver
        return call.method in K.DATA_READING_OPS and recv is not None and recv.is_tensor and not recv.constant
    name = K.aten_name(call.qualname)
    return name in K.DATA_READING_OPS and any(a.is_tensor and not a.constant for a in call.args[:2])


def causal_mask_check(call: CallEvent) -> str | None:
    """A call of a ``torch.nn`` transformer module given a mask and no causal flag for it
    (:data:`~dynalint.analysis.nn_functionals.CAUSAL_MASK_CHECKS`): what it is given, for the message.  A mask
    that may be None is not judged (the check runs only on a tensor)."""
    module = call.module
    checks = CAUSAL_MASK_CHECKS.get(module.qualname or "") if module is not None and module.cls is None else None
    for mask_name, mask_at, flag_name, flag_at in checks or ():
        mask = call.kwargs.get(mask_name, call.args[mask_at] if len(call.args) > mask_at else None)
        flag = call.kwargs.get(flag_name, call.args[flag_at] if len(call.args) > flag_at else None)
        if mask is not None and mask.is_tensor and (flag is None or (flag.has_const and flag.const is None)):
            return f"`{mask_name}=` without `{flag_name}=`"
    return None


def uncaptured_shape_call(call: CallEvent) -> str | None:
    """The op of a call whose output size is read from data and which Dynamo breaks on whatever
    ``capture_dynamic_output_shape_ops`` says: torch tags it ``dynamic_output_shape`` and its fake
    tensor has no kernel that makes an unbacked size (``torch.linalg.lstsq``, ``F.ctc_loss``, and the
    ``torch.nn`` module that calls it, ``nn.CTCLoss()``)."""
    functional = MODULE_FUNCTIONALS.get(call.module.qualname or "") \
        if call.module is not None and call.module.cls is None else None
    if functional is not None:  # a `torch.nn` module that is one call of a functional (`nn.CTCLoss()`)
        name: str | None = functional
        on_tensor = any(a.is_tensor for a in call.args[:1])
    elif call.qualname is not None:
        name = K.aten_name(call.qualname)
        # (these functions take a tensor first, nothing else: what the analysis could not type is one, as for
        # `dynamic_shape_call`)
        on_tensor = any(a.is_tensor or a.kind is Kind.UNKNOWN for a in call.args[:1])
    else:
        name = call.method
        on_tensor = call.receiver is not None and call.receiver.is_tensor
    if name is None or not on_tensor:
        return None
    for op in (name, f"_{name}"):
        if DYNAMIC_OUTPUT_SHAPE.get(op) is False:
            return (f"{call.module.qualname} (`F.{functional}`)" if functional is not None and call.module
                    else call.qualname or f".{call.method}()")
    return None


def takes_tensor_data(call: CallEvent) -> bool:
    """The call moves tensor data into a Python value (whether or not that breaks under the capture
    settings), as opposed to making a number at a skipped call (``time.time()``)."""
    return scalar_extraction(call, False) is not None


def tensor_in_python_index(sub: SubscriptEvent) -> bool:
    """A tensor as a slice bound (``x[:n]``), or as the index of a tuple/list/shape (``sizes[i]``):
    Python needs an int there, and Dynamo calls ``.item()`` to get one, even on an argument or on a
    torch function of sizes (``torch.div(h.shape[1], 4)``, which is folded only where an op takes it); also
    the index of an ``nn.ModuleList``/``nn.Sequential`` (measured on torch 2.13: ``self.heads[x.argmax() %
    3]`` breaks where the container reads the index, ``operator.index``)."""
    container = sub.base.kind is Kind.MODULE and sub.base.qualname in _INDEXED_MODULE_CONTAINERS
    if (sub.base.kind not in (Kind.TENSOR, Kind.SEQUENCE, Kind.SIZE) and not container) \
            or sub.base.maybe_none:
        return False
    # an untyped argument taken for a tensor is as likely an int (`x[:n_keep]`): not reported
    if any(b.is_tensor and not b.assumed for b in sub.bounds):
        return True
    return sub.base.kind is not Kind.TENSOR and any(ix.is_tensor and not ix.assumed for ix in sub.index)


def _index_captured(sub: SubscriptEvent) -> bool:
    """``capture_scalar_outputs`` keeps the index of :func:`tensor_in_python_index` in the graph: not the
    index of a module container (measured on torch 2.13: ``self.heads[t]`` breaks with the flag too, inside
    ``nn.ModuleList.__getitem__``)."""
    return sub.base.kind is not Kind.MODULE


def traced_random_index(sub: SubscriptEvent) -> GraphBreakType | None:
    """The break where a traced random number (:func:`~dynalint.analysis.calls.traced_random`) indexes a
    tensor, a list, a tuple or a shape, or bounds a slice of one: Dynamo holds the number as a tensor and
    needs its value (measured on torch 2.13: ``x[k]`` "Data dependent operator"; ``lst[k]`` and ``x[:k]``
    "Unsupported Tensor.item() call", after which ``x[:k]`` runs the function eagerly)."""
    base = sub.base
    container = base is not None and base.kind is Kind.MODULE and base.qualname in _INDEXED_MODULE_CONTAINERS
    if base is None or base.maybe_none or (base.kind not in (Kind.TENSOR, Kind.SEQUENCE, Kind.SIZE)
                                           and not container) \
            or (base.kind is Kind.TENSOR and (base.assumed or base.qualname == K.NUMPY_ARRAY)):
        return None
    if any(map(_traced_random, sub.bounds)):
        return GB.ITEM
    if any(map(_traced_random, sub.index)):
        return GB.DATA_DEPENDENT_OPERATOR if base.kind is Kind.TENSOR else GB.CONSTANT_FOLD if container else GB.ITEM
    return None


#: ``torch.nn`` containers indexed and sliced as lists are (measured on torch 2.13: ``self.layers[:n]`` and
#: ``self.layers[k]`` with a drawn ``n``/``k`` break, "Unsupported Tensor.item()" and "constant fold exception")
_INDEXED_MODULE_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential"})


def tensor_indexed_by_data_scalar(sub: SubscriptEvent) -> bool:
    """``boxes[scores.argmax()]``, ``probs[0, i, tok]``, ``x[b, tok] = v``: a tensor read or written at a
    0-d integer tensor computed from data in this graph, alone or among other indices; Dynamo needs the
    index as a number ("Data dependent operator", measured on torch 2.13 with ints, slices, ``...`` and
    index tensors beside it).  A 0-d tensor that entered the frame, one whose value the fake tensor keeps
    (:attr:`Value.lifted`), or a tensor of indices, is traced."""
    if not sub.base.is_tensor or sub.base.assumed:
        return False
    return any(ix.zero_dim and ix.data_dependent and not ix.is_bool and not ix.lifted for ix in sub.index)


def zero_dim_mask_index(sub: SubscriptEvent) -> bool:
    """``x[m]``, ``x[m] = v``, ``x[m] += v`` with a 0-d boolean tensor ``m`` (``m = x.sum() > 0``): Dynamo
    needs the mask's value as a Python bool, under every capture setting and for a mask that entered the
    frame too (measured on torch 2.13: ``aten._local_scalar_dense``, "Data dependent operator")."""
    if not sub.base.is_tensor or sub.base.assumed or len(sub.index) != 1:
        return False
    ix = sub.index[0]
    return ix.is_tensor and ix.is_bool and ix.zero_dim


# --- data-dependent sizes -------------------------------------------------------------------------

#: Ops with a data-dependent output size (measured to break on torch 2.13).
DYNAMIC_SHAPE_OPS = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive",
                               "bincount", "combinations"})  # (`combinations` selects with a mask inside)
_BREAKING_ON_TENSORS = DYNAMIC_SHAPE_OPS | {"item", "tolist"}
"""Methods that break the graph on any tensor receiver (under the default capture settings)."""


def mask_index(sub: SubscriptEvent) -> bool:
    """Reading a tensor (or what may be one: a NumPy array is traced as a tensor too) through a boolean
    mask; writing a value through one (``x[mask] = 0``) is an in-place fill and traced."""
    if not (sub.base.is_tensor or sub.base.kind is Kind.UNKNOWN) or (sub.store and not sub.augmented) \
            or zero_dim_mask_index(sub):
        return False
    return any(ix.kind is Kind.TENSOR and ix.is_bool and not ix.maybe_none for ix in sub.index) or (
        # a list of Python bools indexing a tensor is a mask too (measured on torch 2.13: "Dynamic shape operator")
        sub.base.is_tensor and not sub.base.assumed and any(_bool_list(ix) for ix in sub.index))


def python_bool_mask(sub: SubscriptEvent) -> bool:
    """:func:`mask_index` through a list of Python bools alone: the size it selects is not tensor data (the
    same list, the same size: nothing to recompile on), and it is no tensor a rewrite could mask with."""
    return mask_index(sub) and not any(ix.kind is Kind.TENSOR and ix.is_bool for ix in sub.index)


def _bool_list(v: Value) -> bool:
    """A list (or tuple) of Python bools, as ``[t % 2 == 0 for t in range(n)]`` makes (of a size ``n`` too)."""
    if v.kind is not Kind.SEQUENCE or v.is_mapping or v.items == ():
        return False
    element = v.elements()
    return element.kind in (Kind.PYTHON, Kind.SIZE) and element.is_bool


def _splits_at_tensor(call: CallEvent) -> bool:
    """``tensor_split`` given a tensor of split points or sections (``torch.tensor_split(x, t)``,
    ``x.tensor_split(t)``); a value only assumed to be a tensor may be a list, which is traced."""
    if call.qualname == "torch.tensor_split":
        pos = 1
    elif call.qualname is None and call.method == "tensor_split" and call.receiver is not None \
            and call.receiver.is_tensor:
        pos = 0
    else:
        return False
    given = call.args[pos] if len(call.args) > pos else next(
        (call.kwargs[k] for k in ("indices", "sections", "tensor_indices_or_sections") if k in call.kwargs), None)
    return given is not None and given.is_tensor and not given.assumed


def _repeats_tensor(call: CallEvent) -> bool:
    """``repeat_interleave`` with a tensor of repeats: ``x.repeat_interleave(r)``, ``torch.repeat_interleave(x,
    r)``, or ``torch.repeat_interleave(r)``, whose one argument is the repeats (measured on torch 2.13:
    "Dynamic shape operator" for each).  With ``output_size=`` the result's length is given, and it is traced."""
    if "output_size" in call.kwargs:
        return False
    repeats = call.kwargs.get("repeats")
    if repeats is None:
        method = call.method is not None and call.qualname is None
        pos = 0 if method or (len(call.args) == 1 and not call.kwargs) else 1
        repeats = call.args[pos] if len(call.args) > pos else None
    return repeats is not None and repeats.is_tensor


def _op_name(qualname: str) -> str:
    """``torch.ops.aten.nonzero.default`` -> ``torch.ops.aten.nonzero`` (the overload does not matter)."""
    parts = qualname.split(".")
    return ".".join(parts[:4]) if len(parts) == 5 and parts[1] == "ops" else qualname


def dynamic_shape_call(call: CallEvent, dynamic_ops: Container[str | None] = frozenset()) -> str | None:
    """Name of the data-dependent-shape op this call is, if it is one.  ``dynamic_ops`` are the
    custom ops whose fake implementation asks for a data-dependent size."""
    if call.callee is not None and call.callee.custom_op in dynamic_ops:
        return f"the custom op {call.callee.custom_op}"
    if call.qualname is not None and call.qualname.startswith("torch.ops."):
        op = _op_name(call.qualname)
        if op in dynamic_ops:
            return f"the custom op {op}"
        if op.startswith("torch.ops.aten.") and op.rsplit(".", 1)[-1] in DYNAMIC_SHAPE_OPS:
            return op
        return None
    if call.qualname is not None and call.qualname.startswith("torch."):
        name = call.qualname.rsplit(".", 1)[-1]
        if call.qualname.count(".") != 1:
            return None
        if name in DYNAMIC_SHAPE_OPS and any(a.is_tensor or a.kind is Kind.UNKNOWN for a in call.args[:1]):
            # the function takes nothing but a tensor (or, under Dynamo, a NumPy array): what the analysis
            # could not type is one wherever the call runs, as for ``torch.where(cond)``
            return f"torch.{name}"
        if name == "where" and len(call.args) == 1 and not call.kwargs:
            return "torch.where(cond)"
        if name == "repeat_interleave" and _repeats_tensor(call):
            return "torch.repeat_interleave"
        return None
    if call.qualname in DYNAMIC_SHAPE_NUMPY_CALLS and len(call.args) == 1 and _array_like(call.args[0]):
        return call.qualname.replace("numpy.", "np.", 1)
    recv = call.receiver
    if call.method is not None and recv is not None and recv.is_tensor and call.qualname is None:
        if call.method in DYNAMIC_SHAPE_OPS:
            return f".{call.method}()"
        if call.method == "repeat_interleave" and _repeats_tensor(call):
            return ".repeat_interleave()"
    return None


def _array_like(v: Value) -> bool:
    """``v`` may be what a NumPy function turns into an array of its own elements: an array, a tensor, a
    sequence, or a value the analysis does not know. Dynamo makes each a tensor, so ``np.argwhere(v)``
    traces ``nonzero`` on its data; only a Python number (which it need not look into) is left out
    (measured on torch 2.13, for arrays, tensors and lists, literal or passed in)."""
    return v.kind in (Kind.TENSOR, Kind.SEQUENCE, Kind.UNKNOWN) and not any(
        a.kind in (Kind.PYTHON, Kind.SCALAR, Kind.SIZE) for a in v.alternatives)


def counted_rows(ev: Event, candidates: frozenset[str] | None = None) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """Where the code reads, as a Python number, the length of the data-dependent result ``ev`` makes:
    the first ``for`` over it (directly, or through ``enumerate``/``zip``/``list``), comprehension over it,
    ``range(len(r))``/``range(r.shape[0])``/``range(r.size(0))``, or ``r.tolist()``, with its statement;
    None when there is none, or the analysis cannot be sure the use reads that result.

    ``capture_dynamic_output_shape_ops`` keeps the op in the graph with an unbacked length, and Dynamo
    then breaks where Python needs that length (measured on torch 2.13, for ``nonzero()``,
    ``torch.where(c)[0]``, ``unique()``, ``x[mask]``: "graph break in loop" at the ``for`` of a loop over
    the result, of one over ``enumerate``/``zip``/``list`` of it or over ``range(len(r))``, at a comprehension
    over it; ``r.tolist()`` raises ``GuardOnDataDependentSymNode``; ``r.squeeze()`` keeps a dimension of
    length 1 that eager code drops, :func:`_squeezes_all`).  ``len(r)`` or ``r.size(0)`` passed to
    an op, or arithmetic on them, stays in the graph.  So the flag moves such a break and does not remove
    it.  The result is followed only through ``name = <op>`` (or ``torch.where(c)[i]``, a ``squeeze(d)``,
    ``flatten()``, ``view(-1)``/``reshape(-1)``, ``[:, k]`` of it), in the code that runs after it up to a
    statement that may bind the name again (a ``global``/``nonlocal`` name is not followed), or in the op's
    own statement: ``for e in m.nonzero():``, ``zip(m.nonzero(), ...)``, ``m.nonzero().flatten().tolist()``
    break or raise there the same (measured on torch 2.13).

    The length is followed into numbers too (:func:`_count_bound`): ``k = len(r)`` (or ``r.shape[0]``,
    ``r.size(0) + 1``, ``len(m.nonzero())``...), ``check = k > n``; a branch that tests one of them,
    ``if check:``, ``if k > n:``, ``y = a if k > n else b``, breaks there the same ("Data-dependent
    branching", measured on torch 2.13 for ``unique``, ``nonzero``, a boolean mask, the flag on).  Not
    modelled: a test Dynamo decides from the op's bounds (a count of at most the input's ``numel()``
    compared with a larger constant) is traced without a break."""
    stmt, fn = ev.statement, ev.function
    if fn is None:
        return None
    inline = _counted_use(stmt, ev.node)
    if inline is not None:
        return inline, stmt
    name: str | None = None
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name) \
            and _keeps_rows(stmt.value, ev.node):
        name = stmt.targets[0].target.value
        if (candidates is not None and name not in candidates) or _declared_outside(fn.node, name):
            name = None
    counts = _count_bound(stmt, ev.node, frozenset(), fn.node)
    if name is None and not counts:
        return None
    for later in _code_after(fn.node, stmt)[1:]:
        for statement in _nested_statements(later):
            use = _counted_use(statement, name) if name is not None else None
            if use is None and counts:
                use = _count_tested(statement, counts)
            if use is not None:
                return use, statement
            counts = frozenset(c for c in counts if not may_bind(statement, c)) \
                | _count_bound(statement, name, counts, fn.node)
            if name is not None and may_bind(statement, name):
                name = None
            if name is None and not counts:
                return None
    return None


def _declared_outside(function: cst.CSTNode, name: str) -> bool:
    """``function`` declares ``name`` ``global`` or ``nonlocal`` (a binding the analysis does not follow)."""
    return any(isinstance(n, (cst.Global, cst.Nonlocal)) and any(item.name.value == name for item in n.names)
               for n in walk(function))


#: comparisons of numbers (``in`` and ``is`` test something else)
_NUMBER_COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal,
                       cst.NotEqual)


def _count_expression(expr: cst.CSTNode, rows: "str | cst.CSTNode | None", counts: frozenset[str]) -> bool | None:
    """Whether ``expr``, a number or a bool computed from the length of ``rows`` (:func:`_length_of`) or from
    the names in ``counts``, reads one of them: built of those reads, other names and attributes, numbers,
    arithmetic, comparisons of numbers and conditional expressions whose test reads none of them; None for
    any other expression (a call, a subscript, ``not``, ``and``/``or``: what Python does with the number
    there is not followed)."""
    if rows is not None and _length_of(expr, rows):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in counts
    if isinstance(expr, (cst.Integer, cst.Float)):
        return False
    if isinstance(expr, cst.Attribute):  # `self.num_classes`
        readable = isinstance(expr.value, (cst.Name, cst.Attribute))
        return False if readable and not _reads_count(expr.value, rows, counts) else None
    parts: list[cst.CSTNode]
    if isinstance(expr, cst.BinaryOperation):
        parts = [expr.left, expr.right]
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        parts = [expr.expression]
    elif isinstance(expr, cst.Comparison) and all(isinstance(c.operator, _NUMBER_COMPARISONS)
                                                  for c in expr.comparisons):
        parts = [expr.left, *(c.comparator for c in expr.comparisons)]
    elif isinstance(expr, cst.IfExp):  # (a test that reads them is a branch of its own: _count_tested)
        if _reads_count(expr.test, rows, counts):
            return None
        parts = [expr.body, expr.orelse]
    else:
        return None
    reads = [_count_expression(p, rows, counts) for p in parts]
    return None if None in reads else any(reads)


def _reads_count(node: cst.CSTNode, rows: "str | cst.CSTNode | None", counts: frozenset[str]) -> bool:
    """``node`` reads one of ``counts`` or the length of ``rows``, or may (a name ``rows``)."""
    return any((type(n) is cst.Name and (n.value in counts or n.value == rows))
               or (rows is not None and _length_of(n, rows)) for n in walk(node, into_scopes=False))


def _count_bound(statement: cst.CSTNode, rows: "str | cst.CSTNode | None", counts: frozenset[str],
                 function: cst.CSTNode) -> frozenset[str]:
    """The name ``statement`` binds to a number computed from the length of ``rows`` or from ``counts``
    (:func:`_count_expression`): ``k = len(rows)``, ``check = k > n``; only a name the function binds
    nowhere else (so every later read of it is that number)."""
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
        else statement
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)):
        return frozenset()
    name = small.targets[0].target.value
    if not _count_expression(small.value, rows, counts) or _declared_outside(function, name):
        return frozenset()
    bindings = sum(1 for s in walk(function, into_scopes=False)
                   if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
                   and may_bind(s, name))
    return frozenset({name}) if bindings == 1 else frozenset()


def _count_tested(statement: cst.CSTNode, counts: frozenset[str]) -> cst.CSTNode | None:
    """The test of an ``if``/``while``/conditional expression of ``statement`` (outside its blocks) that
    Python decides from one of ``counts`` (:func:`_count_bound`), or from ``not`` of one (measured on
    torch 2.13: ``if not ok:`` breaks at the ``if`` the same)."""
    for node in own_nodes(statement):
        if isinstance(node, (cst.If, cst.While, cst.IfExp)):
            test = node.test
            while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test = test.expression
            if _count_expression(test, None, counts):
                return test  # (the node of the condition's event: what `not` applies to)
    return None


def _counted_use(statement: cst.CSTNode, rows: "str | cst.CSTNode") -> cst.CSTNode | None:
    """The first node of ``statement`` (outside its blocks) that reads the length of ``rows`` in Python
    (:func:`counted_rows`): a loop header over them, a condition on their length, a ``range`` counting
    them, ``.tolist()`` of them; ``rows`` is a name, or an op's node (:func:`_is_rows`)."""
    for node in own_nodes(statement):
        if isinstance(node, (cst.For, cst.CompFor)) and _iterates(node.iter, rows):
            return node.iter
        if isinstance(node, (cst.If, cst.While, cst.IfExp, cst.Assert)) and _reads_length(node.test, rows):
            return _operand_reading(node.test, rows)
        if isinstance(node, cst.Call) and (_counts(node, rows) or _calls_method(node, rows, "tolist")
                                           or _squeezes_all(node, rows)):
            return node
    return None


def _squeezes_all(node: cst.CSTNode, rows: "str | cst.CSTNode | None") -> bool:
    """``rows.squeeze()``: it drops the data-dependent dimension when it is 1, a test of the length.  With
    ``capture_dynamic_output_shape_ops`` Dynamo takes the unbacked length for not 1 and keeps the
    dimension (measured on torch 2.13: ``m.nonzero().squeeze()`` of a mask with one ``True`` is 1-d
    compiled, 0-d eagerly), so the flag changes the result there."""
    return _calls_method(node, rows, "squeeze") and not node.args


def counting_names(function: cst.FunctionDef) -> frozenset[str]:
    """The names :func:`counted_rows` may find a use of in ``function`` (those in a loop header or a
    condition, and those ``.tolist()`` is called on): a cheap filter, computed once per function."""
    out: set[str] = set()
    for node in walk(function.body, into_scopes=False):
        if isinstance(node, (cst.For, cst.CompFor)):
            out.update(n.value for n in walk(node.iter) if isinstance(n, cst.Name))
        elif isinstance(node, (cst.If, cst.While, cst.IfExp, cst.Assert)):
            out.update(n.value for n in walk(node.test) if isinstance(n, cst.Name))
        elif _calls_method(node, "", "tolist") or _squeezes_all(node, ""):
            out.add(node.func.value.value)
        elif _calls_builtin(node, "range"):
            out.update(n.value for n in walk(node) if isinstance(n, cst.Name))
        elif _length_of(node, ""):  # `k = len(hit)`: a number a condition may test (_count_bound)
            out.update(n.value for n in walk(node) if isinstance(n, cst.Name))
    return frozenset(out)


def _nested_statements(statement: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``statement`` and the statements of its blocks, in source order (not those of a nested scope)."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return
    yield statement
    for node in own_nodes(statement):
        if isinstance(node, cst.BaseSuite) and node is not statement:
            for inner in simple_statements(node):
                yield from _nested_statements(inner)


def _keeps_rows(value: cst.BaseExpression, op: cst.CSTNode) -> bool:
    """``value`` is ``op``'s result, or a view of it whose first dimension is the op's data-dependent one."""
    while value is not op:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            method, args = value.func.attr.value, [a.value for a in value.args]
            minus_one = len(args) == 1 and isinstance(args[0], cst.UnaryOperation) \
                and isinstance(args[0].expression, cst.Integer) and args[0].expression.value == "1"
            if not ((method == "squeeze" and len(args) == 1 and not minus_one and isinstance(args[0], cst.Integer)
                     and args[0].value != "0")
                    or (method == "squeeze" and minus_one)
                    or (method == "flatten" and not args) or (method in ("view", "reshape") and minus_one)):
                return False
            value = value.func.value
        elif isinstance(value, cst.Subscript) and len(value.slice) in (1, 2):
            first = value.slice[0].slice
            if len(value.slice) == 1:  # `torch.where(c)[0]`: an element of the op's tuple
                if not (isinstance(first, cst.Index) and isinstance(first.value, cst.Integer)
                        and isinstance(value.value, cst.Call) and value.value is op):
                    return False
            elif not (isinstance(first, cst.Slice) and first.lower is None and first.upper is None
                      and first.step is None and isinstance(value.slice[1].slice, cst.Index)
                      and isinstance(value.slice[1].slice.value, cst.Integer)):
                return False
            value = value.value
        else:
            return False
    return True


# (type tests: libcst's node classes are not subclassed, and a failing isinstance on one costs a call)
def _is_name(node: cst.CSTNode, name: str) -> bool:
    return type(node) is cst.Name and node.value == name


def _is_rows(node: cst.CSTNode, rows: "str | cst.CSTNode | None") -> bool:
    """``node`` is the name ``rows`` (any name: ``rows`` empty; any expression: None), or, ``rows`` an op's
    node, that op's result or a view keeping its rows (:func:`_keeps_rows`)."""
    if rows is None:
        return True
    if isinstance(rows, str):
        return type(node) is cst.Name and node.value == (rows or node.value)
    return _keeps_rows(node, rows)


def _calls_builtin(node: cst.CSTNode, builtin: str) -> bool:
    return type(node) is cst.Call and _is_name(node.func, builtin)


def _calls_method(node: cst.CSTNode, name: "str | cst.CSTNode | None", method: str) -> bool:
    """``name.method(...)``; ``name`` empty: on any name (:func:`_is_rows`)."""
    return type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == method \
        and _is_rows(node.func.value, name)


def _may_count(node: cst.CSTNode) -> bool:
    """A call :func:`counted_rows` may return: a builtin that iterates or counts, ``.tolist()``."""
    return _calls_method(node, None, "tolist") or (
        type(node) is cst.Call and type(node.func) is cst.Name
        and node.func.value in ("enumerate", "zip", "list", "range"))


def _iterates(it: cst.BaseExpression, name: "str | cst.CSTNode | None") -> bool:
    """A ``for`` over ``name``'s rows: ``name``, ``enumerate(name)``, ``zip(..., name, ...)``,
    ``list(name)``, or a ``range`` counting them (:func:`_is_rows`)."""
    if _is_rows(it, name):
        return True
    if isinstance(it, cst.Call) and any(_calls_builtin(it, b) for b in ("enumerate", "list")):
        return bool(it.args) and _is_rows(it.args[0].value, name)
    if _calls_builtin(it, "zip"):
        return any(_is_rows(a.value, name) for a in it.args)
    return _counts(it, name)


def _counts(call: cst.CSTNode, name: "str | cst.CSTNode | None") -> bool:
    """``range(len(name))``, ``range(name.shape[0])``, ``range(name.size(0))``."""
    return _calls_builtin(call, "range") and len(call.args) == 1 and _length_of(call.args[0].value, name)


def _length_of(n: cst.CSTNode, name: "str | cst.CSTNode | None") -> bool:
    """``len(name)``, ``name.size(0)``, ``name.shape[0]``, ``name.numel()`` (``name`` empty: of any name;
    :func:`_is_rows`)."""
    if _calls_builtin(n, "len"):
        return len(n.args) == 1 and _is_rows(n.args[0].value, name)
    if _calls_method(n, name, "numel"):
        return not n.args
    if _calls_method(n, name, "size"):
        return len(n.args) == 1 and isinstance(n.args[0].value, cst.Integer) and n.args[0].value.value == "0"
    return isinstance(n, cst.Subscript) and len(n.slice) == 1 and isinstance(n.value, cst.Attribute) \
        and n.value.attr.value == "shape" and _is_rows(n.value.value, name) \
        and isinstance(n.slice[0].slice, cst.Index) and isinstance(n.slice[0].slice.value, cst.Integer) \
        and n.slice[0].slice.value.value == "0"


def _operand_reading(test: cst.BaseExpression, rows: "str | cst.CSTNode") -> cst.BaseExpression:
    """The operand of a test joined with ``and``/``or`` that reads the length of ``rows`` (the first one
    Python evaluates), where Dynamo breaks: ``keep.numel() == 0`` in ``if x.dim() == 1 or keep.numel() ==
    0:`` (measured on torch 2.13); the test itself when it is no such join."""
    while isinstance(test, cst.BooleanOperation):
        test = test.left if _reads_length(test.left, rows) else test.right
    return test


def _reads_length(test: cst.CSTNode, name: "str | cst.CSTNode | None") -> bool:
    """A condition that reads ``name``'s length (:func:`_length_of`), or is ``name`` itself or its length
    (``if len(hit):``: Python needs the number as a bool)."""
    return any(_length_of(n, name) for n in walk(test, into_scopes=False))


# --- calls Dynamo does not trace ------------------------------------------------------------------

@dataclass(frozen=True)
class SkippedCall:
    """A function Dynamo refuses to trace into, for torch versions in [since, until)."""

    qualname: str
    gb: GraphBreakType
    since: Version = (2, 0)
    until: Version | None = None
    why: str = "Dynamo does not trace it"
    traced_with: tuple[str, str] | None = None
    """A keyword and the torch constant given to it that make the call traced (``layout=torch.jagged``)."""
    on_tensors: bool = False
    """It breaks only on tensor arguments: given values the analysis knows for sizes or Python numbers
    (``assert_close(pred.shape, ref.shape)``), it compares them in Python, which Dynamo traces."""

    def active(self, target: Version) -> bool:
        return self.since <= target and (self.until is None or target < self.until)

    def traced(self, call: CallEvent) -> bool:
        """The call passes what makes it traced."""
        if self.on_tensors and call.args and all(_not_tensor_data(v) for v in call.args[:2]):
            return True
        if self.traced_with is None:
            return False
        keyword, constant = self.traced_with
        given = call.kwargs.get(keyword)
        return given is not None and given.qualname == constant


def _not_tensor_data(v: Value) -> bool:
    """A size, a Python number or string, or a sequence of those: no tensor data to compare."""
    if v.kind is Kind.SEQUENCE:
        return v.element is not None and _not_tensor_data(v.element) if v.items is None \
            else all(_not_tensor_data(i) for i in v.items)
    return v.kind in (Kind.SIZE, Kind.PYTHON) and not v.maybe_none


#: torch functions that read tensor data inside, whatever their arguments (measured on torch 2.13: ``torch.cov`` and
#: ``torch.corrcoef`` call ``torch.equal``, "Data dependent operator"), and their tensor methods
_DATA_READING_COMPOSITES = frozenset({"torch.cov", "torch.corrcoef"})
_DATA_READING_COMPOSITES_METHODS = frozenset(q.rpartition(".")[2] for q in _DATA_READING_COMPOSITES)

#: the constructors of ``nn.Parameter``
_PARAMETER_CONSTRUCTORS = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")

#: Measured on torch 2.13 (see the rule examples, which the test suite runs through Dynamo). The
#: standard-library functions are generated into :mod:`dynalint.analysis.skipped_calls`; listed here
#: are those it cannot hold (a version range, a private name, torch's own functions, file objects).
SKIPPED_CALLS: dict[str, SkippedCall] = {c.qualname: c for c in (
    SkippedCall("random.random", GB.SKIPPED_FUNCTION, until=(2, 14), why="Python's RNG is skipped"),
    SkippedCall("torch.manual_seed", GB.SKIPPED_FUNCTION, why="reseeding the global generator is skipped"),
    SkippedCall("sys._getframe", GB.SKIPPED_FUNCTION, why="frame introspection is skipped"),
    SkippedCall("torch._dynamo.graph_break", GB.EXPLICIT_BREAK, why="it is an explicit graph break"),
    *(SkippedCall(q, GB.SKIPPED_FUNCTION, why="wrapping a function to be skipped is itself skipped inside "
                                              "compiled code")
      for q in sorted(K.DISABLE_FUNCS)),
    SkippedCall("torch.nn.utils.rnn.pack_padded_sequence", GB.SKIPPED_FUNCTION,
                why="packing sequences is skipped (its lengths are read in Python)"),
    SkippedCall("torch.nn.utils.rnn.pack_sequence", GB.SKIPPED_FUNCTION,
                why="packing sequences is skipped (its lengths are read in Python)"),
    SkippedCall("torch.nn.utils.rnn.pad_packed_sequence", GB.SKIPPED_FUNCTION,
                why="unpacking packed sequences is skipped"),
    SkippedCall("builtins.open", GB.BUILTIN_OPERATOR, why="opening a file is not traced"),
    SkippedCall("builtins.object", GB.BUILTIN_OPERATOR, why="a bare `object()` (a sentinel) cannot be created in "
                                                            "the graph"),
    # (measured on torch 2.13: two `torch.Size`s are compared without a break)
    *(SkippedCall(q, GB.DATA_DEPENDENT_BRANCHING, why="it compares the tensors' values in Python",
                  on_tensors=True)
      for q in ("torch.testing.assert_close", "torch.testing.assert_allclose")),
    *(SkippedCall(q, GB.SKIPPED_FUNCTION, why="importing a module is skipped")
      for q in ("builtins.__import__", "importlib.import_module")),
    SkippedCall("builtins.exec", GB.BUILTIN_OPERATOR, why="executing source text is not traced"),
    SkippedCall("builtins.globals", GB.BUILTIN_OPERATOR, why="reading the module's globals as a dict is not traced"),
    *(SkippedCall(q, GB.UNSUPPORTED_METHOD, why="the json module's C encoder and decoder are not traced")
      for q in ("json.dumps", "json.loads", "json.dump", "json.load")),
    # (the jagged layout has one: measured on torch 2.13, `layout=torch.jagged` is traced, `torch.strided` breaks)
    *(SkippedCall(q, GB.FAKE_TENSOR_UNSUPPORTED, why="building a strided nested tensor from a list has no "
                                                    "fake-tensor kernel", traced_with=("layout", "torch.jagged"))
      for q in ("torch.nested.nested_tensor", "torch.nested.as_nested_tensor")),
    SkippedCall("sys.stdout.write", GB.UNSUPPORTED_METHOD, why="writing to a file object is not traced"),
    SkippedCall("sys.stderr.write", GB.UNSUPPORTED_METHOD, why="writing to a file object is not traced"),
    *(SkippedCall(q, GB.SKIPPED_FUNCTION,
                  why="changing the warning filters calls `_warnings._filters_mutated`, which Dynamo skips")
      for q in ("warnings.simplefilter", "warnings.filterwarnings")),
    *(SkippedCall(q, GB.SKIPPED_FUNCTION, why="the legacy `Variable` wrapper is built by a function Dynamo skips")
      for q in ("torch.autograd.Variable", "torch.autograd.variable.Variable")),
    *(SkippedCall(f"torch.autograd.functional.{name}", GB.PROXY_ARGUMENTS,
                  why="torch.autograd.functional runs autograd on the function it is given outside the graph "
                      "(`torch.func` transforms are traced)")
      for name in ("jacobian", "hessian", "vjp", "jvp", "hvp", "vhp")),
    SkippedCall("torch.quasirandom.SobolEngine", GB.SKIPPED_INLINE,
                why="Dynamo does not inline `SobolEngine.__init__` (its file is skipped)"),
    SkippedCall("torch.autograd.grad", GB.AUTOGRAD_GRAD, since=(2, 13),
                why="torch.autograd.grad is not traced under the default `trace_autograd_ops=False`"),
    *(SkippedCall(q, GB.PARAMETER_CONSTRUCTOR, since=(2, 13),
                  why="a Parameter cannot be created inside the compiled region")
      for q in _PARAMETER_CONSTRUCTORS),
)}


#: functions of ``math`` that take an iterable: given a generator, Dynamo breaks whatever it yields (measured on
#: torch 2.13: ``math.prod(s for s in x.shape)``; a list is traced)
_ITERABLE_MATH = frozenset({"math.prod", "math.fsum"})


def _generator_handed(call: CallEvent) -> tuple[GraphBreakType, str] | None:
    """A generator expression handed to ``math.prod``/``math.fsum``, or to ``max``/``min`` with ``default=``
    (:attr:`Cause.GENERATOR_ARGUMENT`): the graph-break type and why."""
    node, q = call.node, call.qualname
    if not (isinstance(node, cst.Call) and node.args and type(node.args[0].value) is cst.GeneratorExp):
        return None
    if q in _ITERABLE_MATH:
        return GB.PROXY_ARGUMENTS, f"Dynamo cannot pass a generator to `{q}`"
    if q in ("builtins.max", "builtins.min") and "default" in call.kwargs:
        return GB.BUILTIN_HANDLER_ARGUMENTS, f"Dynamo's `{q[len('builtins.'):]}` of a generator takes no `default=`"
    return None

#: the graph-break types by Dynamo's text, as the generated tables name them
_GB_BY_TEXT: dict[str, GraphBreakType] = {gb.text: gb for gb in GB.ALL}


def _wraps_graph_input(call: CallEvent) -> bool:
    """``nn.Parameter(x)`` of a tensor that entered the frame as it is (an argument, a global): Dynamo makes
    the parameter without a break, as it does not for a tensor the graph computed (measured on torch 2.13:
    ``nn.Parameter(x)`` and ``nn.Parameter(W)`` are traced, ``nn.Parameter(x * 2)``, ``nn.Parameter(x.detach())``
    and ``nn.Parameter(torch.zeros(4))`` break)."""
    if call.qualname not in _PARAMETER_CONSTRUCTORS or not isinstance(call.node, cst.Call) or not call.node.args:
        return False
    data, expr, fn = call.args[0] if call.args else None, call.node.args[0].value, call.function
    if type(expr) is not cst.Name or fn is None:
        return False
    if expr.value not in fn.local_names:
        return True  # a global tensor: an input of the graph
    return expr.value in fn.param_names() and data is not None and data.is_tensor and data.entered


def _has_tensors(v: Value) -> bool:
    return v.is_tensor or v.kind is Kind.MODULE or (v.kind is Kind.SEQUENCE and v.elements().is_tensor)


#: what each optimizer method does under Dynamo (measured on torch 2.13)
_OPTIMIZER_METHODS: dict[str, tuple[GraphBreakType, str]] = {
    "step": (GB.EXPLICIT_BREAK, "torch.optim's step() calls torch._dynamo.graph_break()"),
    "zero_grad": (GB.SKIPPED_INLINE, "torch.optim's zero_grad() is marked as skipped"),
}


def _training_step(call: CallEvent) -> tuple[GraphBreakType, str] | None:
    """``loss.backward()`` on a tensor, ``optimizer.step()``/``zero_grad()`` on a torch.optim optimizer, any method
    of a learning-rate scheduler or a gradient scaler (:data:`~dynalint.analysis.knowledge.SKIPPED_TORCH_CLASSES`)."""
    recv = call.receiver
    if recv is None:
        return None
    if call.method == "backward" and recv.is_tensor and call.qualname is None:
        return GB.BACKWARD, "Dynamo does not trace Tensor.backward()"
    if call.method in _OPTIMIZER_METHODS and (
            is_optimizer(recv) or _inherited_optimizer_method(recv, call.method)):
        return _OPTIMIZER_METHODS[call.method]
    if call.method is not None and K.skipped_torch_instance(recv.qualname):
        return GB.SKIPPED_INLINE, f"Dynamo does not inline `{recv.qualname[:-2].rsplit('.', 1)[-1]}` (its file is skipped)"
    return None


def _inherited_optimizer_method(recv: Value, method: str) -> bool:
    """``self.zero_grad()`` in a subclass of a torch.optim optimizer that does not define it: the base's."""
    return recv.cls is not None and recv.kind is not Kind.FUNCTION and recv.cls.find_method(method) is None \
        and torch_optimizer_base(recv.cls) is not None


def _context_made_outside(ev: ContextManagerEvent) -> bool:
    """``with self.ctx:``, ``with ctx:`` of a parameter or a global: an instance of a class of the checked
    code that defines ``__enter__``, made before the compiled code runs. Dynamo enters only context
    managers the compiled code builds (measured on torch 2.13: ``t = Tracker(); with t:`` is traced;
    ``with t:`` of an argument, a global or a module attribute set in ``__init__`` breaks, "Unsupported
    context manager", and the function runs eagerly)."""
    v, node, fn = ev.value, ev.node, ev.function
    if v is None or v.cls is None or v.kind is Kind.FUNCTION or v.cls.find_method("__enter__") is None:
        return False
    while isinstance(node, cst.Attribute):  # `self.ctx`, `cfg.ctx` of an argument or a global
        node = node.value
    if not isinstance(node, cst.Name) or fn is None or may_bind(fn.node.body, node.value):
        return False
    # an argument, or a global (not a name of an enclosing function, which may have built it in the
    # compiled code), or an object the function that defines and compiles this one built before calling it
    return node.value in fn.param_names() or (
        fn.outer is None and fn.owner is not None and node.value in fn.owner.globals) or (
        fn.compile_decorated and fn.closure is not None and node.value in fn.closure)


def _classes_from_data(call: CallEvent) -> bool:
    """``F.one_hot(t)`` or ``F.one_hot(t, -1)``: the number of classes is ``t.max() + 1``, a size read from
    the data, which Dynamo breaks on whatever the capture flags (measured on torch 2.13)."""
    n = call.kwargs.get("num_classes", call.args[1] if len(call.args) > 1 else None)
    return n is None or n.const == -1


def _creates_parameters(call: CallEvent) -> bool:
    """``nn.Linear(4, 4)`` in compiled code: a ``torch.nn`` module whose construction creates
    parameters (:data:`~dynalint.analysis.skipped_calls.PARAMETER_MODULES`), called with no argument
    that may turn them off (``LayerNorm(n, elementwise_affine=False)``, or one spread with ``*``/``**``)."""
    switches = PARAMETER_MODULES.get(call.qualname or "")
    if switches is None or not isinstance(call.node, cst.Call) or any(a.star for a in call.node.args):
        return False
    return not (switches.keys() & call.kwargs.keys()) and all(len(call.args) <= i for i in switches.values())


def _subclass_instance(v: Value) -> bool:
    """``v`` is an instance of a ``torch.Tensor`` subclass of the checked code (a tensor with its class).
    Dynamo holds one as a tensor but cannot read its ``__dict__``, call ``as_subclass`` on it, or resume
    after a call of one of its methods whose body breaks ("Reconstruction failure"); measured on torch 2.13
    with and without a ``__torch_function__`` of its own."""
    return v.kind is Kind.TENSOR and v.cls is not None


def _torch_dispatches(v: Value) -> bool:
    """The torch function calls on instances of ``v``'s class go through torch's own ``Tensor.__torch_function__``
    (the class defines none, or its own hands each call to ``super().__torch_function__``): where Dynamo
    breaks inside it, its log puts the break at the call. A ``__torch_function__`` of the checked code that
    calls the function itself holds the break (measured on torch 2.13)."""
    assert v.cls is not None
    own = v.cls.find_method("__torch_function__")
    return own is None or any(
        type(n) is cst.Attribute and n.attr.value == "__torch_function__" and type(n.value) is cst.Call
        and type(n.value.func) is cst.Name and n.value.func.value == "super" for n in walk(own.node))


def _init_needs_arguments(cls: "ClassInfo") -> bool:
    """Building an instance of ``cls``, a ``torch.Tensor`` subclass of the checked files, in compiled code:
    Dynamo inlines the class's ``__init__`` with the new instance as its only argument, so an ``__init__`` that
    requires another one cannot bind (measured on torch 2.13: ``Meta(x)`` breaks, "failed to bind arguments
    when attempting to inline", with ``def __init__(self, x)`` of the class or of a base, with or without a
    ``__new__`` of its own; not with ``*args``, defaults, or no ``__init__`` but torch's). False where a base
    outside the checked files (other than ``torch.Tensor`` itself) may define the ``__init__`` that runs."""
    for c in cls.mro():
        init = c.methods.get("__init__")
        if init is not None:
            p = init.node.params
            positional = [*p.posonly_params, *p.params][1:]
            return any(a.default is None for a in positional) or any(a.default is None for a in p.kwonly_params)
        owner = c.owner
        outside = [b for b in c.bases if owner is None or (owner.resolve(b) or b) not in ("torch.Tensor", "object")]
        if len(outside) > len(c.base_classes):
            return False
    return False


def _breaking_tensor_method(call: CallEvent) -> bool:
    """``t.storage_offset()``, ``t.is_signed()``...: a method of a tensor, called with no argument as
    :mod:`dynalint.analysis.skipped_calls` probed it, that Dynamo breaks on. Those that move data into
    Python (``tolist``) are judged with the capture flags elsewhere."""
    return call.method in BREAKING_TENSOR_METHODS and call.method not in K.SCALAR_METHODS \
        and _tensor_method_call(call) and not call.args and not call.kwargs


def _tensor_method_call(call: CallEvent) -> bool:
    """``t.method(...)`` on a value known to be a torch tensor (not a NumPy array Dynamo traces as one, nor
    a function of the checked code)."""
    recv = call.receiver
    return call.qualname is None and call.callee is None and recv is not None and recv.is_tensor \
        and recv.qualname != K.NUMPY_ARRAY


def is_optimizer(v: Value) -> bool:
    """An optimizer built by ``torch.optim.X(...)`` or annotated as one."""
    q = v.qualname or ""
    return v.kind is Kind.UNKNOWN and q.startswith("torch.optim.") and q.endswith("()") \
        and not q.startswith("torch.optim.lr_scheduler.")


def _registers_module_hook(call: CallEvent) -> bool:
    """``module.register_forward_hook(...)`` and the other hook registrations of ``nn.Module`` (or
    the global ``torch.nn.modules.module.register_module_*_hook``), unless the class overrides them."""
    q = call.qualname or ""
    if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in K.GLOBAL_MODULE_HOOK_FUNCS:
        return True
    return call.method in K.MODULE_HOOK_METHODS and call.callee is None and call.receiver is not None \
        and call.receiver.kind is Kind.MODULE


def _turns_grad_on(call: CallEvent) -> bool:
    """``requires_grad_()``/``requires_grad_(True)``: turning it off breaks only where it changes the flag, on a
    tensor that requires grad (:func:`_a_module_parameter`; measured on 2.13)."""
    args = call.node.args if isinstance(call.node, cst.Call) else ()
    return not any(isinstance(a.value, cst.Name) and a.value.value == "False" for a in args)


#: module methods that iterate its parameters (``named_...`` as ``(name, parameter)`` pairs)
_PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters"})


def _a_module_parameter(call: CallEvent) -> bool:
    """The receiver is a module's parameter, which requires grad (turning it off then changes it, and breaks:
    measured on torch 2.13, as turning it on breaks): the loop variable of ``for p in m.parameters():`` (or
    of ``for name, p in m.named_parameters():``) around the call, or ``.weight``/``.bias`` of a torch.nn
    module."""
    func = call.node.func if isinstance(call.node, cst.Call) else None
    receiver = func.value if isinstance(func, cst.Attribute) else None
    if isinstance(receiver, cst.Attribute):
        return receiver.attr.value in ("weight", "bias") and call.receiver is not None \
            and call.receiver.from_weights and call.receiver.entered
    if not isinstance(receiver, cst.Name):
        return False
    for loop in walk(call.function.node.body, into_scopes=False):
        iterated = loop.iter.func if type(loop) is cst.For and type(loop.iter) is cst.Call else None
        if type(iterated) is not cst.Attribute or iterated.attr.value not in _PARAMETER_ITERATORS:
            continue
        named = iterated.attr.value.startswith("named_")
        target = loop.target.elements[1].value if named and isinstance(loop.target, cst.Tuple) \
            and len(loop.target.elements) == 2 else None if named else loop.target
        if isinstance(target, cst.Name) and target.value == receiver.value \
                and any(n is call.node for n in walk(loop.body, into_scopes=False)):
            return True
    return False


def _on_parameter(call: CallEvent) -> bool:
    """The receiver is a parameter of the function, never rebound.  Turning grad on breaks unless the
    tensor already requires grad (measured on 2.13, also as the function's first statement): for a
    parameter (an input, a hook's ``output``) that depends on the caller, so the rule stays silent unless
    :func:`_grad_off_parameter` holds."""
    receiver = _receiver_name(call)
    params = call.function.param_names()
    if receiver is None:
        return False
    if receiver not in params:
        # an element of a parameter, the variable of a loop over it (`for p in params: p.requires_grad_()`),
        # is the caller's as much
        loops = [n for n in walk(call.function.node.body, into_scopes=False) if type(n) is cst.For]
        if not any(type(n.target) is cst.Name and n.target.value == receiver
                   and _iterated_root(n.iter) in params and encloses(n.body, call.node) for n in loops) \
                or sum(receiver in assigned_names(n.target) for n in loops) != 1:
            return False
    return not any(isinstance(n, cst.Name) and n.value == receiver
                   for t in walk(call.function.node.body) if isinstance(t, (cst.AssignTarget, cst.AugAssign))
                   for n in walk(t.target))


def _iterated_root(it: cst.BaseExpression) -> str | None:
    """The name what a loop iterates starts from (``params`` of ``params[1:]``, ``model`` of
    ``model.parameters()``)."""
    return root_name(it.func if type(it) is cst.Call else it)


def _grad_off_parameter(call: CallEvent) -> bool:
    """The receiver is a parameter (:func:`_on_parameter`) and the call is in the body of ``if not
    x.requires_grad:``, which proves the flag off: turning it on then always breaks ("Unsupported
    Tensor.requires_grad_() call", measured on torch 2.13)."""
    receiver = _receiver_name(call)
    return _on_parameter(call) and any(
        type(n) is cst.If and _tests_grad_off(n.test, receiver or "") and encloses(n.body, call.node)
        for n in walk(call.function.node.body))


def _receiver_name(call: CallEvent) -> str | None:
    """The name ``x`` of a call ``x.method(...)``."""
    func = call.node.func if isinstance(call.node, cst.Call) else None
    receiver = func.value if isinstance(func, cst.Attribute) else None
    return receiver.value if isinstance(receiver, cst.Name) else None


def _tests_grad_off(test: cst.BaseExpression, name: str) -> bool:
    """``test`` is ``not name.requires_grad``."""
    return type(test) is cst.UnaryOperation and type(test.operator) is cst.Not \
        and dotted_name(test.expression) == f"{name}.requires_grad"
