"""Expression handlers: names, literals, attributes, subscripts, operators, containers, comprehensions.

Each handler returns the abstract value of its expression and reports the events rules need (global and
attribute reads, subscripts, comparisons, uses of data-dependent scalars); calls are delegated to
:mod:`dynalint.analysis.calls`.
"""
from __future__ import annotations

import builtins as _builtins

import libcst as cst

from dynalint.analysis import calls
from dynalint.analysis import events as E
from dynalint.analysis import knowledge as K
from dynalint.analysis.evaluator.arith import _compare, arith
from dynalint.analysis.module_index import ModuleIndex
from dynalint.analysis.syntax import literal_value
from dynalint.analysis.tensor_members import TENSOR_MEMBERS
from dynalint.analysis.values import (
    NO_CONST,
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

_BUILTIN_NAMES = frozenset(dir(_builtins))
#: a size compared with 0 or 1 (operator, the literal) -> the truth of the test for a dimension that is not empty
_NONEMPTY_SIZE_TESTS = {(cst.GreaterThan, "0"): True, (cst.GreaterThanEqual, "1"): True, (cst.NotEqual, "0"): True,
                        (cst.Equal, "0"): False, (cst.LessThan, "1"): False, (cst.LessThanEqual, "0"): False}


class ExpressionHandlers:
    """The expression part of :class:`~dynalint.analysis.evaluator.core.FunctionEvaluator`."""

    def lookup(self, node: cst.Name, record: bool = True) -> Value:
        name = node.value
        if name in self.env:
            return self.env[name]
        if name == "True":
            return python(True)
        if name == "False":
            return python(False)
        if name == "None":
            return NONE_VALUE
        fn = self.fn
        if fn is not None and name in fn.local_names:
            return UNKNOWN_VALUE  # assigned later (e.g. in a loop) or conditionally
        if fn is not None and fn.closure is not None and name in fn.closure:
            return fn.closure[name]
        v = self.p.names.global_value(name)
        if v is not None:
            if record and name in self.p.index.globals:
                self.report(E.GlobalReadEvent, node, name=name, value=v)
            return v
        if name in _BUILTIN_NAMES:
            return Value(Kind.PYTHON, qualname=f"builtins.{name}")
        return UNKNOWN_VALUE

    def use_scalar(self, v: Value, node: cst.CSTNode, context: str = "") -> None:
        """A data-dependent scalar is consumed by Python code (arithmetic, a call, a test...)."""
        if v.kind is Kind.SCALAR and v.origin is not None:
            self.report(E.ScalarUseEvent, node, value=v, context=context)

    def _name(self, node: cst.Name) -> Value:
        return self.lookup(node)

    def _literal(self, node: cst.CSTNode) -> Value:
        try:
            return python(literal_value(node))
        except Exception:
            return PYTHON_VALUE

    def _fstring(self, node: cst.FormattedString) -> Value:
        tensor_text = False
        formatted: list[tuple[Value, bool]] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                v = self.expr(part.expression)
                tensor_text = tensor_text or (v.is_tensor and not v.maybe_none
                                              and v.qualname != K.NUMPY_ARRAY)
                formatted.append((v, bool(part.format_spec)))
                if part.format_spec:
                    for sp in part.format_spec:
                        if isinstance(sp, cst.FormattedStringExpression):
                            self.expr(sp.expression)
        if any(v.dynamic for v, _ in formatted):
            self.report(E.FormattedStringEvent, node, values=tuple(v for v, _ in formatted),
                        specified=tuple(s for _, s in formatted))
        return Value(Kind.PYTHON, qualname=calls.TENSOR_TEXT) if tensor_text else python(is_bool=False)

    def _concat(self, node: cst.ConcatenatedString) -> Value:
        self.expr(node.left)
        self.expr(node.right)
        return PYTHON_VALUE

    def _attribute(self, node: cst.Attribute) -> Value:
        unresolved = calls.super_property(self, node)
        if unresolved is not None:
            return unresolved
        base = self.expr(node.value)
        v = self.attribute(base, node.attr.value, node)
        if base.kind is Kind.TENSOR and (base.qualname == K.NUMPY_ARRAY or base.cls is not None):
            self.report(E.TensorAttributeReadEvent, node, name=node.attr.value, value=base)
        elif base.kind is Kind.MODULE and base.qualname in K.NN_RNN_CLASSES:
            self.report(E.ModuleAttributeReadEvent, node, name=node.attr.value, value=base)
        if v.kind is Kind.MODULE and v.qualname in K.NN_RNN_CLASSES and self.is_state(node.value):
            # the module itself read as a value (`if self.lstm is not None:`), not called (a call reads the
            # callee apart): Dynamo builds it as it loads it
            self.report(E.ModuleAttributeReadEvent, node, name="", value=v)
        if self.is_state(node.value):
            self.report(E.AttributeEvent, node, cls=self.fn.cls, name=node.attr.value, value=v)
        elif base.is_class:
            self.report(E.AttributeEvent, node, cls=base.cls, name=node.attr.value, value=v, on_class=True)
        elif (held := self.held_object(node.value, base)) is not None:
            self.report(E.AttributeEvent, node, cls=base.cls, name=node.attr.value, value=v, path=held)
        elif base.cls is not None and type(node.value) is cst.Name and node.value.value in self.env \
                and base.kind in (Kind.UNKNOWN, Kind.MODULE) and not self.is_self(node.value):
            # (an object a global holds is one DYN201 reports the changes of)
            self.report(E.ObjectAttributeReadEvent, node, cls=base.cls, name=node.attr.value, value=v)
        return v

    def attribute(self, base: Value, attr: str, node: cst.CSTNode) -> Value:
        if base.is_mapping and attr in ("get", "__getitem__") and base.element is not None:
            # `d.get` as a function (`min(d, key=d.get)`): it gives the dict's values
            return Value(Kind.PYTHON, qualname=calls.MAPPING_LOOKUP, element=base.element)
        if base.qualname is not None and base.kind in (Kind.UNKNOWN, Kind.PYTHON) and not base.is_mapping:
            q = f"{base.qualname}.{attr}"
            if base.qualname.endswith("()"):
                return Value(Kind.UNKNOWN, qualname=q)
            return self.p.names.qualified_value(q)
        if base.kind is Kind.TENSOR:
            if attr in K.SIZE_ATTRS:
                return RANK_VALUE if attr in K.RANK_READS else shape_of(base)
            if attr in K.PYTHON_ATTRS:
                return PYTHON_VALUE
            if attr in K.TENSOR_ATTRS:
                return tensor(params=base.params, from_weights=base.from_weights, **derived((base,)))
            return UNKNOWN_VALUE
        if base.kind is Kind.UNKNOWN and base.params:
            if attr in K.SIZE_ATTRS or attr in K.PYTHON_ATTRS or attr in K.TENSOR_ATTRS:
                self.tensor_evidence(base)
            elif attr in K.CONTAINER_METHODS or attr not in TENSOR_MEMBERS:
                self.not_tensor_evidence(base)  # (`cfg.temperature`: no tensor has it)
            return Value(Kind.UNKNOWN, params=base.params)
        if base.kind is Kind.SEQUENCE and base.keys is not None:
            field = base.entry(attr)  # a field of a `collections.namedtuple`
            if field is not None:
                return field
        if base.kind is Kind.SEQUENCE and attr in ("values", "indices") and base.element is not None:
            return base.element
        if base.cls is not None:
            return self.p.classes.member(base, attr, self if self.emit else None)
        if base.choices:
            return join_all(self.attribute(c, attr, node) for c in base.choices)
        if base.kind is Kind.MODULE:
            if attr == "training":
                return python(is_bool=True)
            if attr in ("weight", "bias") and base.qualname and base.qualname.startswith("torch.nn."):
                return tensor(from_weights=True, entered=True)
        return UNKNOWN_VALUE

    def _subscript_expr(self, node: cst.Subscript) -> Value:
        return self.subscript(node, store=False)

    def subscript(self, node: cst.Subscript, store: bool, augmented: bool = False, operand: Value | None = None
                  ) -> Value:
        base = self.expr(node.value)
        index: list[Value] = []
        bounds: list[Value] = []
        multi = len(node.slice) > 1
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Index):
                v = self.expr(s.value)
                self.use_scalar(v, s.value)
                index.append(v)
                if isinstance(s.value, (cst.Ellipsis,)) or (isinstance(s.value, cst.Name) and s.value.value == "None"):
                    multi = True
            else:
                for part in (s.lower, s.upper, s.step):
                    if part is not None:
                        bound = self.expr(part)
                        self.use_scalar(bound, part)  # `x[:n]`: the result's shape specialises on n
                        bounds.append(bound)
                index.append(Value(Kind.PYTHON, qualname="builtins.slice"))
                multi = multi or len(node.slice) > 1
        idx = tuple(index)
        # a boolean tensor selects a data-dependent number of elements of whatever array it indexes
        # (a tensor, or a NumPy array, which Dynamo traces as one): reported even when the base is unknown
        masked = base.kind is Kind.UNKNOWN and any(ix.is_tensor and ix.is_bool for ix in idx)
        if base.kind in (Kind.TENSOR, Kind.SEQUENCE, Kind.SIZE) or base.qualname is not None or masked:
            self.report(E.SubscriptEvent, node, base=base, index=idx, store=store, augmented=augmented,
                        bounds=tuple(bounds), operand=operand)
        if base.kind is Kind.UNKNOWN and base.params and multi:
            self.tensor_evidence(base)
        if len(idx) == 1 and isinstance(idx[0].const, str) and base.params:
            self.not_tensor_evidence(base)  # `config["dim"]`: a mapping, whatever the parameter looked like
        if not store and len(idx) == 1:
            item = calls.call_special(self, base, "__getitem__", [idx[0]])
            if item is not None:
                return item
        return self.index_value(base, idx, node)

    def index_value(self, base: Value, idx: tuple[Value, ...], node: cst.Subscript) -> Value:
        k = base.kind
        if k is Kind.TENSOR and base.assumed and len(idx) == 1 and isinstance(idx[0].const, str):
            return Value(Kind.UNKNOWN, params=base.params)  # only a mapping takes a string key
        if k is Kind.TENSOR:
            out = tensor(is_bool=base.is_bool, params=base.params | merge_params(idx),
                         from_weights=base.from_weights, **derived((base, *idx))).with_(qualname=base.qualname)
            if base.ndim == 1 and len(idx) == 1 and (idx[0].kind is Kind.SIZE or _python_int(idx[0])):
                return out.with_(zero_dim=True, ndim=0)  # one element of a 1-d tensor
            ndim = _basic_indexing_rank(base.ndim, idx) if base.ndim is not None else None
            return out.with_(ndim=ndim, zero_dim=ndim == 0) if ndim is not None else out
        if k is Kind.SIZE:
            return dimension_size(base, idx[0]) if len(idx) == 1 else SIZE_VALUE
        if k is Kind.SCALAR:
            return base
        if base.is_mapping:
            known = base.entry(idx[0].const) if len(idx) == 1 else None
            if known is not None:
                return known
            if base.element is not None:
                return base.element
        if k is Kind.SEQUENCE:
            if len(idx) == 1 and idx[0].qualname == "builtins.slice":
                return base
            if len(idx) == 1 and base.items is not None and isinstance(idx[0].const, int):
                i = idx[0].const
                if -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return base.elements()
        if k is Kind.MODULE:
            if base.element is not None and base.element.kind is Kind.TENSOR:
                return base.element  # an entry of an `nn.ParameterList`/`ParameterDict`
            return Value(Kind.MODULE, cls=base.element.cls if base.element else None,
                         qualname=base.element.qualname if base.element else None)
        if base.cls is not None and len(idx) == 1 and type(idx[0].const) is int \
                and self.p.classes.is_record(base.cls):
            # `dec[0]` of a NamedTuple: its first field
            fields = self.p.classes.record_fields(base.cls)
            if -len(fields) <= idx[0].const < len(fields):
                return self.attribute(base, fields[idx[0].const], node)
        if k is Kind.UNKNOWN and len(idx) > 1 and any(ix.is_tensor and not ix.is_bool for ix in idx):
            # `mat[rows, cols]` with index tensors: only an array takes several indices with tensors among
            # them (a NumPy array is traced as a tensor), and picks a tensor of elements
            assumed = bool(base.params) or any(ix.assumed for ix in idx if ix.kind is Kind.TENSOR)
            return tensor(params=base.params | merge_params(idx), assumed=assumed)
        if k is Kind.UNKNOWN and base.params:
            return Value(Kind.UNKNOWN, params=base.params)
        return UNKNOWN_VALUE

    def _call(self, node: cst.Call) -> Value:
        return calls.evaluate_call(self, node)

    def binop(self, left: Value, right: Value, op: cst.CSTNode, node: cst.CSTNode | None = None) -> Value:
        return arith(left, right, op)

    def _binary(self, node: cst.BinaryOperation) -> Value:
        left = self.expr(node.left)
        right = self.expr(node.right)
        self.use_scalar(left, node.left)
        self.use_scalar(right, node.right)
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString,
                                                                            cst.FormattedString)):
            values = right.items if right.kind is Kind.SEQUENCE and right.items is not None else (right,)
            self.report(E.StringFormatEvent, node, values=tuple(values))
            return PYTHON_VALUE  # "%s" % value: string formatting
        if isinstance(node.operator, cst.MatrixMultiply):
            self.tensor_evidence(left)
            self.tensor_evidence(right)
        self.report(E.ArithmeticEvent, node, operands=(left, right))
        return arith(left, right, node.operator)

    def _unary(self, node: cst.UnaryOperation) -> Value:
        v = self.expr(node.expression)
        self.use_scalar(v, node.expression)
        if isinstance(node.operator, cst.Not):
            if v.has_const:
                try:
                    return python(not v.const)
                except Exception:
                    return python(is_bool=True)
            self._truth_test(node, v, "not")
            if v.kind is Kind.TENSOR:
                return python(is_bool=True)
            if v.kind in (Kind.SIZE, Kind.SCALAR):
                return v.with_(is_bool=True, const=NO_CONST)
            return python(is_bool=True) if v.kind is Kind.PYTHON else UNKNOWN_VALUE
        if v.has_const and isinstance(node.operator, cst.Minus) and isinstance(v.const, (int, float)):
            return python(-v.const)
        return v.with_(const=NO_CONST) if v.kind is not Kind.UNKNOWN else Value(Kind.UNKNOWN, params=v.params)

    def _boolean(self, node: cst.BooleanOperation) -> Value:
        left = self.expr(node.left)
        is_and = isinstance(node.operator, cst.And)
        if left.has_const:
            try:
                truth = bool(left.const)
            except Exception:
                truth = None
            if truth is not None:
                if is_and and not truth:
                    return left
                if not is_and and truth:
                    return left
                return self.expr(node.right)
        self._truth_test(node.left, left, "boolop")
        if not is_and and left.kind is Kind.SIZE and not left.maybe_none:
            # `n = max_len or lengths.max().item()` given a size: Dynamo reads the size's value and does not
            # run the other operand, which would only run for an empty dimension
            return left
        right = self.with_narrowing(node.left, is_and, lambda: self.expr(node.right))
        if right.has_const and isinstance(right.const, bool) and right.const is not is_and:
            # `a and not is_compiling()` is false and `a or True` true whatever `a` is: what follows
            # `... and` (`... or`) of it is decided, as Dynamo decides it while tracing
            return python(right.const, is_bool=True)
        if left.kind is Kind.TENSOR or right.kind is Kind.TENSOR:
            # the result is one of the operands: a tensor if both are, and the tensor on the right of a Python
            # bool, which Dynamo knows while tracing (`ok = self.batch_first and mask.all()`: the tensor where
            # the flag lets it be computed, as a test of the same `and` in a condition is taken)
            if left.kind is Kind.PYTHON and left.is_bool and right.kind is Kind.TENSOR:
                return right
            return join(left, right) if left.kind is right.kind else UNKNOWN_VALUE
        if left.kind is Kind.PYTHON and right.kind is Kind.PYTHON:
            return python(is_bool=left.is_bool and right.is_bool)
        return join(left, right)

    def _comparison(self, node: cst.Comparison) -> Value:
        left = self.expr(node.left)
        self.use_scalar(left, node.left)
        values = [left]
        identity = False
        for comp in node.comparisons:
            v = self.expr(comp.comparator)
            self.use_scalar(v, comp.comparator)
            values.append(v)
            op = comp.operator
            if isinstance(op, (cst.Is, cst.IsNot)):
                identity = True
                if isinstance(comp.comparator, cst.Name) and comp.comparator.value in ("True", "False"):
                    self.not_tensor_evidence(left)
            elif isinstance(op, (cst.In, cst.NotIn)):
                self.report(E.ContainmentEvent, node, container=v, key=values[-2])
                if v.kind is Kind.TENSOR:
                    if isinstance(values[-2].const, str):
                        self.not_tensor_evidence(v)  # `"dim" in kwargs`: a mapping, whatever it looked like
                        return python(is_bool=True)
                    if v.assumed or v.maybe_none:
                        return UNKNOWN_VALUE
                    # `Tensor.__contains__` reads `(item == t).any()` into a Python bool with `.item()` (a NumPy
                    # array's too, which Dynamo holds as a tensor)
                    return Value(Kind.SCALAR, origin=node, origin_in_loop=self.in_loop(),
                                 is_bool=True)
                item = values[-2]
                if item.is_tensor and not item.assumed and v.kind is Kind.SEQUENCE and v.items and all(
                        i.kind is Kind.PYTHON and isinstance(i.const, (int, float)) for i in v.items):
                    # `t in (600, 300)`: Python compares the tensor with each number, a bool of its data
                    # (measured on torch 2.13: a branch on it breaks)
                    return tensor(is_bool=True, zero_dim=item.zero_dim, params=item.params)
                if item.is_tensor and not item.assumed and v.kind is Kind.SEQUENCE and _all_tensors(v):
                    # `y in bank` of a list of tensors: Python compares `y` with each (`==`), a tensor Dynamo
                    # holds (measured on torch 2.13: a branch on it breaks; the bool alone is traced)
                    return tensor(is_bool=True, params=item.params)
                return python(is_bool=True) if v.kind is not Kind.UNKNOWN else UNKNOWN_VALUE
            if isinstance(comp.comparator, (cst.SimpleString, cst.FormattedString)) or _text(v) \
                    or _enum_member(self.p.index, comp.comparator):
                self.not_tensor_evidence(left)  # compared with a string or an enum member: not a tensor
            elif (_text(left) and not identity) or _enum_member(self.p.index, node.left):
                self.not_tensor_evidence(v)
        if node is self.branch_test and any(v.kind is Kind.SIZE for v in values):
            # `if x.shape[-1] >= n:` branches on a number compared with a size: the parameter itself
            # (not a value computed from it) is a number, however it is used elsewhere
            for v in values:
                self.not_tensor_evidence(v)
        if identity:
            if len(values) == 2:
                a, b = values
                for x, y in ((a, b), (b, a)):
                    if y.has_const and y.const is None and x.kind is not Kind.UNKNOWN and not x.maybe_none:
                        is_not = isinstance(node.comparisons[0].operator, cst.IsNot)
                        if x.kind is Kind.PYTHON and x.has_const:
                            return python((x.const is None) != is_not)
                        if x.kind in (Kind.TENSOR, Kind.MODULE, Kind.FUNCTION, Kind.SIZE):
                            return python(is_not)
            return python(is_bool=True)
        self.report(E.ComparisonEvent, node, operands=tuple(values))
        drawn = [v for v in values if calls.traced_random(v)]
        if len(drawn) == 1 and all(v is drawn[0] or calls.python_number(v) for v in values):
            # Dynamo holds a traced random number as a tensor: compared with a number, it gives a bool of
            # data, and a branch on it breaks (measured on torch 2.13: `if random.randint(1, 3) > n:`)
            return tensor(is_bool=True, zero_dim=True).with_(origin=drawn[0].origin)
        result = values[0]
        for v in values[1:]:
            result = arith(result, v, None)
        if result.kind is Kind.TENSOR:
            return result.with_(is_bool=True)
        if result.kind is Kind.PYTHON:
            const = NO_CONST
            if len(values) == 2 and values[0].has_const and values[1].has_const:
                try:
                    const = _compare(node.comparisons[0].operator, values[0].const, values[1].const)
                except Exception:
                    const = NO_CONST
            return python(const, is_bool=True)
        if result.kind in (Kind.SIZE, Kind.SCALAR):
            return result.with_(is_bool=True)
        if result.kind is Kind.UNKNOWN:
            # whatever is compared, the outcome is a bool or an array of bools: combined with a mask
            # (`same & (mat < 0.5)`) it is a mask
            return result.with_(is_bool=True)
        return result

    def _ifexp(self, node: cst.IfExp) -> Value:
        truth = self.condition(node.test, "ifexp", node)
        if truth is None:
            truth = self._nonempty_truth(node.test)
        if truth is not None:
            return self.with_narrowing(node.test, truth, lambda: self.expr(node.body if truth else node.orelse))
        return join(self.with_narrowing(node.test, True, lambda: self.expr(node.body)),
                    self.with_narrowing(node.test, False, lambda: self.expr(node.orelse)))

    def _nonempty_truth(self, test: cst.BaseExpression) -> bool | None:
        """The truth of a test of a size against an empty dimension (``n > 0``, ``n == 0``, ``n`` itself), as it
        is for the dimension of a real input, which Dynamo reads while tracing: in ``n if n > 0 else
        lengths.max().item()`` given ``x.size(1)`` the other arm runs only for an empty dimension.  None for
        any other test, and for a test of a tensor's rank (``t.dim() > 0``: a 0-d input is common)."""
        if type(test) is not cst.Comparison:
            return True if type(test) is cst.Name and self._size_of(test) else None
        if len(test.comparisons) != 1:
            return None
        comp = test.comparisons[0]
        right = comp.comparator
        if not (type(right) is cst.Integer and right.value in ("0", "1") and self._size_of(test.left)):
            return None
        return _NONEMPTY_SIZE_TESTS.get((type(comp.operator), right.value))

    def _size_of(self, node: cst.BaseExpression) -> bool:
        """``node`` is the size of a dimension (not a rank, not perhaps None)."""
        v = self.silent_expr(node)
        return v.kind is Kind.SIZE and not v.maybe_none and not v.rank

    def _sequence(self, node: cst.Tuple | cst.List | cst.Set) -> Value:
        items = []
        starred = False
        for el in node.elements:
            v = self.expr(el.value)
            if isinstance(el, cst.StarredElement):
                starred = True
                v = v.elements()
            items.append(v)
        if starred:
            return sequence(element=join_all(items) if items else None)
        return sequence(items=items, element=join_all(items) if items else None)

    def _dict(self, node: cst.Dict) -> Value:
        values = []
        entries: dict[str, Value] | None = {}
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                key = self.expr(el.key)
                values.append(self.expr(el.value))
                if entries is not None and isinstance(key.const, str) and key.const not in entries:
                    entries[key.const] = values[-1]
                else:
                    entries = None
            else:
                self.expr(el.value)
                values.append(UNKNOWN_VALUE)
                entries = None
        return mapping(join_all(values) if values else None, entries)

    def _comprehension(self, node: cst.BaseComp) -> Value:
        saved = dict(self.env)
        comp = node.for_in
        seen, callee_broke = -1, self.callee_broke
        self.comprehensions.append(node)
        try:
            while comp is not None:
                it = self.expr(comp.iter)
                if seen < 0:  # the first iterable is made outside the comprehension's frame
                    seen, callee_broke = len(self.p.events), callee_broke or self.callee_broke
                    self.callee_broke = False
                self.bind(comp.target, calls.iterated(self, it), self.statement)
                for cond in comp.ifs:
                    self.condition(cond.test, "comprehension", cond)
                comp = comp.inner_for_in
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                value = mapping(self.expr(node.value))  # (its keys are not known)
            else:
                value = sequence(element=self.expr(node.elt))
        finally:
            self.env = saved
            self.comprehensions.pop()
        body_broke = self.callee_broke
        self.callee_broke = callee_broke or self.callee_broke
        if self.emit and not isinstance(node, cst.GeneratorExp):
            body_broke = body_broke or any(self.p.may_break_at(ev) for ev in self.p.events[seen:])
            self.comprehension_frame(node, saved, body_broke)
        return value

    def _lambda(self, node: cst.Lambda) -> Value:
        return Value(Kind.PYTHON, qualname="builtins.function", origin=node)  # (called: ``calls._call_lambda``)

    def _named_expr(self, node: cst.NamedExpr) -> Value:
        v = self.expr(node.value)
        if self.comprehensions and not isinstance(self.comprehensions[-1], cst.GeneratorExp) \
                and self.sets_unset_cell(node, self.comprehensions[-1]):
            self.report(E.ComprehensionAssignmentEvent, node)
        self.bind(node.target, v, self.statement)
        return v

    def _yield(self, node: cst.Yield) -> Value:
        """``yield v`` (or ``yield from it``): ``v`` is one of the values the generator hands its caller
        (see :attr:`yielded`); what the caller sends back is not known."""
        if isinstance(node.value, cst.From):
            self.yielded.append(self.expr(node.value.item).elements())
        else:
            self.yielded.append(self.expr(node.value))
        return UNKNOWN_VALUE

    def _await(self, node: cst.Await) -> Value:
        self.expr(node.expression)
        return UNKNOWN_VALUE

    def _starred(self, node: cst.StarredElement) -> Value:
        return self.expr(node.value)


