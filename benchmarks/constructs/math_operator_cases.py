"""math, operator and numbers on Python values and tensors inside compiled functions."""
import math
import operator

import torch


@torch.compile(backend="eager")
def math_on_shape(x):
    n = math.ceil(math.sqrt(x.shape[0]))
    return x[:n]


def test_math_on_shape():
    math_on_shape(torch.randn(10))


@torch.compile(backend="eager")
def math_constants(x):
    return x * math.pi + math.e


def test_math_constants():
    math_constants(torch.randn(2))


@torch.compile(backend="eager")
def math_on_python_float(x, t):
    return x * math.exp(-t) * math.log(1 + t)


def test_math_on_python_float():
    math_on_python_float(torch.randn(2), 0.5)


@torch.compile(backend="eager")
def math_on_tensor(x):
    return math.sqrt(x.sum())


def test_math_on_tensor():
    math_on_tensor(torch.rand(3))


@torch.compile(backend="eager")
def math_isfinite_item(x):
    if not math.isfinite(x.max().item()):
        return torch.zeros_like(x)
    return x


def test_math_isfinite_item():
    math_isfinite_item(torch.randn(3))


@torch.compile(backend="eager")
def operator_functions(x, y):
    return operator.add(operator.mul(x, 2), y)


def test_operator_functions():
    operator_functions(torch.randn(2), torch.randn(2))


@torch.compile(backend="eager")
def operator_itemgetter(xs):
    get = operator.itemgetter(0, 2)
    a, b = get(xs)
    return a + b


def test_operator_itemgetter():
    operator_itemgetter([torch.randn(2), torch.randn(2), torch.randn(2)])


class _Obj:
    def __init__(self):
        self.w = torch.randn(2)


@torch.compile(backend="eager")
def operator_attrgetter(o, x):
    return operator.attrgetter("w")(o) + x


def test_operator_attrgetter():
    operator_attrgetter(_Obj(), torch.randn(2))


@torch.compile(backend="eager")
def math_prod_of_shape(x):
    return x.reshape(math.prod(x.shape))


def test_math_prod_of_shape():
    math_prod_of_shape(torch.randn(2, 3))


@torch.compile(backend="eager")
def math_gcd_floor(x):
    return x * math.gcd(12, 8) + math.floor(2.7)


def test_math_gcd_floor():
    math_gcd_floor(torch.randn(2))


@torch.compile(backend="eager")
def pow_and_floordiv(x):
    n = x.shape[-1] // 2
    return x[..., :n] ** 2


def test_pow_and_floordiv():
    pow_and_floordiv(torch.randn(2, 4))


@torch.compile(backend="eager")
def complex_python_number(x):
    c = complex(1, 2)
    return x * abs(c)


def test_complex_python_number():
    complex_python_number(torch.randn(2))


@torch.compile(backend="eager")
def float_inf_nan(x):
    return torch.clamp(x, max=float("inf")) + float("nan") * 0


def test_float_inf_nan():
    float_inf_nan(torch.randn(2))


@torch.compile(backend="eager")
def operator_getitem_tensor(x):
    return operator.getitem(x, 0) + operator.neg(x[1])


def test_operator_getitem_tensor():
    operator_getitem_tensor(torch.randn(3))


@torch.compile(backend="eager")
def math_radians_of_item(x, angle):
    return x * math.cos(math.radians(angle.item()))


def test_math_radians_of_item():
    math_radians_of_item(torch.randn(2), torch.tensor(30.0))


@torch.compile(backend="eager")
def int_division_of_sizes(x):
    h, w = x.shape[-2:]
    return x.view(-1, h * w // 2, 2)


def test_int_division_of_sizes():
    int_division_of_sizes(torch.randn(1, 2, 4))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
