"""Facts the dataflow analysis reports about analysed (compiled) code.

The analysis walks each compiled function once and emits one event per
construct a rule may care about, with the abstract values involved, in
evaluation order.  :mod:`dynalint.analysis.breaks` decides which events are
graph breaks.  Rules only read events and breaks; they never walk the tree
themselves.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.values import Value, direct_init

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo


@dataclass(frozen=True, eq=False)
class Event:
    node: cst.CSTNode
    """The expression or statement the event is about (what a diagnostic points at)."""
    statement: cst.CSTNode
    """The enclosing statement (a small statement, or a compound statement's node)."""
    function: "FunctionInfo"
    in_loop: bool
    """Inside a ``for``/``while`` of the function (Dynamo then skips the whole frame on a break); not
    the test of a ``while`` that no other loop encloses, where Dynamo resumes at the loop header."""


@dataclass(frozen=True, eq=False)
class ConditionEvent(Event):
    """A value is converted to a Python bool: ``if``/``while``/``assert``/ternary/``and``/``or``/``not``."""

    value: Value = field(default=None)  # type: ignore[assignment]
    construct: str = "if"
    """``if``, ``elif``, ``while``, ``ifexp``, ``assert``, ``boolop``, ``not``, ``comprehension``, ``filter``
    (what the function ``filter`` calls returns for an element), ``itertools`` (what ``takewhile``'s predicate
    returns, a selector of ``compress``)."""
    exits_loop: bool = False
    """The guarded block leaves the enclosing loop (``break``/``return``)."""
    negated: bool = False
    """The test was written ``not <value>``."""


@dataclass(frozen=True, eq=False)
class CallEvent(Event):
    qualname: str | None = None
    """``torch.nonzero``, ``builtins.print``, ``logging.getLogger().info``; None if unknown."""
    method: str | None = None
    """For ``receiver.method(...)`` calls: the method name."""
    receiver: Value | None = None
    args: tuple[Value, ...] = ()
    kwargs: dict[str, Value] = field(default_factory=dict)
    result: Value | None = None
    callee: "FunctionInfo | None" = None
    """A function of the analysed file, when the call resolves to one."""
    module: Value | None = None
    """The module, when the call runs an ``nn.Module`` (``self.rnn(x)``)."""
    callee_broke: bool = False
    """The function the call runs (each of them, when it may be one of several) breaks the graph in its
    body or in what it calls."""
    built_tensor_class: "ClassInfo | None" = None
    """The ``torch.Tensor`` subclass of the checked files the call builds an instance of (``Meta(x)``)."""
    built_module: "ClassInfo | None" = None
    """The ``nn.Module`` subclass of the checked files the call builds an instance of (``Block(dim)``)."""
    sort_keys: Value | None = None
    """For ``sorted(xs, ...)`` and ``xs.sort(...)``: what the sort compares, the sequence itself, or a sequence of
    what ``key=`` returns for an element (None where that is not known)."""
    classmethod_forward: "ClassInfo | None" = None
    """The ``autograd.Function`` of the checked files whose ``apply`` the call is, when its ``forward`` is a
    classmethod (Dynamo cannot bind it: see ``ClassModel.classmethod_forward``)."""
    built_partial_typed_dict: "ClassInfo | None" = None
    """The ``TypedDict`` of the checked files with optional keys the call builds (``Message(...)`` of a
    ``total=False`` one)."""
    walks_rnn: bool = False
    """An ``nn.Module`` method that visits every submodule (``model.train()``, ``model.parameters()``), called
    on a module of the checked files one of whose submodules, at any depth, is an LSTM, GRU or RNN."""

    @property
    def call(self) -> cst.Call:
        assert isinstance(self.node, cst.Call)
        return self.node


@dataclass(frozen=True, eq=False)
class SubscriptEvent(Event):
    base: Value = field(default=None)  # type: ignore[assignment]
    index: tuple[Value, ...] = ()
    """One value per index element (``x[a, b]`` has two)."""
    bounds: tuple[Value, ...] = ()
    """Values of the slice bounds and steps written in the index (``x[a:b]`` has two)."""
    store: bool = False
    augmented: bool = False
    operand: Value | None = None
    """For an augmented store (``d[k] += v``): the value of ``v``."""


@dataclass(frozen=True, eq=False)
class ForLoopEvent(Event):
    iterable: Value = field(default=None)  # type: ignore[assignment]
    range_args: tuple[Value, ...] | None = None
    """Values of the arguments when iterating over ``range(...)``."""


@dataclass(frozen=True)
class CarriedState:
    """A value a ``while`` body changes from its own value and so carries to the next iteration
    (``i += 1``, ``outs.append(x)``, ``out = torch.cat([out, y])``)."""

    name: str
    node: cst.CSTNode
    """Its first change."""
    value: Value
    """The value on entering the loop."""
    what: str
    """``number`` (dynamic after its first change), ``length`` (a list or tuple that grows), ``string``
    (a new value at every iteration) or ``size`` (a tensor it concatenates onto)."""


@dataclass(frozen=True, eq=False)
class WhileLoopEvent(Event):
    """A ``while`` loop (``node``), reported after its body: what a break at its test leads to."""

    carried: tuple[CarriedState, ...] = ()
    body_calls_break: bool = False
    """A function the loop body calls breaks the graph (Dynamo then runs the loop eagerly)."""


@dataclass(frozen=True, eq=False)
class GlobalReadEvent(Event):
    name: str = ""
    value: Value | None = None


@dataclass(frozen=True, eq=False)
class AttributeEvent(Event):
    """A read or write of ``self.<name>`` in analysed code, of an attribute of an object of a class of the
    checked code that ``self`` holds (``self.model.num_batches``), or of an attribute of a class of the
    checked code read through the class (``Counter.calls``, ``type(self).seen``)."""

    cls: "ClassInfo | None" = None
    name: str = ""
    value: Value | None = None
    write: bool = False
    augmented: bool = False
    on_class: bool = False
    """Read or written through the class: one value every instance shares, which Dynamo guards on
    (``G['Counter'].calls == 0``) wherever compiled code reads it."""
    path: str = ""
    """The object's code when it is one ``self`` holds (``self.model`` of ``self.model.num_batches``), not
    ``self`` itself nor a class."""


@dataclass(frozen=True, eq=False)
class ScalarUseEvent(Event):
    """A data-dependent Python scalar (from ``.item()``, ``random.random()``...) is consumed by Python code."""

    value: Value = field(default=None)  # type: ignore[assignment]
    context: str = ""
    """``range`` when it sizes a ``range(...)``."""


@dataclass(frozen=True, eq=False)
class ContextManagerEvent(Event):
    value: Value = field(default=None)  # type: ignore[assignment]
    enter_broke: bool = False
    """The ``__enter__`` of a class of the checked code that ``with`` ran broke the graph."""


@dataclass(frozen=True, eq=False)
class ClassStatementEvent(Event):
    """A ``class`` statement the function runs: it calls ``__build_class__`` (the node is the class name)."""


@dataclass(frozen=True, eq=False)
class ComprehensionAssignmentEvent(Event):
    """An assignment expression (``(y := f(a))``) inside a list, set or dict comprehension (the node is the
    assignment expression): it binds a name of the enclosing function, which the comprehension's own frame
    holds as a cell."""


@dataclass(frozen=True, eq=False)
class ResumeInputsEvent(Event):
    """A statement outside any loop that may break the graph (the node is the statement), with what the names
    bound then hold: the frame Dynamo resumes after a break there receives those it reads as inputs."""

    sizes: tuple[str, ...] = ()
    """The names bound to sizes the calls change (``h`` of ``b, c, h, w = x.shape``): Python ints there."""
    plain: frozenset[str] = frozenset()
    """The names bound to nothing Dynamo counts as tensor-related: Python numbers and strings, lists, tuples
    and dicts of them, functions, objects of classes of the checked code that are no modules (Dynamo does not
    look into them)."""


@dataclass(frozen=True, eq=False)
class DecoratorEvent(Event):
    """A decorator applied to a function defined in the function being analysed (the node is the decorator's
    expression): a call of the decorator with the new function."""

    qualname: str = ""
    """The decorator's name qualified through the imports (``functools.lru_cache`` for
    ``@lru_cache(maxsize=None)``)."""


@dataclass(frozen=True, eq=False)
class TensorAttributeStoreEvent(Event):
    """``t.<name> = value`` on a tensor (the node is the attribute), for an attribute Dynamo cannot set while
    tracing (``requires_grad``)."""

    name: str = ""


@dataclass(frozen=True, eq=False)
class TensorAttributeReadEvent(Event):
    """``t.<name>`` read on a tensor that is a NumPy array or an instance of a ``torch.Tensor`` subclass of
    the checked code (the node is the attribute): Dynamo holds the first as a tensor seen through
    ``torch._numpy``, which lacks some of ``ndarray``'s attributes, and cannot read some of the second's."""

    name: str = ""
    value: Value = field(default=None)  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class ObjectAttributeReadEvent(Event):
    """``cfg.<name>`` read on an object of a class of the checked code other than ``self``, held by a local
    name (an argument the callers pass, ``step(cfg, x)``): Dynamo guards on a Python value read there as on
    one of ``self``."""

    cls: "ClassInfo | None" = None
    name: str = ""
    value: Value | None = None


@dataclass(frozen=True, eq=False)
class ModuleAttributeReadEvent(Event):
    """``m.<name>`` read on an ``nn.LSTM``/``GRU``/``RNN`` module (the node is the attribute), other than the
    method a call calls: Dynamo cannot build the module to read it (``self.gru.hidden_size``); or, with an
    empty ``name``, such a module of ``self`` read as a value other than by calling it (``if self.lstm is
    not None:``), which Dynamo builds as it loads it."""

    name: str = ""
    value: Value = field(default=None)  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class EagerComprehensionEvent(Event):
    """A list, set or dict comprehension that Dynamo meets as a frame of its own (not inlined), with the
    iterator it steps as an input it cannot step: the function around it runs eagerly, or its body breaks
    the graph (``why`` says which).  Reported only where that frame is compiled at all (it refers to
    ``torch`` or to a tensor or module of the function) and the iterator is one Dynamo cannot step there."""

    why: str = ""


@dataclass(frozen=True, eq=False)
class StringFormatEvent(Event):
    """``"..." % values``: old-style string formatting."""

    values: tuple[Value, ...] = ()


@dataclass(frozen=True, eq=False)
class FormattedStringEvent(Event):
    """An f-string that formats a number Dynamo traces as symbolic once the calls change it
    (:attr:`Value.dynamic`); reported only for such a one."""

    values: tuple[Value, ...] = ()
    specified: tuple[bool, ...] = ()
    """For each value, whether it has a format spec (``{lr:.3e}``)."""


@dataclass(frozen=True, eq=False)
class ContainmentEvent(Event):
    """``key in container`` / ``key not in container``."""

    container: Value = field(default=None)  # type: ignore[assignment]
    key: Value | None = None


@dataclass(frozen=True, eq=False)
class ArithmeticEvent(Event):
    """``a + b``, ``n += 1``...: the values combined (a graph operation only when one is a tensor)."""

    operands: tuple[Value, ...] = ()


@dataclass(frozen=True, eq=False)
class ComparisonEvent(Event):
    """``a == b``, ``a < b``... (not ``is``/``in``): the values compared."""

    operands: tuple[Value, ...] = ()


def _event_types(cls: type) -> list[type]:
    """``cls`` and its subclasses, at any depth."""
    return [cls] + [t for sub in cls.__subclasses__() for t in _event_types(sub)]


for _type in _event_types(Event):
    direct_init(_type)  # the evaluator makes an event per call, attribute, test... of the analysed code