def _all_tensors(v: Value) -> bool:
    """A list or tuple whose elements are all tensors the analysis proves."""
    parts = v.items if v.items is not None else (v.element,) if v.element is not None else ()
    return bool(parts) and all(p.is_tensor and not p.assumed and not p.maybe_none for p in parts)


#: The standard library's enum base classes.
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})


def _enum_member(idx: ModuleIndex, node: cst.BaseExpression) -> bool:
    """``node`` names a member of an enum class of the module (``Mode.EVAL``): a parameter compared with one
    holds members too, not a tensor."""
    if type(node) is not cst.Attribute or type(node.value) is not cst.Name:
        return False
    cls = idx.classes.get(node.value.value)
    return cls is not None and any(b.rpartition(".")[2] in _ENUM_BASES for c in cls.mro() for b in c.bases)


def _text(v: Value) -> bool:
    """``v`` is a known string."""
    return v.kind is Kind.PYTHON and isinstance(v.const, str)


def _basic_indexing_rank(ndim: int, idx: tuple[Value, ...]) -> int | None:
    """The number of dimensions of a tensor of ``ndim`` dimensions indexed by ``idx`` made of slices, integer
    constants or sizes and ``None`` (``scores.argsort()[:3]`` is 1-d, ``x[0, :, None]`` of a 3-d ``x`` 3-d),
    or by one boolean mask, which selects the rows of the dimensions it covers into one (``rest[keep]`` of a
    1-d ``rest`` is 1-d); None for any other index (an integer tensor, a list, ``...``)."""
    if len(idx) == 1 and idx[0].is_tensor and idx[0].is_bool:
        covered = idx[0].ndim if idx[0].ndim is not None else 1 if ndim == 1 else None
        return ndim - covered + 1 if covered is not None and 0 < covered <= ndim else None
    taken = added = slices = 0
    for v in idx:
        if v.qualname == "builtins.slice":
            slices += 1
        elif v.kind is Kind.SIZE or v.kind is Kind.PYTHON and type(v.const) is int:
            taken += 1
        elif v.has_const and v.const is None:
            added += 1
        else:
            return None
    return ndim - taken + added if taken + slices <= ndim else None


def _python_int(v: Value) -> bool:
    """A Python number that may index (an int constant, a counter, an ``int`` parameter), not a bool, a
    string, a slice or a float constant."""
    if v.kind is not Kind.PYTHON or v.is_bool or v.maybe_none or v.qualname is not None or v.is_mapping:
        return False
    return not v.has_const or (isinstance(v.const, int) and not isinstance(v.const, bool))
