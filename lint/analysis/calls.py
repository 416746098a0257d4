"""What a call evaluates to: functions and modules of the same file, torch
functions, tensor methods, Python builtins and other libraries.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis import events as E
from dynalint.analysis import knowledge as K
from dynalint.analysis.capture_settings import COMPILE_FUNCTIONS
from dynalint.analysis.numpy_calls import TRACED_NUMPY_RANDOM
from dynalint.analysis.replay import function_token
from dynalint.analysis.syntax import dotted_name, encloses, walk
from dynalint.analysis.values import (
    DYNAMIC_SIZE,
    NONE_VALUE,
    PYTHON_VALUE,
    RANK_VALUE,
    SIZE_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    derived,
    dimension_size,
    join,
    join_all,
    mapping,
    merge_params,
    python,
    sequence,
    shape_of,
    tensor,
)
from dynalint.config.settings import Scope, Settings

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.interface import EvaluatorView
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo

_BOOL_RESULT = frozenset({"any", "all", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "eq",
                          "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal",
                          "not_equal", "logical_and", "logical_or", "logical_not", "logical_xor", "bool",
                          "isclose", "signbit", "isin", "gt_", "eq_"})
_KEEPS_DTYPE = frozenset({"to", "clone", "detach", "contiguous", "view", "reshape", "flatten", "unsqueeze",
                          "squeeze", "transpose", "permute", "expand", "expand_as", "flip", "roll", "cpu",
                          "cuda", "t", "repeat", "narrow", "select", "unflatten", "view_as", "reshape_as",
                          "tril", "triu", "masked_fill", "index_select", "gather", "movedim", "broadcast_to",
                          "__getitem__", "tile", "cat", "stack", "where", "repeat_interleave", "pad",
                          # (`Tensor.new_*` makes a tensor of the receiver's dtype unless given one)
                          "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
#: The qualname of the value ``Tensor.data_ptr()`` returns (an address: Dynamo cannot compare it).
DATA_PTR = "torch.Tensor.data_ptr()"
#: The qualname of an f-string that formats a tensor: Dynamo holds it unformatted (the tensor's text needs its
#: data), so measuring, comparing, combining it or calling its methods breaks.
TENSOR_TEXT = "builtins.str (formatted from a tensor)"
#: The qualname of a property read through ``super()`` (``super().mean`` in an override of ``mean``): Dynamo
#: holds the attribute unresolved, so calling its methods or passing it to torch breaks.
SUPER_PROPERTY = "builtins.property (read through super())"
#: dict methods that leave the dict as it is
_READING_DICT_METHODS = frozenset({"get", "keys", "values", "items", "copy", "__getitem__", "__contains__", "__len__"})
_SEQUENCE_BUILTINS = frozenset({"list", "tuple", "reversed", "sorted", "iter", "set", "frozenset"})
#: NumPy's random generator constructors (their result is an object, not a number)
_NUMPY_GENERATORS = K.NUMPY_GENERATOR_CLASSES | {"numpy.random.default_rng"}


def evaluate_call(ev: "EvaluatorView", node: cst.Call) -> Value:
    func = node.func
    receiver: Value | None = None
    method: str | None = None
    parent = _super_method(ev, func)
    if parent is not None:
        callee = parent
    elif isinstance(func, cst.Attribute):
        receiver = ev.expr(func.value)
        method = func.attr.value
        if receiver.is_mapping:
            callee = None
            if method not in _READING_DICT_METHODS:
                ev.forget_entries(func.value)  # `d.update(...)`, `d.pop(k)`
        elif receiver.qualname is not None and receiver.kind in (Kind.UNKNOWN, Kind.PYTHON):
            callee = ev.attribute(receiver, method, func)
        elif receiver.kind is Kind.TENSOR and receiver.cls is not None:
            # an instance of a tensor subclass of the checked code: its class's methods, else torch's
            callee = ev.p.classes.member(receiver, method) \
                if receiver.cls.find_method(method) is not None else None
        elif receiver.cls is not None:
            callee = ev.p.classes.member(receiver, method)
            if callee.kind is Kind.FUNCTION:
                ev.forget_entries(func.value)  # a method may set the record's fields
            if ev.is_state(func.value):
                ev.report(E.AttributeEvent, func, cls=ev.fn.cls, name=method, value=callee)
        elif receiver.choices:
            callee = ev.attribute(receiver, method, func)  # the method of each object it may be
        else:
            callee = None
    else:
        callee = ev.expr(func)

    args: list[Value] = []
    kwargs: dict[str, Value] = {}
    opaque = False
    use_context = "range" if callee is not None and callee.qualname == "builtins.range" else ""
    for a in node.args:
        v = ev.expr(a.value)
        ev.use_scalar(v, a.value, use_context)
        if v.kind is Kind.SEQUENCE and v.items and type(a.value) in (cst.Tuple, cst.List) \
                and len(v.items) == len(a.value.elements) and (
                (callee is not None and callee.qualname is not None) or (receiver is not None and receiver.is_tensor)):
            for item, el in zip(v.items, a.value.elements):  # `F.interpolate(x, size=(n, n))`: torch takes each
                ev.use_scalar(item, el.value, use_context)
        if a.star == "*":
            opaque = opaque or v.items is None
            args.extend(v.items if v.items is not None else [v.elements()])
        elif a.star == "**":
            opaque = True
        elif a.keyword is not None:
            kwargs[a.keyword.value] = v
        else:
            args.append(v)

    if receiver is not None and receiver.kind is Kind.SEQUENCE and not opaque and not kwargs \
            and (method, len(args)) in (("append", 1), ("insert", 2), ("extend", 1)):
        ev.grow_sequence(func.value, args[0].elements() if method == "extend" else args[-1])

    callee_fn = None
    qualname = None
    result: Value
    broke_before, ev.callee_broke = ev.callee_broke, False
    called = _call_object(ev, callee, args, kwargs, opaque) if callee is not None else None
    callee_broke = called is not None and ev.callee_broke
    if called is not None:
        result, callee_fn = called
    elif callee is not None and callee.choices:
        # one of several classes or functions: each is called, and the result is what they agree on
        outcomes, callee_broke, any_broke = [], True, False
        for choice in callee.choices:
            ev.callee_broke = False
            outcomes.append(_call_object(ev, choice, args, kwargs, opaque))
            callee_broke, any_broke = callee_broke and ev.callee_broke, any_broke or ev.callee_broke
        ev.callee_broke = any_broke
        result = join_all(o[0] if o is not None else UNKNOWN_VALUE for o in outcomes)
    elif callee is not None and callee.element is not None and callee.qualname in _ANNOTATED_CALLABLES:
        # a parameter annotated `Callable[[...], Tensor]`, called (given a lambda of its caller, which is
        # not evaluated here: what the annotation promises)
        result = callee.element
    elif callee is not None and callee.qualname == NAMEDTUPLE_CLASS and callee.keys is not None and not opaque:
        result = namedtuple_instance(callee, args, kwargs)
    elif method == "apply" and receiver is not None and receiver.is_class and not opaque \
            and (forward := ev.p.classes.static_forward(receiver.cls)) is not None:
        # `Clamp.apply(x, b)` of an `autograd.Function` of the checked files: its `forward`, given a context
        result = ev.p.calls.call_function(ev, forward, [UNKNOWN_VALUE, *args], kwargs, None, opaque)
        callee_fn, callee_broke = forward, ev.callee_broke
    elif callee is not None and callee.qualname is not None:
        qualname = callee.qualname
        result = external_call(ev, qualname, args, kwargs, node)
        if receiver is not None and qualname in K.RETURNS_RECEIVER:
            result = receiver
    elif receiver is not None and method is not None:
        if K.marks_array_receiver(method, len(args)) and _untyped(receiver) and (
                method in K.ARRAY_EXTRACTIONS or ev.p.scope is not Scope.COMPILED):
            # only a tensor or a NumPy array (a tensor under Dynamo) has the method: where the call runs, the
            # value the analysis could not follow is one (under scope "compiled", only for a method that reads
            # its data: nothing else is taken for a tensor by how the code uses it)
            ev.tensor_evidence(receiver)
            receiver = tensor(params=receiver.params, assumed=bool(receiver.params))
        result = method_call(ev, receiver, method, args, kwargs, node)
    else:
        if callee is not None and callee.kind is Kind.UNKNOWN and callee.params:
            ev.not_tensor_evidence(callee)
        result = UNKNOWN_VALUE

    if receiver is not None and method in ("register_buffer", "register_parameter") and ev.attr_sink is not None \
            and args and isinstance(args[0].const, str):
        # (a bool mask registered stays one, a 0-d tensor 0-d)
        given = args[1] if len(args) > 1 and args[1].kind is Kind.TENSOR else tensor()
        ev.attr_sink[args[0].const] = tensor(from_weights=True, is_bool=given.is_bool, zero_dim=given.zero_dim)

    module = callee if callee is not None and callee.kind is Kind.MODULE else None
    if method == "forward" and receiver is not None and receiver.kind is Kind.MODULE:
        module = receiver  # `self.rnn.forward(x)` runs the module too
    ev.callee_broke = broke_before or ev.callee_broke
    made = callee.cls if callee is not None and callee.is_class else None
    built = made if made is not None and ev.p.classes.is_tensor_class(made) else None
    partial = made if made is not None and ev.p.classes.has_optional_keys(made) else None
    unbound = unbound_apply(ev, receiver, node) if method == "apply" else None
    sorts = args[0] if qualname in _KEYED_BUILTINS and len(args) == 1 else \
        receiver if method == "sort" and receiver is not None and receiver.kind is Kind.SEQUENCE else None
    if sorts is not None and sorts.kind is Kind.TENSOR and sorts.assumed:
        sorts = None  # an untyped parameter, iterated: what it holds is not known (it may be a dict)
    key = _call_each(ev, kwargs["key"], [sorts.elements()]) if sorts is not None and "key" in kwargs else None
    keys = sorts if sorts is not None and "key" not in kwargs else sequence(element=key) if key is not None else None
    walks_rnn = method in K.CHILD_WALKING_MODULE_METHODS and callee_fn is None and receiver is not None \
        and receiver.kind is Kind.MODULE and _holds_rnn(ev, receiver, 0)
    ev.report(E.CallEvent, node, qualname=qualname, method=method, receiver=receiver, args=tuple(args),
              kwargs=kwargs, result=result, callee=callee_fn, module=module, callee_broke=callee_broke,
              built_tensor_class=built, built_partial_typed_dict=partial, classmethod_forward=unbound,
              built_module=made if made is not None and made.is_module else None,
              sort_keys=keys, walks_rnn=walks_rnn)
    return result


#: callables whose result is their ``element``: an annotated ``Callable`` parameter, given a lambda or not
_ANNOTATED_CALLABLES = frozenset({K.ANNOTATED_CALLABLE, "builtins.function"})

#: the builtins that compare the elements of one iterable, or what its ``key=`` gives for them
_KEYED_BUILTINS = frozenset({"builtins.sorted", "builtins.max", "builtins.min"})


def _holds_rnn(ev: "EvaluatorView", module: Value, depth: int) -> bool:
    """A submodule of ``module`` (a module of a class of the checked files), at any depth its classes'
    attributes show, is an LSTM, GRU or RNN."""
    if module.cls is None or depth > 4:
        return False
    for v in ev.p.classes.class_attrs(module.cls).values():
        if v.kind is Kind.MODULE and (v.qualname in K.NN_RNN_CLASSES or _holds_rnn(ev, v, depth + 1)):
            return True
    return False


def unbound_apply(ev: "EvaluatorView", receiver: Value | None, node: cst.Call) -> "ClassInfo | None":
    """``C.apply(...)`` of an ``autograd.Function`` of the checked files whose ``forward`` is a classmethod, with
    an argument for each of its parameters after ``ctx``: Dynamo passes the class, then the context twice,
    so those arguments are one too many and the call fails to bind ("failed to bind arguments when
    attempting to inline", at the call; measured on torch 2.13 with inputs that require grad).  With fewer
    arguments the call binds, shifted, and what breaks inside ``forward`` is not known: not reported."""
    cls = receiver.cls if receiver is not None and receiver.is_class else None
    forward = ev.p.classes.classmethod_forward(cls) if cls is not None else None
    if forward is None or any(a.star or a.keyword is not None for a in node.args):
        return None
    p = forward.node.params
    if isinstance(p.star_arg, cst.Param):
        return None  # `*args` takes the extra one
    return cls if len(node.args) >= len(p.posonly_params) + len(p.params) - 2 else None


def _call_object(ev: "EvaluatorView", callee: Value, args: list[Value], kwargs: dict[str, Value],
                 opaque: bool) -> "tuple[Value, FunctionInfo | None] | None":
    """Calling a function, class, module or callable object of the checked files: (result, the function
    run), or None when ``callee`` is none of them."""
    if isinstance(callee.origin, cst.Lambda) and callee.qualname == "builtins.function":
        result = _call_lambda(ev, callee.origin, args, kwargs, opaque)
        return (result, None) if result is not None else None
    if callee.kind is Kind.FUNCTION and callee.func is not None:
        result = ev.p.calls.call_function(ev, callee.func, args, kwargs, callee.bound_self, opaque)
        fn = callee.func
        if not args and not kwargs and fn.name in K.COMPILING_TRUE_SUFFIXES and _body_read(ev, fn) \
                and _wraps_compiling_query(fn.node, getattr(ev.p.program_for(fn.owner), "module", None)):
            # a project's own `is_compiling()` wraps torch's query (through a fallback the analysis cannot
            # follow, `getattr(torch.compiler, "is_compiling", None) or ...`): true while Dynamo traces
            result = python(True)
        return result, callee.func
    if callee.kind is Kind.FUNCTION and callee.cls is not None:
        if ev.attr_sink is None:
            ev.p.classes.class_attrs(callee.cls)  # make sure the class is understood
        built = ev.p.classes.construct(callee.cls, args, kwargs, opaque)
        if ev.emit and not ev.p.widening and not ev.p.classes.is_tensor_class(callee.cls):
            # (a tensor subclass's `__init__` Dynamo runs with the new instance alone: see the breaks)
            _initialise(ev, callee.cls, built, args, kwargs, opaque)
        return built, None
    if callee.kind is Kind.MODULE and not callee.choices:
        return ev.p.calls.call_module(ev, callee, args, kwargs, opaque), None
    if callee.cls is not None and callee.kind is Kind.UNKNOWN and _has_call(ev, callee.cls):
        # an instance of a plain class with ``__call__`` (a matcher, a sampler, a transform)
        fn = callee.cls.find_method("__call__")
        return ev.p.calls.call_function(ev, fn, args, kwargs, callee, opaque), fn
    return None


def call_special(ev: "EvaluatorView", obj: Value, name: str, args: list[Value]) -> Value | None:
    """The special method ``name`` of a class of the checked code that Python calls for an operation on an
    instance of it (``len(obj)``: ``__len__``; ``with obj:``, ``for x in obj``, ``obj[i]``): Dynamo inlines it
    there, so what breaks in its body breaks the caller's graph.  Its result, or None when ``obj`` is no such
    instance or its class does not define the method."""
    cls = obj.cls
    if cls is None or obj.kind not in (Kind.UNKNOWN, Kind.MODULE) or obj.choices:
        return None
    fn = cls.find_method(name)
    if fn is None:
        return None
    return ev.p.calls.call_function(ev, fn, args, {}, obj, False)


def iterated(ev: "EvaluatorView", it: Value) -> Value:
    """One element of what iterating ``it`` gives (``for x in it``, a comprehension): what the ``__iter__`` of its
    class yields, run where it is stepped (a generator's body runs in the loop's frame), else its elements."""
    made = call_special(ev, it, "__iter__", [])
    return (made if made is not None else it).elements()


#: the qualified name of a dict's ``get``/``__getitem__`` used as a function; its ``element`` is what it gives
MAPPING_LOOKUP = "builtins.dict.get"


#: the functions of ``itertools`` that take the truth of what a predicate returns for each element (or of each
#: element of a selector sequence, ``compress``)
_TRUTH_CONSUMERS = frozenset({"itertools.takewhile", "itertools.dropwhile", "itertools.filterfalse",
                              "itertools.compress"})


def _call_each(ev: "EvaluatorView", fn: Value, args: list[Value], node: cst.Call | None = None
               ) -> Value | None:
    """What ``fn`` returns for one element (``args``: an element of each sequence it is given), when ``map``,
    ``filter``, ``functools.reduce`` or a ``key=`` calls it: Dynamo inlines a function of the checked code or a
    lambda there, so what breaks in its body breaks the caller's graph; a dict's ``get`` gives its values; a
    torch function (``map(torch.std, (a, b))``, with ``node`` the call that maps it) what it gives.  None when
    ``fn`` is nothing the analysis can call (a builtin)."""
    if fn.qualname == MAPPING_LOOKUP and fn.element is not None:
        return fn.element
    if node is not None and fn.kind is not Kind.MODULE and fn.qualname is not None \
            and fn.qualname.startswith("torch.") and not fn.qualname.endswith("()"):
        return torch_call(ev, fn.qualname, fn.qualname.rsplit(".", 1)[-1], args, {}, node)
    called = _call_object(ev, fn, args, {}, False)
    return called[0] if called is not None else None


def _call_lambda(ev: "EvaluatorView", lam: cst.Lambda, args: list[Value], kwargs: dict[str, Value],
                 opaque: bool) -> Value | None:
    """Calling a lambda of the function being analysed (``scale = lambda t: t * t.mean().item()``): Dynamo
    inlines it, so its body is evaluated there, with the arguments bound to its parameters and the function's
    names as its closure; None where that cannot be done (a lambda of another function, whose closure is not
    at hand, ``*args`` or ``**kwargs`` on either side, a lambda calling itself)."""
    p = lam.params
    fn = ev.fn
    if opaque or fn is None or isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None \
            or not encloses(fn.node, lam):
        return None
    active: set[int] = ev.__dict__.setdefault("_lambdas_called", set())
    positional = [*p.posonly_params, *p.params]
    if id(lam) in active or len(args) > len(positional):
        return None
    env = dict(ev.env)
    for param, value in zip(positional, args):
        env[param.name.value] = value
    for param in positional[len(args):] + list(p.kwonly_params):
        name = param.name.value
        env[name] = kwargs[name] if name in kwargs else ev.expr(param.default) if param.default is not None \
            else UNKNOWN_VALUE
    saved = ev.env
    active.add(id(lam))
    ev.env = env
    try:
        return ev.expr(lam.body)
    finally:
        ev.env = saved
        active.discard(id(lam))


def _initialise(ev: "EvaluatorView", cls: "ClassInfo", built: Value, args: list[Value],
                kwargs: dict[str, Value], opaque: bool) -> None:
    """Building an object in compiled code runs its class's ``__init__`` there (a record's generated
    ``__init__`` runs its ``__post_init__``): Dynamo inlines it, so what breaks in it breaks the caller
    (measured on torch 2.13 for plain classes, ``nn.Module`` subclasses, ABCs, dataclasses and classes
    with a metaclass ``__call__``).  The call keeps no function of its own on its event: the result is
    still a fresh instance of the class."""
    ev.p.classes.touch_class(cls)
    init = cls.instance_method("__init__")
    if init is not None:
        ev.p.calls.call_function(ev, init, args, kwargs, built, opaque)
    elif cls.find_method("__init__") is None and ev.p.classes.is_record(cls):
        post = cls.instance_method("__post_init__")
        if post is not None:
            ev.p.calls.call_function(ev, post, [], {}, built, False)


def _untyped(v: Value) -> bool:
    """Nothing is known of ``v``: not an object, function or class the analysis knows, nor a choice of them."""
    return v.kind is Kind.UNKNOWN and v.qualname is None and v.cls is None and v.func is None and not v.choices


def _has_call(ev: "EvaluatorView", cls: "ClassInfo") -> bool:
    ev.p.classes.touch_class(cls)
    return cls.find_method("__call__") is not None


def super_property(ev: "EvaluatorView", node: cst.Attribute) -> Value | None:
    """``super().name`` read, not called, where the next definition of ``name`` among the bases of the checked
    code is a ``property``: Dynamo does not run the getter there but holds the attribute unresolved (measured on
    torch 2.13: ``super().mean.view(-1)`` and ``torch.exp(super().mean)`` break, whatever made the object;
    arithmetic on it breaks on an object built in compiled code only, and is not reported; a plain method
    called through ``super()`` is traced)."""
    parent = _super_method(ev, node)
    if parent is None or parent.func is None or "property" not in parent.func.decorators:
        return None
    ev.expr(node.value)
    return Value(Kind.UNKNOWN, qualname=SUPER_PROPERTY, origin=node)


def _super_method(ev: "EvaluatorView", func: cst.BaseExpression) -> Value | None:
    """``super().name`` (or ``super(C, self).name``) in a method of ``C``: the next definition of
    ``name`` among the bases of ``C``, bound to ``self`` (``super().__init__(flag=True)`` sets the
    attributes the base's ``__init__`` sets, with those arguments; ``super().forward(x)`` runs the
    base's ``forward``)."""
    if type(func) is not cst.Attribute or type(func.value) is not cst.Call:  # (not subclassed: type tests)
        return None
    call = func.value
    fn = ev.fn
    if fn is None or fn.cls is None or ev.self_name is None or ev.self_name not in ev.env \
            or not ev.is_builtin(call.func, "super"):
        return None
    if call.args and not (len(call.args) == 2 and isinstance(call.args[0].value, cst.Name)
                          and call.args[0].value.value == fn.cls.name
                          and isinstance(call.args[1].value, cst.Name)
                          and call.args[1].value.value == ev.self_name):
        return None
    ev.p.classes.touch_class(fn.cls)
    for cls in list(fn.cls.mro())[1:]:
        method = cls.methods.get(func.attr.value)
        if method is not None:
            if method.is_static or method.is_classmethod:
                return None
            return Value(Kind.FUNCTION, func=method, bound_self=ev.env[ev.self_name])
    instance = ev.env[ev.self_name]
    if func.attr.value == "__call__" and fn.cls.is_module:
        # `nn.Module.__call__` of a module whose class overrides `__call__`: it runs `forward`
        forward = (instance.cls or fn.cls).find_method("forward")
        if forward is not None:
            return Value(Kind.FUNCTION, func=forward, bound_self=instance)
    return None


# --------------------------------------------------------------------------- methods


def method_call(ev: "EvaluatorView", recv: Value, name: str, args: list[Value], kwargs: dict[str, Value],
                node: cst.Call) -> Value:
    kind = recv.kind
    if kind is Kind.TENSOR:
        return tensor_method(ev, recv, name, args, kwargs, node)
    if kind is Kind.UNKNOWN:
        torch_kw = bool(K.TORCH_ONLY_KWARGS & kwargs.keys())
        if recv.params:
            if name in K.TENSOR_METHODS or name in K.SIZE_METHODS or name in K.SCALAR_METHODS \
                    or name in K.PYTHON_METHODS:
                ev.tensor_evidence(recv)
            elif name in K.CONTAINER_METHODS:
                ev.not_tensor_evidence(recv)
        if torch_kw and name in K.TENSOR_METHODS:
            # `dim=`/`keepdim=` exist only in torch: the receiver is a tensor
            return tensor_method(ev, tensor(params=recv.params), name, args, kwargs, node)
        if name in K.ARRAY_REDUCTIONS and _elementwise_comparison(node.func):
            # `(a == b).all()`: only arrays compare element-wise into something with `.all()`, and
            # Dynamo traces NumPy arrays as tensors, so it is a tensor either way
            return tensor_method(ev, tensor(is_bool=True, params=recv.params), name, args, kwargs, node)
        if name in K.TENSOR_ONLY_METHODS or name in K.ARRAY_REDUCTIONS:
            # only a tensor has the method, or only an array reduces with it (a NumPy array is traced as a
            # tensor): where the call runs, the value the analysis could not follow is one
            return tensor_method(ev, tensor(params=recv.params, assumed=bool(recv.params)), name, args, kwargs,
                                 node)
        return Value(Kind.UNKNOWN, params=recv.params)
    if kind is Kind.MODULE and recv.qualname == "torch.nn.ModuleDict" and recv.element is not None \
            and name in ("values", "items"):
        # (its keys are strings)
        return sequence(element=recv.element if name == "values" else sequence(items=(PYTHON_VALUE, recv.element)))
    if kind is Kind.MODULE and name in MODULE_METHODS_RETURNING_SELF:
        return recv  # `Acoustic().eval()`, `model.to(device)`: the module itself
    if kind is Kind.MODULE and name in _WEIGHT_ITERATORS:
        # `m.parameters()`, `m.named_buffers()`: the module's weights, inputs of the graph
        weight = tensor(from_weights=True, entered=True)
        return sequence(element=sequence(items=(PYTHON_VALUE, weight)) if name.startswith("named_") else weight)
    if kind is Kind.SIZE:
        return SIZE_VALUE if name in ("numel", "index", "count", "__getitem__") else UNKNOWN_VALUE
    if kind is Kind.SCALAR:
        return recv if name in ("__int__", "__float__", "__round__") else UNKNOWN_VALUE
    if kind is Kind.SEQUENCE and name in ("append", "extend", "insert", "clear"):
        return NONE_VALUE
    if recv.is_mapping:
        return _mapping_method(recv, name, args, kwargs)
    if kind is Kind.PYTHON and recv.const is not None and isinstance(recv.const, str):
        return PYTHON_VALUE
    return UNKNOWN_VALUE


#: the ``math`` functions that test a number: their result is a bool
_MATH_TESTS = frozenset({"isnan", "isinf", "isfinite", "isclose"})

#: the methods of ``nn.Module`` that return the module itself (checked against torch in the tests)
MODULE_METHODS_RETURNING_SELF = frozenset({"train", "eval", "to", "cuda", "cpu", "float", "half", "double",
                                           "bfloat16", "requires_grad_", "type", "apply", "share_memory",
                                           "to_empty", "xpu", "ipu", "mtia"})


#: the methods of an ``nn.Module`` that iterate over its weights
_WEIGHT_ITERATORS = frozenset({"parameters", "buffers", "named_parameters", "named_buffers"})

_ELEMENTWISE = (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _elementwise_comparison(func: cst.BaseExpression) -> bool:
    """``func`` is ``(a <op> b).method`` with one element-wise comparison operator."""
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Comparison):
        return False
    comps = func.value.comparisons
    return len(comps) == 1 and isinstance(comps[0].operator, _ELEMENTWISE)


def _mapping_method(recv: Value, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    # (a dict made empty and filled key by key knows its entries, not yet their join)
    element = recv.element if recv.element is not None \
        else join_all(recv.items) if recv.keys is not None and recv.items else UNKNOWN_VALUE
    if name == "values":
        return sequence(element=element)
    if name == "items":
        return sequence(element=sequence(items=(UNKNOWN_VALUE, element)))
    if name == "pop" and len(args) == 1 and not kwargs:
        # (without a default, what the key holds: `out.pop("loss")`)
        entry = recv.entry(args[0].const) if args[0].has_const else None
        return entry if entry is not None else element
    if name in ("get", "pop", "setdefault"):
        if element.kind is Kind.TENSOR:
            return join(element, NONE_VALUE)
        if name != "pop" and len(args) == 2 and not kwargs:
            return _entry_or_default(element, args[1])
        return UNKNOWN_VALUE
    if name == "keys":
        return sequence(element=UNKNOWN_VALUE)
    if name == "copy":
        return recv
    return UNKNOWN_VALUE


def _entry_or_default(element: Value, default: Value) -> Value:
    """``d.get(key, default)`` / ``d.setdefault(key, default)`` of a dict of functions or classes of the
    checked code: one of its values or the default (:attr:`Value.choices`, followed as for ``d[key]``);
    unknown for other values."""
    either = join(element, default)
    return either if either.choices or either.func is not None or either.cls is not None else UNKNOWN_VALUE


def tensor_method(ev: "EvaluatorView", recv: Value, name: str, args: list[Value],
                  kwargs: dict[str, Value], node: cst.Call) -> Value:
    params = recv.params | merge_params(args) | merge_params(kwargs.values())
    weights = recv.from_weights and all(
        v.from_weights or v.kind in (Kind.PYTHON, Kind.SIZE) for v in (*args, *kwargs.values()))
    if name in ("to_sparse", "to_sparse_coo") and recv.qualname != K.NUMPY_ARRAY:
        # a sparse COO tensor, made outside the graph as `torch.sparse_coo_tensor` makes one (see `K.SPARSE_TENSOR`)
        return tensor(params=params).with_(qualname=K.SPARSE_TENSOR)
    if name in K.SCALAR_METHODS or name in K.DATA_READING_OPS:
        if name == "numpy" and recv.qualname != K.NUMPY_ARRAY:
            # traced: Dynamo holds the array as the same tensor, seen through ``torch._numpy``
            return tensor(params=params, **derived((recv,))).with_(qualname=K.NUMPY_ARRAY)
        if name == "numpy" or recv.qualname == K.NUMPY_ARRAY:
            return UNKNOWN_VALUE
        return Value(Kind.SCALAR, origin=node, origin_in_loop=ev.in_loop(),
                     from_weights=recv.from_weights, is_bool=name == "__bool__" or name in K.DATA_READING_OPS)
    if name in K.SIZE_METHODS:
        if name in K.RANK_READS:
            return RANK_VALUE
        if name == "size" and not kwargs and len(args) <= 1:
            return dimension_size(recv, args[0]) if args else shape_of(recv)
        return DYNAMIC_SIZE if recv.dynamic_dims and name in ("numel", "nelement") else SIZE_VALUE
    if name == "data_ptr":
        return Value(Kind.PYTHON, qualname=DATA_PTR)
    if name == "untyped_storage" and not args and not kwargs:
        return Value(Kind.PYTHON, qualname=K.UNTYPED_STORAGE)
    if name == "as_subclass" and len(args) == 1:
        # the same data seen as an instance of the class given (a tensor subclass of the checked code)
        cls = args[0].cls if args[0].is_class else None
        made = tensor(params=params, **derived((recv,)))
        return made.with_(cls=cls) if cls is not None and ev.p.classes.is_tensor_class(cls) else made
    if name in K.PYTHON_METHODS and not (name == "type" and (args or kwargs)):
        # `t.type()` names the type; `t.type(dtype)` casts, like `t.to(dtype)`
        return python(is_bool=name.startswith("is_"))
    if _multi_output(name, args, kwargs):
        out = sequence(element=tensor(params=params, from_weights=weights, **derived((recv, *args))))
        rank = _reduced_rank(recv, name, args, kwargs)
        if rank is not None:  # `scores.max(-1).values`: one dimension less
            out = sequence(element=out.elements().with_(ndim=rank))
        return _unique_outputs(out, kwargs) if name == "unique" else out
    if name == "astype":
        # only a NumPy array has it (traced as a tensor); the dtype it converts to is not followed
        return tensor(params=params, **derived((recv,))).with_(qualname=K.NUMPY_ARRAY)
    if name in K.TENSOR_METHODS or name.endswith("_") or name == "type":
        in_place = name.endswith("_") and not name.startswith("__")  # (never changes the receiver's dtype)
        is_bool = name in _BOOL_RESULT or (name in _KEEPS_DTYPE and recv.is_bool and not _dtype_arg(args, kwargs)) \
            or (in_place and recv.is_bool)
        if (name in ("to", "type") or name.startswith("new_")) and _dtype_arg(args, kwargs) == "torch.bool":
            is_bool = True
        elif name == "to" and _may_change_dtype(args, node):
            is_bool = False
        kept = name in _KEEPS_PROVENANCE and recv.entered
        zero_dim = (name in _FULL_REDUCTIONS and not args and "dim" not in kwargs and "axis" not in kwargs) or (
            recv.zero_dim and (name in _KEEPS_PROVENANCE or name in _KEEPS_SHAPE and all(
                v.zero_dim for v in (*args, *kwargs.values()) if v.kind is Kind.TENSOR)))
        # (a conversion keeps the receiver's shape whatever it is given, `x.to(y)`; an elementwise op of a
        # 0-d tensor stays 0-d only against 0-d tensors: `x.clamp(min=t)` broadcasts to `t`'s shape)
        out = tensor(is_bool=is_bool, params=params, from_weights=weights, entered=kept,
                     **derived((recv, *args, *(v for k, v in kwargs.items() if k not in _PLACEMENT_KWARGS))))
        if recv.qualname == K.NUMPY_ARRAY:
            out = out.with_(qualname=K.NUMPY_ARRAY)  # an array's method gives an array
        rank = recv.ndim if name in _KEEPS_SHAPE else 1 if _flattens(name, args, kwargs) \
            else _reduced_rank(recv, name, args, kwargs)
        if rank is not None:
            out = out.with_(ndim=rank)
        return out.with_(zero_dim=True) if zero_dim else out
    return UNKNOWN_VALUE


_KEEPS_SHAPE = frozenset({"cumsum", "cumprod", "flip", "clone", "detach", "contiguous", "float", "double", "half",
                          "long", "int", "bool", "to", "cpu", "cuda", "abs", "neg", "exp", "log", "sqrt", "sigmoid",
                          "clamp", "clamp_min", "clamp_max", "argsort", "softmax", "log_softmax", "relu",
                          "tanh", "sign", "floor", "ceil", "round", "reciprocal", "rsqrt", "square", "log1p",
                          "expm1", "logical_not", "isnan", "isinf", "isfinite", "nan_to_num"})
"""Tensor methods whose result has the receiver's shape (so its number of dimensions)."""


_REDUCES_DIM = frozenset({"sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "max", "min", "std", "var",
                          "logsumexp", "any", "all", "norm", "median", "nansum", "nanmean", "count_nonzero"})
"""Tensor methods that, given one dimension (``dim=`` or their first argument), reduce it away unless
``keepdim=True``."""


def _reduced_rank(recv: Value, name: str, args: list[Value], kwargs: dict[str, Value]) -> int | None:
    """The number of dimensions of ``recv.name(dim)`` for a reduction over one dimension written as an int
    (``scores.sum(-1)``, ``x.max(dim=1)``): one less than the receiver's; None when not known."""
    dim = kwargs.get("dim", args[0] if args and name != "norm" else None)
    keep = kwargs.get("keepdim", args[1] if len(args) > 1 and name != "norm" else None)
    if name not in _REDUCES_DIM or recv.ndim is None or recv.ndim < 1 or dim is None \
            or not isinstance(dim.const, int) or isinstance(dim.const, bool) \
            or keep is not None and keep.const is not False:
        return None
    return recv.ndim - 1


def _flattens(name: str, args: list[Value], kwargs: dict[str, Value]) -> bool:
    """A tensor method whose result is 1-d whatever the receiver's shape: ``flatten()`` and ``ravel()`` with
    no arguments, ``view(-1)``/``reshape(-1)``, ``masked_select(mask)``."""
    if name in ("flatten", "ravel"):
        return not args and not kwargs
    if name in ("view", "reshape"):
        return len(args) == 1 and not kwargs and args[0].const == -1
    return name == "masked_select"


def _unique_outputs(out: Value, kwargs: dict[str, Value]) -> Value:
    """``torch.unique(x, return_inverse=..., return_counts=...)`` without ``dim``: its values and counts
    are 1-d (the inverse has ``x``'s shape), when the flags are written as constants."""
    flags = [kwargs.get(f) for f in ("return_inverse", "return_counts")]
    if "dim" in kwargs or any(f is not None and not isinstance(f.const, bool) for f in flags):
        return out
    one = out.elements().with_(ndim=1)
    items = [one]
    if flags[0] is not None and flags[0].const:
        items.append(out.elements())
    if flags[1] is not None and flags[1].const:
        items.append(one)
    return sequence(items=items, element=out.element) if len(items) > 1 else out


def _multi_output(name: str, args: list[Value], kwargs: dict[str, Value]) -> bool:
    if name in K.MULTI_OUTPUT:
        return True
    if name in K.MULTI_OUTPUT_WITH_DIM:
        if "dim" in kwargs:
            return True
        return bool(args) and args[0].kind is not Kind.TENSOR
    return any(kwargs.get(flag) is not None and kwargs[flag].const is True for flag in K.MULTI_OUTPUT_FLAGS)


def _may_change_dtype(args: list[Value], node: cst.Call) -> bool:
    """``t.to(x, ...)`` may give another dtype: ``x`` is a tensor (its dtype is taken) or a value not
    known to be a device (a name may hold a dtype); ``h.device`` and literals keep the dtype."""
    exprs = [a.value for a in node.args if a.keyword is None and not a.star]
    for i, v in enumerate(args):
        if v.kind is Kind.TENSOR:
            return True
        expr = exprs[i] if i < len(exprs) else None
        device = isinstance(expr, cst.Attribute) and expr.attr.value == "device"
        if v.kind is Kind.UNKNOWN and not device:
            return True
    return False


def _dtype_arg(args: list[Value], kwargs: dict[str, Value]) -> str | None:
    """The torch dtype given among the arguments (``torch.bool``; the builtin ``bool`` stands for it)."""
    for v in (*args, kwargs.get("dtype")):
        if v is not None and v.qualname == "builtins.bool":
            return "torch.bool"
        if v is not None and v.qualname is not None and v.qualname.startswith("torch."):
            return v.qualname
    return None


# --------------------------------------------------------------------------- external functions


def compile_state(q: str) -> Value | None:
    """What a query of the capture state (``is_compiling()``, ``is_scripting()``...) returns while
    Dynamo traces; None for any other function."""
    last = q.rsplit(".", 1)[-1]
    if last in K.COMPILING_TRUE_SUFFIXES and "export" not in q:
        return python(True)
    if q.startswith("torch.") and last in K.COMPILING_NONE_TORCH_FUNCS:
        return NONE_VALUE
    if last in K.COMPILING_FALSE_NAMES or (q.startswith("torch.") and last in K.COMPILING_FALSE_TORCH_FUNCS):
        return python(False)
    return None


def external_call(ev: "EvaluatorView", q: str, args: list[Value], kwargs: dict[str, Value],
                  node: cst.Call) -> Value:
    if q.startswith("builtins."):
        return builtin_call(ev, q[len("builtins."):], args, kwargs, node)
    state = compile_state(q)
    if state is not None:
        return state
    last = q.rsplit(".", 1)[-1]
    if q.startswith("torch."):
        return torch_call(ev, q, last, args, kwargs, node)
    if q.startswith("math."):
        kinds = {a.kind for a in args}
        if Kind.TENSOR in kinds and all(a.qualname == K.NUMPY_ARRAY for a in args if a.kind is Kind.TENSOR):
            return UNKNOWN_VALUE  # a NumPy array's number: see ``knowledge.NUMPY_ARRAY``
        if Kind.TENSOR in kinds:
            return Value(Kind.SCALAR, origin=node, origin_in_loop=ev.in_loop(),
                         is_bool=last in _MATH_TESTS)
        if Kind.SCALAR in kinds:
            first = next(a for a in args if a.kind is Kind.SCALAR)
            return first.with_(is_bool=True) if last in _MATH_TESTS else first
        if Kind.SIZE in kinds:
            return SIZE_VALUE
        if kinds <= {Kind.PYTHON}:
            return PYTHON_VALUE
        return UNKNOWN_VALUE
    if q in _NUMPY_GENERATORS:
        # a NumPy generator object: Dynamo cannot call its methods either (measured on torch 2.13:
        # `rng.random()` breaks after `rng = np.random.default_rng(0)`), which are `numpy.random.` names
        return Value(Kind.UNKNOWN, qualname=q + "()")
    if q in TRACED_NUMPY_RANDOM and not numpy_draw_is_number(q, node):
        # an array of draws Dynamo makes with torch's generator: a tensor seen through `torch._numpy`
        return NONE_VALUE if last in ("seed", "shuffle") else tensor(
            params=merge_params(args) | merge_params(kwargs.values())).with_(qualname=K.NUMPY_ARRAY)
    if q.rpartition(".")[0] in K.NUMPY_GENERATOR_OBJECTS and (_numpy_size_given(q, node) or last == "permutation"):
        # an array a NumPy generator's method draws (`rng.integers(0, n, size=k)`) outside the graph, which
        # the call breaks: the frame resumed there has it as an input, a tensor seen through `torch._numpy`
        # (measured on torch 2.13: `.tolist()` of it breaks again there)
        return tensor(entered=True).with_(qualname=K.NUMPY_ARRAY)
    if q in K.SKIPPED_NUMBER_CALLS or q.startswith("numpy.random."):
        # a number made outside the graph at a skipped call (or read from the tensor Dynamo draws it as): the
        # resumed frame guards on it like on `.item()`
        return Value(Kind.SCALAR, origin=node, origin_in_loop=ev.in_loop())
    if q.count(".") == 1 and q.startswith("numpy.") and last in K.NUMPY_ARRAY_FUNCS \
            or q == f"numpy.linalg.{last}" and last in K.NUMPY_LINALG_FUNCS:
        return numpy_array(last, args, kwargs)
    if q.startswith("random.") and (last in K.TRACED_RANDOM_FUNCS or q == "random.Random().random"):
        # a number the breaks classifier recognises (:func:`traced_random`), made at ``node``
        return Value(Kind.PYTHON, qualname=q + "()", origin=node)
    if q in ("os.getenv", "os.environ.get", "time.monotonic"):
        return PYTHON_VALUE
    if q == "collections.deque":
        # a Python sequence: a tensor indexing it is read into a Python int (`buffer[i]`)
        return sequence(element=args[0].elements() if args else None)
    if q in _TRUTH_CONSUMERS and len(args) == 2:
        # `itertools.takewhile(pred, xs)` takes the truth of `pred(x)` for each element, `compress(xs, keep)`
        # that of each selector: a tensor there is data-dependent branching (measured on torch 2.13, in
        # Dynamo's polyfills of both)
        selects = q == "itertools.compress"
        tested = args[1].elements() if selects else _call_each(ev, args[0], [args[1].elements()])
        if tested is not None and tested.is_tensor:
            ev.report(E.ConditionEvent, node, value=tested, construct="itertools")
        return sequence(element=args[0 if selects else 1].elements())
    if q in ("collections.OrderedDict", "collections.defaultdict", "collections.Counter") and not kwargs:
        # a dict (Dynamo guards on its keys like on a plain one's); an OrderedDict made from a dict keeps its
        # keys, a defaultdict's first argument is the factory
        given = args[0] if args and q == "collections.OrderedDict" else None
        return given if given is not None and given.is_mapping else mapping(None)
    if q in _VERSION_PARSERS and len(args) == 1 and not kwargs:
        parsed = _version(ev, args[0])
        if parsed is not None:
            return python(parsed)
    if q == "collections.namedtuple":
        fields = _namedtuple_fields(args[1] if len(args) > 1 else kwargs.get("field_names"))
        if fields is not None:
            # the class: calling it makes a tuple whose fields are read by name (see `namedtuple_instance`)
            return Value(Kind.UNKNOWN, qualname=NAMEDTUPLE_CLASS, keys=fields)
    if q in _RECORD_COPIES and len(args) == 1 and not kwargs and args[0].cls is not None \
            and ev.p.classes.is_record(args[0].cls):
        return _record_copy(ev, args[0], q == "dataclasses.asdict")
    if q == "functools.reduce" and len(args) in (2, 3) and not kwargs:
        start = args[2] if len(args) == 3 else args[1].elements()
        folded = _call_each(ev, args[0], [start, args[1].elements()])
        return join(start, folded) if folded is not None else UNKNOWN_VALUE
    if q == "functools.partial" and args:
        return _partial(args[0], args[1:], kwargs)
    if q in ("copy.copy", "copy.deepcopy") and len(args) == 1 and not kwargs:
        # a copy has the kind, dtype and shape of what it copies (so how the code uses it says what the
        # parameter copied is: `copy.deepcopy(cfg).temperature`); Dynamo makes a tensor's copy outside the
        # graph (the call breaks it), so the frame resumed there receives the copy as an input
        copied = args[0]
        return copied.with_(entered=True) if copied.kind is Kind.TENSOR else copied
    return Value(Kind.UNKNOWN, qualname=q + "()")


#: what parses a version string into an object that compares as versions do
_VERSION_PARSERS = frozenset({"packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version"})


def _version(ev: "EvaluatorView", text: Value) -> tuple[int, int, int] | None:
    """The version ``version.parse(text)`` stands for, as three numbers that compare as the parsed versions do
    (``2.3`` is ``2.3.0``): of a constant string, or of ``torch.__version__``, which is the torch the analysis
    targets (so ``if version.parse(torch.__version__) >= version.parse("2.3"):`` is decided, as Dynamo, which
    runs the check while tracing, decides it).  None for anything else, or a version with a pre-release part
    (``2.3.0a0`` sorts before ``2.3.0``)."""
    if text.qualname == "torch.__version__":
        major, minor = (ev.p.settings or Settings()).target_torch
        return major, minor, 0
    if not isinstance(text.const, str):
        return None
    m = re.fullmatch(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(\+[\w.]+)?", text.const.strip())
    if m is None:
        return None
    return int(m[1]), int(m[2] or 0), int(m[3] or 0)


#: the qualified name of a class ``collections.namedtuple`` made (its ``keys`` are its fields)
NAMEDTUPLE_CLASS = "collections.namedtuple()"


def _namedtuple_fields(names: Value | None) -> tuple[str, ...] | None:
    """The fields ``collections.namedtuple(name, names)`` gives its class, when ``names`` is constant: a
    string of names split at commas and spaces, or a tuple/list of strings."""
    if names is None:
        return None
    if isinstance(names.const, str):
        fields = tuple(names.const.replace(",", " ").split())
    elif names.kind is Kind.SEQUENCE and names.items is not None \
            and all(isinstance(i.const, str) for i in names.items):
        fields = tuple(i.const for i in names.items)
    else:
        return None
    return fields if fields and all(f.isidentifier() and not f.startswith("_") for f in fields) else None


def namedtuple_instance(cls: Value, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """An instance of a ``collections.namedtuple`` class: a tuple of the values passed, each also read by
    its field's name (``out.probs``); a field left to its default is not known."""
    fields = cls.keys or ()
    given = {**dict(zip(fields, args)), **kwargs}
    if len(args) > len(fields) or any(k not in fields for k in kwargs):
        return UNKNOWN_VALUE
    items = tuple(given.get(f, UNKNOWN_VALUE) for f in fields)
    return sequence(items=items).with_(keys=fields)


#: the copies of a dataclass's fields ``dataclasses`` makes (deep copies: a tensor field breaks the graph)
_RECORD_COPIES = frozenset({"dataclasses.asdict", "dataclasses.astuple"})


def _record_copy(ev: "EvaluatorView", record: Value, as_dict: bool) -> Value:
    """``dataclasses.asdict(r)`` / ``astuple(r)`` of a dataclass instance: a dict or tuple of its fields'
    values, in field order (made outside the graph where a field is a tensor, which the call breaks on)."""
    assert record.cls is not None
    names = ev.p.classes.record_fields(record.cls)
    values = [ev.p.classes.member(record, n) for n in names]
    if as_dict:
        return mapping(join_all(values) if values else None, dict(zip(names, values)))
    return sequence(items=values)


def _partial(target: Value, bound: list[Value], keywords: dict[str, Value]) -> Value:
    """``functools.partial(f, ...)``, which Dynamo traces: what calling it calls, when that is ``f`` called
    with the same arguments (it binds none), or ``f`` is a library's class and it binds keywords alone, which
    do not change what is built (``partial(nn.LayerNorm, eps=1e-6)`` builds a LayerNorm); a torch function
    that returns one tensor whatever its keywords (``partial(F.smooth_l1_loss, beta=0.5)``: not one of
    :data:`~dynalint.analysis.knowledge.MULTI_OUTPUT`, nor given a keyword that makes it return several)
    gives a tensor, what breaks in it not known; else unknown (a function's keywords may change what it
    returns, ``partial(torch.max, dim=0)`` a pair, and a function of the checked code would be analysed
    without the arguments bound)."""
    if not bound and not keywords:
        return target
    q = target.qualname
    if not bound and q is not None and target.func is None and target.cls is None and not target.choices \
            and q.rpartition(".")[2][:1].isupper():
        return target
    last = (q or "").rpartition(".")[2]
    if q is not None and q.startswith("torch.") and target.kind is not Kind.MODULE and last[:1].islower() \
            and not q.endswith("()") and last not in K.MULTI_OUTPUT | K.MULTI_OUTPUT_WITH_DIM \
            and not set(keywords) & K.MULTI_OUTPUT_FLAGS:
        return Value(Kind.UNKNOWN, qualname=K.ANNOTATED_CALLABLE, element=tensor())
    return Value(Kind.UNKNOWN, qualname="functools.partial()")


def traced_random(v: Value) -> bool:
    """A number ``random.randint``/``randrange``/``uniform`` (of the module or of a ``random.Random``, whose
    ``random()`` too) drew in traced code (see ``knowledge.TRACED_RANDOM_FUNCS``)."""
    return v.kind is Kind.PYTHON and K.traced_random_draw(v.qualname)


def python_number(v: Value) -> bool:
    """A Python number, size or number taken from tensor data (an element of ``t.tolist()``, a plain ``int``
    where Dynamo resumes after the break that took it): what Dynamo cannot combine with a traced random number
    (a tensor can; measured on torch 2.13)."""
    return (v.kind is Kind.PYTHON and not v.is_bool and v.qualname is None) \
        or v.kind in (Kind.SIZE, Kind.SCALAR)


def numpy_array(name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """The array a NumPy function returns in compiled code: a tensor computed in the graph, whatever its
    arguments (see ``knowledge.NUMPY_ARRAY_FUNCS``)."""
    return tensor(is_bool=name in K.NUMPY_BOOL_FUNCS, params=merge_params(args) | merge_params(kwargs.values()),
                  zero_dim=name in K.NUMPY_REDUCTIONS and len(args) == 1 and not kwargs
                  ).with_(qualname=K.NUMPY_ARRAY)


#: keyword arguments of torch functions that place or type the result, not values it is computed from
_PLACEMENT_KWARGS = frozenset({"device", "dtype", "layout", "requires_grad", "pin_memory", "memory_format",
                               "rounding_mode", "out", "generator"})
#: tensor methods that keep what a tensor is (a graph input stays one: `n.long()` as a size does not break)
#: tensor methods that reduce the whole tensor to a 0-d one when called without a dim
_FULL_REDUCTIONS = frozenset({"argmax", "argmin", "max", "min", "sum", "mean", "prod", "amax", "amin",
                              "count_nonzero", "norm"})
#: torch functions that make a tensor of the data they are given (of one Python number: a 0-d tensor)
_SCALAR_TENSOR_FUNCS = frozenset({"tensor", "as_tensor", "asarray", "scalar_tensor"})
#: of those, the ones whose result Dynamo's fake tensor keeps the value of (``Value.lifted``; measured on torch
#: 2.13: ``torch.scalar_tensor(n).long()`` as an index breaks)
_LIFTING_FUNCS = frozenset({"tensor", "as_tensor"})
#: the methods of a ``torch.distributions`` distribution that give a tensor, and its divergences
_DISTRIBUTION_TENSOR_METHODS = frozenset({"log_prob", "sample", "rsample", "entropy", "cdf", "icdf", "perplexity"})
_DIVERGENCES = frozenset({"kl_divergence"})
#: torch functions whose result is 1-d whatever their arguments
_RANGE_FUNCS = frozenset({"arange", "linspace", "logspace", "randperm"})
#: torch functions whose first argument is the shape of their result
_SHAPED_FUNCS = frozenset({"zeros", "ones", "empty", "full", "rand", "randn"})


def _rank_of_sizes(args: list[Value]) -> int | None:
    """The number of dimensions the sizes a factory is given make: one per integer written by position
    (``torch.rand(5, 4)``), or one per item of a sequence passed alone (``torch.zeros((b, 4))``).  None for
    anything else: a size value may be a whole shape (``torch.zeros(x.shape)``)."""
    if len(args) == 1 and args[0].kind is Kind.SEQUENCE:
        return len(args[0].items) if args[0].items is not None else None
    if args and all(v.kind is Kind.PYTHON and type(v.const) is int for v in args):
        return len(args)
    return None


#: where the ``size`` of each traced function of NumPy's global RNG goes when passed by position (``rand`` and
#: ``randn`` take the shape itself): without it the call draws one number
_NUMPY_DRAW_SIZE = {"random": 0, "random_sample": 0, "sample": 0, "normal": 2, "uniform": 2, "randint": 2,
                    "integers": 2, "choice": 1, "standard_normal": 0}


def _numpy_size_given(q: str, node: cst.Call) -> bool:
    """A NumPy draw call that is given a ``size``: by keyword, or by position (:data:`_NUMPY_DRAW_SIZE`)."""
    at = _NUMPY_DRAW_SIZE.get(q.rsplit(".", 1)[-1])
    positional = [a for a in node.args if a.keyword is None]
    return any(a.keyword is not None and a.keyword.value == "size" for a in node.args) or (
        at is not None and len(positional) > at and not any(a.star for a in node.args))


def numpy_draw_is_number(q: str, node: cst.Call) -> bool:
    """A call of a traced function of NumPy's global RNG (:data:`TRACED_NUMPY_RANDOM`) that gives a number,
    which Dynamo reads from the tensor it draws (measured on torch 2.13: ``np.random.rand()``,
    ``np.random.normal(0.0, 1.0)`` and ``np.random.choice(5, size=3)`` break with "Data dependent operator";
    ``np.random.rand(3)``, ``np.random.normal(0.0, 1.0, size=(3,))``, ``np.random.shuffle(a)`` and
    ``np.random.seed(0)`` are traced)."""
    last = q.rsplit(".", 1)[-1]
    if last == "choice":
        return True
    if last in ("seed", "shuffle"):
        return False
    positional = [a for a in node.args if a.keyword is None]
    if any(a.star for a in node.args):
        return False  # (`np.random.rand(*x.shape)`: a shape, as far as can be told)
    if last in ("rand", "randn"):
        return not positional
    return not _numpy_size_given(q, node)


def _numbers(v: Value) -> bool:
    """A list or tuple of Python numbers written out (``[3, 1]``): a tensor of it is 1-d."""
    return v.kind is Kind.SEQUENCE and bool(v.items) and all(
        i.kind is Kind.PYTHON and not i.is_mapping and isinstance(i.const, (int, float, bool)) for i in v.items)


_KEEPS_PROVENANCE = frozenset({"long", "int", "float", "double", "half", "to", "type", "contiguous", "detach",
                               "cpu", "cuda"})


def _makes_bool(last: str, args: list[Value], kwargs: dict[str, Value]) -> bool:
    """Whether the torch function ``last`` makes a bool tensor of these arguments: a test, a ``dtype=torch.bool``
    (or ``bool``), and without a dtype given: a tensor of Python bools (``torch.tensor([n > 2 for n in lens])``),
    a bool fill value (``torch.full((n,), True)``), or a function that keeps its input's dtype given a mask
    (``torch.roll(mask, 1, 0)``)."""
    if last in _BOOL_RESULT or _dtype_arg([], kwargs) == "torch.bool":
        return True
    if "dtype" in kwargs or not args:
        return False
    first = args[0]
    if last in _SCALAR_TENSOR_FUNCS and first.kind is Kind.SEQUENCE and not first.is_mapping and first.items != ():
        return first.elements().kind is Kind.PYTHON and first.elements().is_bool
    if last == "full":
        return len(args) > 1 and args[1].kind is Kind.PYTHON and isinstance(args[1].const, bool)
    return last in _KEEPS_DTYPE and first.is_bool


#: torch functions that take a function without calling it while Dynamo traces them
_NOT_CALLING_ARGUMENTS = ("torch.compile", "torch.jit.", "torch._dynamo.", "torch.compiler.",
                          "torch.library.", "torch.fx.")


def _transformed(transform: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """What the function a torch.func ``transform`` returns gives when called: tensors (one per argument
    differentiated, when ``argnums`` is a tuple), paired with the auxiliary output under ``has_aux=True``
    (unknown when the flag is not a constant)."""
    if transform == "vmap":
        return tensor()
    argnums = kwargs.get("argnums", args[1] if len(args) > 1 else None)
    has_aux = kwargs.get("has_aux", args[2] if len(args) > 2 else None)
    out = sequence(element=tensor()) if argnums is not None and argnums.kind is Kind.SEQUENCE else tensor()
    if transform == "grad_and_value":
        out = sequence(items=(out, tensor()))
    if has_aux is None or has_aux.const is False:
        return out
    return sequence(items=(out, UNKNOWN_VALUE)) if has_aux.const is True else UNKNOWN_VALUE


def torch_call(ev: "EvaluatorView", q: str, last: str, args: list[Value], kwargs: dict[str, Value],
               node: cst.Call) -> Value:
    module = q.rsplit(".", 1)[0]
    params = merge_params(args) | merge_params(kwargs.values())
    if not q.startswith(_NOT_CALLING_ARGUMENTS):
        for given in (*args, *kwargs.values()):
            if given.kind is Kind.FUNCTION and given.func is not None and given.cls is None:
                # `checkpoint(block, x)`, `torch.cond(p, then_fn, else_fn, ops)`, `vmap(row_fn)`: Dynamo
                # traces the torch function, which calls it (with what, not known here)
                count = len(given.func.param_names()) - (given.bound_self is not None)
                _call_each(ev, given, [UNKNOWN_VALUE] * count)
    if q + "()" == K.SPARSE_TENSOR:
        return tensor(params=params).with_(qualname=K.SPARSE_TENSOR)
    if q in K.TENSOR_RESULT_UTILS:
        return tensor(params=params)
    if q in COMPILE_FUNCTIONS and args and args[0].kind is Kind.MODULE:
        # `torch.compile(model)`: the module, whose `forward` its calls run (also inside compiled code, which
        # traces the module as it is, measured on torch 2.13)
        return args[0]
    if q in K.FUNCTIONAL_CALLS and len(args) >= 3 and args[0].kind is Kind.MODULE:
        # `functional_call(model, params, (x,))` runs the module's forward on the inputs given
        given = args[2]
        inputs = list(given.items) if given.kind is Kind.SEQUENCE and given.items is not None else [given]
        return ev.p.calls.call_module(ev, args[0], inputs, {}, False)
    if q in K.FUNCTION_TRANSFORMS:
        return Value(Kind.UNKNOWN, qualname=K.ANNOTATED_CALLABLE, element=_transformed(last, args, kwargs))
    if module.startswith("torch.distributions") and (
            last in _DIVERGENCES or ("()." in q and last in _DISTRIBUTION_TENSOR_METHODS)):
        return tensor(params=params)  # `Normal(mu, s).log_prob(x)`, `kl_divergence(p, q)`
    if q.startswith("torch.nn.") and module != "torch.nn.functional" and last[:1].isupper():
        if last in K.NN_TENSOR_CLASSES:
            # a parameter or buffer has the shape of the tensor it wraps
            data = args[0] if args else kwargs.get("data")
            zero = data is not None and data.kind is Kind.TENSOR and data.zero_dim
            return tensor(from_weights=True).with_(zero_dim=True, ndim=0) if zero else tensor(from_weights=True)
        if last in ("ParameterList", "ParameterDict"):
            # its entries are parameters: inputs of the graph
            return Value(Kind.MODULE, qualname=q, element=tensor(from_weights=True, entered=True))
        if last in ("ModuleList", "Sequential", "ModuleDict"):
            # its entries: the modules given (`Sequential(a, b)`), or those of the list or dict given
            given = args[0] if len(args) == 1 and (args[0].kind is Kind.SEQUENCE or args[0].is_mapping) else None
            modules = [v for v in args if v.kind is Kind.MODULE]
            element = given.element if given is not None and given.is_mapping else \
                given.elements() if given is not None else join_all(modules) if modules else None
            return Value(Kind.MODULE, qualname=q, element=element if element is not None and
                         element.kind is Kind.MODULE else Value(Kind.MODULE))
        return Value(Kind.MODULE, qualname=q)
    if module == "torch" and last[:1].isupper():
        if last == "Size":
            return SIZE_VALUE
        if last.endswith("Tensor"):
            return tensor(is_bool=last == "BoolTensor")
        return Value(Kind.UNKNOWN, qualname=q + "()")
    if last in K.DATA_READING_OPS and K.aten_name(q) == last and any(a.is_tensor for a in args[:2]):
        return Value(Kind.SCALAR, origin=node, origin_in_loop=ev.in_loop(), is_bool=True)
    if last in K.TORCH_PYTHON_FUNCS:
        if last in ("finfo", "iinfo", "device"):
            return Value(Kind.PYTHON, qualname=q + "()")  # an object the breaks classifier recognises
        return python(is_bool=last.startswith("is_") or last.startswith("are_"))
    if last in K.TORCH_SIZE_FUNCS:
        return SIZE_VALUE
    if module == "torch" or module in K.TORCH_TENSOR_SUBMODULES:
        if args and last not in K.TORCH_CREATION_FUNCS:
            # the input of a torch op is a tensor; its other arguments are often sizes or numbers,
            # except for ops known to take two tensors (losses, products, where)
            inputs = args[:2] if last in K.TORCH_TWO_TENSOR_FUNCS or last.endswith("_loss") else args[:1]
            if last == "where" and len(args) == 3:
                inputs = args
            for v in inputs:
                for part in (v, *(v.items or ())) if v.kind is Kind.SEQUENCE else (v,):
                    if part.kind is Kind.UNKNOWN and part.params:
                        ev.tensor_evidence(part)
        tensors = [v for v in (*args, *kwargs.values()) if v.kind is Kind.TENSOR]
        made = derived((*args, *(v for k, v in kwargs.items() if k not in _PLACEMENT_KWARGS)))
        if last in K.TORCH_CREATION_FUNCS:
            # a factory builds a graph tensor, even of a Python number (measured: a size from
            # `torch.ones(3).sum()` or `torch.scalar_tensor(n)` breaks)
            made["constant"] = False
        weights = all(v.from_weights for v in tensors) and not any(
            v.kind is Kind.UNKNOWN for v in (*args, *kwargs.values())) and last not in K.TORCH_RANDOM_FUNCS
        if last == "where" and len(args) == 1 and not kwargs:
            return sequence(element=tensor(params=params, **made))
        if last in K.MULTI_OUTPUT or _multi_output(last, args[1:], kwargs):
            out = sequence(element=tensor(params=params, from_weights=weights, **made))
            return _unique_outputs(out, kwargs) if last == "unique" else out
        if last in ("cat", "stack", "concat", "concatenate", "hstack", "vstack") and args:
            first = args[0]
            is_bool = first.kind is Kind.SEQUENCE and first.elements().is_bool
            return tensor(is_bool=is_bool, params=params | merge_params([first.elements()]),
                          from_weights=weights, **made)
        is_bool = _makes_bool(last, args, kwargs)
        if last == "where" and len(args) == 3:
            is_bool = args[1].is_bool and args[2].is_bool
        if last in ("zeros_like", "ones_like", "empty_like", "full_like", "clone") and args and args[0].is_bool \
                and "dtype" not in kwargs:
            is_bool = True
        out = tensor(is_bool=is_bool, params=params, from_weights=weights, **made)
        if last in _RANGE_FUNCS or (last in _SCALAR_TENSOR_FUNCS and len(args) == 1 and _numbers(args[0])):
            return out.with_(ndim=1)  # `torch.arange(n)`, `torch.tensor([3, 1])`: 1-d
        if last in _SHAPED_FUNCS and args and args[0].kind is Kind.SEQUENCE and args[0].items == ():
            return out.with_(zero_dim=True, ndim=0)  # `torch.ones(())`
        rank = _rank_of_sizes(args if last != "full" else args[:1])
        if last in _SHAPED_FUNCS and rank:
            return out.with_(ndim=rank)  # `torch.rand(5)`, `torch.zeros(b, 4)`, `torch.full((2, 3), v)`
        if last in _SCALAR_TENSOR_FUNCS and len(args) == 1 and args[0].kind in (Kind.PYTHON, Kind.SCALAR, Kind.SIZE) \
                and not args[0].is_mapping:
            # `torch.tensor(0.07)`: a tensor of one Python number is 0-d, and its fake tensor keeps the value
            return out.with_(zero_dim=True, ndim=0,
                             lifted=last in _LIFTING_FUNCS and args[0].kind is Kind.PYTHON
                             and kwargs.keys() <= {"dtype", "device"})
        return out
    if q == "torch.autograd.grad":
        return sequence(element=tensor())
    if q in K.DISABLE_FUNCS and args:
        return Value(Kind.PYTHON, qualname=q + "()")  # the wrapped function: calling it is skipped
    if K.disabled_function(q):
        return UNKNOWN_VALUE  # what a skipped function returns
    if q.startswith("torch._dynamo.") or q.startswith("torch.compiler."):
        return NONE_VALUE
    return Value(Kind.UNKNOWN, qualname=q + "()")


#: builtin classes no module is an instance of
_BUILTIN_CONTAINERS = frozenset({"list", "tuple", "dict", "set", "frozenset", "str", "bytes", "int", "float",
                                 "bool", "complex"})


def _never_a_builtin_instance(ev: "EvaluatorView", value: Value, classes: cst.BaseExpression) -> bool:
    """``isinstance(net, list)`` of a module the analysis knows for one: never, so ``if not isinstance(nets,
    list): nets = [nets]`` is decided, as Dynamo decides it while tracing.  (Not of a tensor: what an
    attribute holds may be a tensor on one path and a number on another, ``self.alpha = float(alpha)``.)"""
    if value.maybe_none or value.kind is not Kind.MODULE or value.assumed or value.guessed:
        return False
    names = classes.elements if isinstance(classes, cst.Tuple) else (cst.Element(classes),)
    return all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name)
               and e.value.value in _BUILTIN_CONTAINERS and ev.is_builtin(e.value, e.value.value)
               for e in names)


def _instance_of(ev: "EvaluatorView", obj: Value, classes: Value) -> bool:
    """``isinstance(obj, classes)`` is true whatever ``obj`` is at run time: each of its alternatives is an
    instance (never None) of a class of the checked code that has one of ``classes`` (classes of the checked
    code) among its bases.  Dynamo decides the test while tracing, so only the branch it holds runs.  A
    value's class is the least it is (a subclass may come instead), so a test that fails for that class
    is not known to fail.  Each class whose bases are read is touched first (an edit of them changes the
    answer)."""
    targets = classes.items if classes.kind is Kind.SEQUENCE and classes.items is not None else (classes,)
    wanted = {id(t.cls) for t in targets if t.is_class}

    def derives(cls: "ClassInfo") -> bool:
        ev.p.classes.touch_class(cls)
        return any(id(c) in wanted for c in cls.mro())

    return bool(wanted) and all(
        v.cls is not None and v.kind is not Kind.FUNCTION and not v.maybe_none and derives(v.cls)
        for v in obj.alternatives)


def _is_tensor_instance(ev: "EvaluatorView", obj: Value, node: cst.Call) -> bool:
    """``isinstance(obj, torch.Tensor)`` is true whatever ``obj`` is at run time: each of its alternatives
    is a tensor the analysis knows of (computed by torch, or declared), not only one it took an untyped
    value for, and not a NumPy array.  Dynamo decides the test while tracing: the other branch never runs
    there (``if isinstance(clip, Tensor): ... elif clip > 0:`` with a tensor ``clip``)."""
    named = dotted_name(node.args[1].value) if len(node.args) == 2 and not node.args[1].star else None
    if named is None or (ev.p.index.resolve(named) or named) != "torch.Tensor":
        return False
    return all(v.kind is Kind.TENSOR and not v.assumed and not v.maybe_none and v.qualname != K.NUMPY_ARRAY
               for v in obj.alternatives)


def builtin_call(ev: "EvaluatorView", name: str, args: list[Value], kwargs: dict[str, Value],
                 node: cst.Call) -> Value:
    first = args[0] if args else None
    if name == "len":
        if first is None:
            return UNKNOWN_VALUE
        if call_special(ev, first, "__len__", []) is not None:
            return PYTHON_VALUE
        if first.kind is Kind.TENSOR:
            return dimension_size(first, python(0))
        if first.kind is Kind.SIZE:
            return SIZE_VALUE
        if first.kind in (Kind.SEQUENCE, Kind.PYTHON, Kind.MODULE):
            return PYTHON_VALUE
        return UNKNOWN_VALUE
    if name in ("int", "float", "bool", "complex"):
        if first is None:
            return python(is_bool=name == "bool")
        if first.kind is Kind.TENSOR and not first.maybe_none:
            if first.qualname == K.NUMPY_ARRAY:
                return UNKNOWN_VALUE  # a NumPy array's number: see ``knowledge.NUMPY_ARRAY``
            return Value(Kind.SCALAR, origin=node, origin_in_loop=ev.in_loop(),
                         from_weights=first.from_weights, is_bool=name == "bool")
        if first.kind in (Kind.SIZE, Kind.SCALAR):
            return first.with_(is_bool=name == "bool")
        if first.kind is Kind.PYTHON:
            return python(is_bool=name == "bool")
        return UNKNOWN_VALUE
    if name in ("str", "repr", "format", "ascii", "chr", "ord", "hex", "oct", "bin"):
        return python(is_bool=False)
    if name in ("isinstance", "issubclass", "hasattr", "callable"):
        if name == "isinstance" and first is not None:
            ev.not_tensor_evidence(first)
            if len(args) == 2 and (_instance_of(ev, first, args[1]) or _is_tensor_instance(ev, first, node)):
                return python(True)
            if len(args) == 2 and _never_a_builtin_instance(ev, first, node.args[1].value):
                return python(False)
        return python(is_bool=True)
    if name in ("id", "hash"):
        return PYTHON_VALUE
    if name == "type" and len(args) == 1 and not kwargs and first is not None and first.cls is not None \
            and first.kind is not Kind.FUNCTION:
        return Value(Kind.FUNCTION, cls=first.cls)  # `type(self)`: the class, which `type(self)(...)` calls
    if name in _TENSOR_RETURNING_BUILTINS_SET:
        values = list(args)
        if len(values) == 1 and values[0].kind is Kind.SEQUENCE:
            values = [values[0].elements()]
        kinds = {v.kind for v in values}
        if Kind.TENSOR in kinds:
            return tensor(params=merge_params(values), **derived(values))
        if Kind.UNKNOWN in kinds or not kinds:
            return UNKNOWN_VALUE
        if Kind.SCALAR in kinds:
            return next(v for v in values if v.kind is Kind.SCALAR)
        if Kind.SIZE in kinds:
            return DYNAMIC_SIZE if any(v.dynamic for v in values) else SIZE_VALUE  # (`max(h - th, 0)`)
        return PYTHON_VALUE
    if name == "range":
        for a in args:
            if a.kind is Kind.UNKNOWN and a.params:
                ev.not_tensor_evidence(a)
        kinds = {a.kind for a in args}
        if Kind.SCALAR in kinds:
            return sequence(element=next(a for a in args if a.kind is Kind.SCALAR))
        if Kind.SIZE in kinds:
            return sequence(element=SIZE_VALUE)
        if kinds <= {Kind.PYTHON}:
            return sequence(element=PYTHON_VALUE)
        return sequence(element=UNKNOWN_VALUE)
    if name == "enumerate" and first is not None:
        return sequence(element=sequence(items=(PYTHON_VALUE, first.elements())))
    if name == "zip":
        return sequence(element=sequence(items=tuple(a.elements() for a in args)))
    if name in _SEQUENCE_BUILTINS and first is not None:
        return sequence(element=first.elements())
    if name in ("any", "all"):
        return python(is_bool=True)
    if name == "getattr" and len(args) >= 2 and isinstance(args[1].const, str) and first is not None:
        return ev.attribute(first, args[1].const, node)
    if name == "getattr" and len(args) == 2 and len(node.args) == 2 and not any(a.star for a in node.args) \
            and first is not None and first.cls is not None and not kwargs:
        return _named_method(ev, first, first.cls, node.args[1].value, node)
    if name in ("print", "setattr", "delattr", "exec", "breakpoint"):
        return NONE_VALUE
    if name == "dict":
        if not args and not any(a.star for a in node.args):
            # `dict(mean=m, std=s)`: its keys are the keywords
            return mapping(join_all(kwargs.values()) if kwargs else None, dict(kwargs))
        return args[0] if len(args) == 1 and not kwargs and args[0].is_mapping else mapping(None)
    if name == "map" and len(args) >= 2:
        mapped = _call_each(ev, args[0], [a.elements() for a in args[1:]], node)
        return sequence(element=mapped if mapped is not None else UNKNOWN_VALUE)
    if name == "filter" and len(args) == 2:
        kept = _call_each(ev, args[0], [args[1].elements()])
        if kept is not None and kept.is_tensor:
            # `filter` takes the truth of what the function returns for each element (measured on torch 2.13:
            # "Data-dependent branching" at `filter(lambda r: r.sum() > 0, rows)`)
            ev.report(E.ConditionEvent, node, value=kept, construct="filter")
        return sequence(element=args[1].elements())
    if name in ("map", "filter"):
        return sequence(element=UNKNOWN_VALUE)
    if name == "open":
        return Value(Kind.UNKNOWN, qualname=K.OPEN_FILE)  # a file object: its methods are not traced
    return UNKNOWN_VALUE


def _named_method(ev: "EvaluatorView", obj: Value, cls: "ClassInfo", name: cst.BaseExpression,
                  node: cst.Call) -> Value:
    """``getattr(obj, "{}_reduction".format(kind))`` (or an f-string, or ``"prefix" + kind``): the name is
    not known, but its constant parts are, and without a default ``getattr`` finds an attribute of that
    name: one of the methods of ``obj``'s class whose names fit (a choice of them, see
    :attr:`Value.choices`)."""
    pattern = _name_pattern(name)
    if pattern is None:
        return UNKNOWN_VALUE
    prefix, suffix = pattern
    ev.p.classes.touch_class(cls)
    names = sorted({m for c in cls.mro() for m in c.methods
                    if m.startswith(prefix) and m.endswith(suffix) and len(m) > len(prefix) + len(suffix)})
    if not names or not (prefix or suffix):
        return UNKNOWN_VALUE
    return join_all(ev.attribute(obj, m, node) for m in names)


def _name_pattern(node: cst.BaseExpression) -> tuple[str, str] | None:
    """(prefix, suffix) of a string made of constant text around one unknown part: ``"{}_x".format(a)``,
    ``f"{a}_x"``, ``"x_" + a``; None otherwise."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format" \
            and isinstance(node.func.value, cst.SimpleString) and len(node.args) == 1 and not node.args[0].keyword:
        text = node.func.value.evaluated_value
        if isinstance(text, str) and text.count("{}") == 1 and text.count("{") == 1:
            prefix, _, suffix = text.partition("{}")
            return prefix, suffix
        return None
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        holes = [i for i, p in enumerate(parts) if isinstance(p, cst.FormattedStringExpression)]
        if len(holes) != 1 or any(not isinstance(p, cst.FormattedStringText) for i, p in enumerate(parts)
                                  if i != holes[0]):
            return None
        text = [p.value if isinstance(p, cst.FormattedStringText) else "" for p in parts]
        return "".join(text[:holes[0]]), "".join(text[holes[0] + 1:])
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        if isinstance(node.left, cst.SimpleString) and not isinstance(node.right, cst.SimpleString):
            text = node.left.evaluated_value
            return (text, "") if isinstance(text, str) else None
        if isinstance(node.right, cst.SimpleString) and not isinstance(node.left, cst.SimpleString):
            text = node.right.evaluated_value
            return ("", text) if isinstance(text, str) else None
    return None


_TENSOR_RETURNING_BUILTINS_SET = frozenset({"max", "min", "abs", "sum", "round", "pow"})


def _body_read(ev: "EvaluatorView", fn: "FunctionInfo") -> bool:
    """The caller reads the body of ``fn`` (an edit of it changes what the caller found: see
    :mod:`dynalint.analysis.replay`); true."""
    tracker = ev.p.tracker
    if tracker is not None:
        tracker.touch(function_token(fn))
    return True


def _wraps_compiling_query(fn: cst.FunctionDef, module: cst.Module | None) -> bool:
    """Whether ``fn`` is named as torch's "is Dynamo tracing?" queries are and reads one of them, in its
    body or in a module-level assignment of a name its body reads (by attribute, or by name as ``getattr``
    takes it): a wrapper that answers as torch's does."""
    if fn.name.value not in K.COMPILING_TRUE_SUFFIXES:
        return False
    read = set()
    for node in walk(fn.body):
        if _names_compiling_query(node):
            return True
        if isinstance(node, cst.Name):
            read.add(node.value)
    for stmt in module.body if module is not None else ():
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value in read for t in small.targets):
                if any(_names_compiling_query(node) for node in walk(small.value)):
                    return True
    return False


def _names_compiling_query(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Attribute):
        return node.attr.value in K.COMPILING_TRUE_SUFFIXES
    return isinstance(node, cst.SimpleString) and node.value.strip("\"'") in K.COMPILING_TRUE_SUFFIXES
