"""User classes in compiled code: dataclasses, namedtuples, properties, __getattr__, super(), enums."""
import collections
import dataclasses
import enum
import typing

import torch


@dataclasses.dataclass
class Box:
    lo: torch.Tensor
    hi: torch.Tensor
    label: str = "box"


@torch.compile(backend="eager")
def dataclass_fields(b):
    return b.hi - b.lo


def test_dataclass_fields():
    dataclass_fields(Box(torch.zeros(2), torch.ones(2)))


@torch.compile(backend="eager")
def dataclass_construct(x):
    b = Box(x, x + 1)
    return b.hi * 2


def test_dataclass_construct():
    dataclass_construct(torch.randn(2))


@torch.compile(backend="eager")
def dataclass_replace(b):
    c = dataclasses.replace(b, hi=b.hi * 2)
    return c.hi


def test_dataclass_replace():
    dataclass_replace(Box(torch.zeros(2), torch.ones(2)))


@torch.compile(backend="eager")
def dataclass_asdict(b):
    d = dataclasses.asdict(b)
    return d["lo"] + d["hi"]


def test_dataclass_asdict():
    dataclass_asdict(Box(torch.zeros(2), torch.ones(2)))


Point = collections.namedtuple("Point", ["x", "y"])


class Pair(typing.NamedTuple):
    a: torch.Tensor
    b: torch.Tensor


@torch.compile(backend="eager")
def namedtuple_build(t):
    p = Point(t, t * 2)
    return p.x + p.y + p[0]


def test_namedtuple_build():
    namedtuple_build(torch.randn(2))


@torch.compile(backend="eager")
def typed_namedtuple_replace(p):
    q = p._replace(a=p.b)
    return q.a * q.b


def test_typed_namedtuple_replace():
    typed_namedtuple_replace(Pair(torch.randn(2), torch.randn(2)))


class Scaled:
    def __init__(self, w):
        self._w = w

    @property
    def w(self):
        return self._w * 2

    def __getattr__(self, name):
        if name == "bias":
            return 1.0
        raise AttributeError(name)


@torch.compile(backend="eager")
def property_access(s, x):
    return x * s.w


def test_property_access():
    property_access(Scaled(torch.randn(2)), torch.randn(2))


@torch.compile(backend="eager")
def getattr_fallback(s, x):
    return x + s.bias


def test_getattr_fallback():
    getattr_fallback(Scaled(torch.randn(2)), torch.randn(2))


class Base:
    def f(self, x):
        return x + 1


class Child(Base):
    def f(self, x):
        return super().f(x) * 2


@torch.compile(backend="eager")
def super_call(obj, x):
    return obj.f(x)


def test_super_call():
    super_call(Child(), torch.randn(2))


@torch.compile(backend="eager")
def class_statement_inside(x):
    class Local:
        k = 3

    return x * Local.k


def test_class_statement_inside():
    class_statement_inside(torch.randn(2))


class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


@torch.compile(backend="eager")
def enum_compare(x, mode):
    if mode == Mode.TRAIN:
        return x * 2
    return x


def test_enum_compare():
    enum_compare(torch.randn(2), Mode.TRAIN)


@torch.compile(backend="eager")
def enum_value(x, mode):
    return x * mode.value


def test_enum_value():
    enum_value(torch.randn(2), Mode.EVAL)


class Counter:
    def __init__(self):
        self.n = 0

    def tick(self):
        self.n += 1
        return self.n


@torch.compile(backend="eager")
def object_attribute_mutation(c, x):
    return x * c.tick()


def test_object_attribute_mutation():
    object_attribute_mutation(Counter(), torch.randn(2))


class Helper:
    @staticmethod
    def twice(x):
        return x * 2

    @classmethod
    def make(cls):
        return cls()


@torch.compile(backend="eager")
def static_and_class_methods(x):
    h = Helper.make()
    return h.twice(x)


def test_static_and_class_methods():
    static_and_class_methods(torch.randn(2))


class Callable:
    def __call__(self, x):
        return x - 1


@torch.compile(backend="eager")
def callable_object(f, x):
    return f(x)


def test_callable_object():
    callable_object(Callable(), torch.randn(2))


@torch.compile(backend="eager")
def isinstance_checks(x, y):
    if isinstance(y, (int, float)):
        return x * y
    if isinstance(y, torch.Tensor):
        return x + y
    return x


def test_isinstance_checks():
    isinstance_checks(torch.randn(2), 3)


@torch.compile(backend="eager")
def setattr_new_object(x):
    obj = Counter()
    setattr(obj, "extra", x)
    return obj.extra + obj.n


def test_setattr_new_object():
    setattr_new_object(torch.randn(2))


class Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


@torch.compile(backend="eager")
def slots_object(s, x):
    return x + s.v


def test_slots_object():
    slots_object(Slotted(2.0), torch.randn(2))


@torch.compile(backend="eager")
def dunder_add(a, b):
    return a + b


class Vec:
    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        return Vec(self.t + other.t)


def test_dunder_add():
    dunder_add(Vec(torch.randn(2)), Vec(torch.randn(2)))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
