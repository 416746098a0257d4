"""Built-in functions inside compiled functions: on Python values, on tensors, on shapes."""
import torch


@torch.compile(backend="eager")
def len_of_list(xs):
    return xs[0] * len(xs)


def test_len_of_list():
    len_of_list([torch.randn(3), torch.randn(3)])


@torch.compile(backend="eager")
def len_of_tensor(x):
    return x / len(x)


def test_len_of_tensor():
    len_of_tensor(torch.randn(4, 2))


@torch.compile(backend="eager")
def zip_enumerate(xs, ys):
    out = 0
    for i, (a, b) in enumerate(zip(xs, ys)):
        out = out + a * b * i
    return out


def test_zip_enumerate():
    zip_enumerate([torch.randn(2)] * 3, [torch.randn(2)] * 3)


@torch.compile(backend="eager")
def map_filter(xs):
    ys = list(map(lambda t: t + 1, xs))
    zs = list(filter(lambda t: t is not None, ys))
    return sum(zs)


def test_map_filter():
    map_filter([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def builtin_max_tensors(a, b):
    return max(a, b)


def test_builtin_max_tensors():
    builtin_max_tensors(torch.tensor(1.0), torch.tensor(2.0))


@torch.compile(backend="eager")
def builtin_max_python(x):
    k = max(x.shape[0], 2)
    return x.repeat(k)


def test_builtin_max_python():
    builtin_max_python(torch.randn(3))


@torch.compile(backend="eager")
def abs_round_python(x):
    n = round(abs(-2.6))
    return x * n


def test_abs_round_python():
    abs_round_python(torch.randn(2))


@torch.compile(backend="eager")
def abs_of_tensor(x):
    return abs(x) + 1


def test_abs_of_tensor():
    abs_of_tensor(torch.randn(3))


@torch.compile(backend="eager")
def any_all_tensor_bool(x):
    if any(x > 0):
        return x + 1
    return x - 1


def test_any_all_tensor_bool():
    any_all_tensor_bool(torch.randn(4))


@torch.compile(backend="eager")
def sorted_with_key(d, x):
    for k in sorted(d, key=lambda k: d[k]):
        x = x * d[k]
    return x


def test_sorted_with_key():
    sorted_with_key({"a": 2, "b": 1, "c": 3}, torch.randn(2))


@torch.compile(backend="eager")
def sorted_tensors_list(xs):
    return torch.stack(sorted(xs, key=lambda t: t.shape[0])[:1])


def test_sorted_tensors_list():
    sorted_tensors_list([torch.randn(3), torch.randn(3)])


@torch.compile(backend="eager")
def reversed_list(xs):
    out = xs[0]
    for t in reversed(xs):
        out = out - t
    return out


def test_reversed_list():
    reversed_list([torch.randn(2), torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def iter_next(xs):
    it = iter(xs)
    first = next(it)
    second = next(it, None)
    return first + second


def test_iter_next():
    iter_next([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def int_of_tensor(x):
    n = int(x.sum())
    return torch.ones(2) * n


def test_int_of_tensor():
    int_of_tensor(torch.randn(3))


@torch.compile(backend="eager")
def float_of_tensor(x):
    return x * float(x.mean())


def test_float_of_tensor():
    float_of_tensor(torch.randn(3))


@torch.compile(backend="eager")
def divmod_python(x):
    q, r = divmod(x.shape[0], 3)
    return x[:q] + r


def test_divmod_python():
    divmod_python(torch.randn(7))


@torch.compile(backend="eager")
def hasattr_getattr(mod, x):
    if hasattr(mod, "scale"):
        x = x * getattr(mod, "scale")
    return x


class _Holder:
    scale = 2.0


def test_hasattr_getattr():
    hasattr_getattr(_Holder(), torch.randn(2))


@torch.compile(backend="eager")
def callable_check(f, x):
    if callable(f):
        return f(x)
    return x


def test_callable_check():
    callable_check(torch.sin, torch.randn(2))


@torch.compile(backend="eager")
def id_of_object(x):
    return x + (id(x) % 3)


def test_id_of_object():
    id_of_object(torch.randn(2))


@torch.compile(backend="eager")
def chr_ord(x):
    return x * (ord("b") - ord("a"))


def test_chr_ord():
    chr_ord(torch.randn(2))


@torch.compile(backend="eager")
def sum_with_start(xs):
    return sum(xs, torch.zeros(2))


def test_sum_with_start():
    sum_with_start([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def type_call(x):
    if type(x) is torch.Tensor:
        return x + 1
    return x


def test_type_call():
    type_call(torch.randn(2))


@torch.compile(backend="eager")
def slice_object(x):
    s = slice(1, None)
    return x[s]


def test_slice_object():
    slice_object(torch.randn(4))


@torch.compile(backend="eager")
def vars_of_object(obj, x):
    for k, v in vars(obj).items():
        x = x + v
    return x


class _Fields:
    def __init__(self):
        self.a = 1
        self.b = 2


def test_vars_of_object():
    vars_of_object(_Fields(), torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
