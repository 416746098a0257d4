"""Instances of a ``torch.Tensor`` subclass of the checked code (known from ``isinstance`` or an annotation):
Dynamo holds one as a tensor, but cannot call ``as_subclass`` on it or read its ``__dict__``, and a call of
one of its own methods whose body breaks breaks at the call too ("Reconstruction failure"), after which the
calling function runs eagerly. Building one in compiled code breaks where its ``__init__`` requires an
argument besides the instance (Dynamo passes it none). A value the analysis knows as a plain tensor
(declared, or computed) is not taken for an instance where ``isinstance`` tests for one: the code handles
both, and which one comes is not known. Each case is also run under real Dynamo: the lines flagged must be the lines
where its graph-break log reports a break."""
from __future__ import annotations

from conftest import requires_torch

from helpers import assert_dynamo_breaks_on_marked_lines, break_lines, marked_case_tests

_CLASS = """
    import torch


    class Meta(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

        def as_tensor(self):
            return self.as_subclass(torch.Tensor)  # breaks

        def info(self):
            return self.__dict__  # breaks

        def double(self):
            return self * 2

"""

CASES = [
    ("narrowed-by-isinstance", _CLASS + """
    def convert(t):
        if isinstance(t, Meta):
            return t.as_tensor()  # breaks
        return t


    def info_of(t):
        if isinstance(t, Meta):
            y = t.double()
            d = t.info()  # breaks
            print("after")  # not traced: the rest of the function runs eagerly
        return t


    def keep(t: torch.Tensor):
        return t.as_tensor() if isinstance(t, Meta) else t  # a tensor the code knows: not taken for a Meta


    def f(x, m):
        y = convert(m) + keep(x)
        info_of(m)
        return y * 2
    """, "f", "[(torch.ones(2), torch.ones(2).as_subclass(Meta))]"),
    # `isinstance(t, torch.Tensor)` holds for an instance of a subclass too: the value it narrows may be one
    ("narrowed-to-a-tensor-first", _CLASS.replace("self.__dict__  # breaks", "self.__dict__") + """
    from typing import Any


    def widen(t: Any):
        if not isinstance(t, torch.Tensor):
            t = torch.as_tensor(t)
        if isinstance(t, Meta):
            return t.as_tensor()  # breaks
        return t


    def f(m: Any):
        return widen(m) * 2
    """, "f", "[(torch.ones(2).as_subclass(Meta),)]"),
    ("annotated", _CLASS.replace("  # breaks", "") + """
    def f(x, m: Meta):
        y = m.double() + x
        d = m.__dict__  # breaks
        return y * 2
    """, "f", "[(torch.ones(2), torch.ones(2).as_subclass(Meta))]"),
    # a parameter annotated as a plain tensor is one, whatever a caller's annotation says: the branch for an
    # instance is not reported (here the caller's annotation is wrong, and a plain tensor comes)
    ("parameter-annotated-plain", _CLASS.replace("  # breaks", "") + """
    def shape_of(t: torch.Tensor):
        size = t.info() if isinstance(t, Meta) else t.shape
        return t.sum() * size[0]


    def f(x, m: Meta):
        return shape_of(m) * 2 + x
    """, "f", "[(torch.ones(2), torch.ones(2))]"),
    # building an instance in compiled code: Dynamo runs `__init__` with the instance alone, which binds only
    # where `__init__` requires nothing more (its own, a base's, or torch's)
    ("built-in-compiled-code", """
    import torch


    class Wrapped(torch.Tensor):
        @staticmethod
        def __new__(cls, x, *args, **kwargs):
            return torch.as_tensor(x).as_subclass(cls)

        def __init__(self, x, meta=None):
            self.meta = meta


    class Derived(Wrapped):
        pass


    class Plain(torch.Tensor):
        @staticmethod
        def __new__(cls, x):
            return torch.as_tensor(x).as_subclass(cls)


    class Open(torch.Tensor):
        def __init__(self, *args, **kwargs):
            self.meta = None


    def f(x):
        a = Wrapped(x)  # breaks
        b = Derived(x, meta=1)  # breaks
        c = Plain(x)
        d = Open(x)
        return x * 2
    """, "f", "[(torch.ones(2),)]"),
]

#: a class whose own ``__torch_function__`` calls the function: Dynamo's log puts the break of
#: ``as_subclass`` there, not at the call, and the analysis does not report the call
OWN_TORCH_FUNCTION = ("""
    import torch
    from torch._C import DisableTorchFunctionSubclass


    class Boxes(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types=(), args=(), kwargs=None):
            with DisableTorchFunctionSubclass():
                return func(*args, **kwargs or {})  # breaks


    def f(x, b: Boxes):
        return b.as_subclass(torch.Tensor) + x  # the break is inside `__torch_function__`
    """, "f", "[(torch.ones(2), torch.ones(2).as_subclass(Boxes))]")


test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)


def test_own_torch_function_is_not_reported_at_the_call() -> None:
    code, target, _ = OWN_TORCH_FUNCTION
    assert break_lines(code, entry_points=(target,)) == set()


@requires_torch
def test_own_torch_function_holds_the_break_under_dynamo(tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(*OWN_TORCH_FUNCTION, tmp_path)
