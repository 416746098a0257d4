"""Closures, nonlocal and global state, lambdas, decorators and functools inside compiled functions."""
import functools

import torch

counter = 0
scale = 2.0


@torch.compile(backend="eager")
def closure_capture(x):
    k = 3

    def inner(y):
        return y * k

    return inner(x)


def test_closure_capture():
    closure_capture(torch.randn(2))


@torch.compile(backend="eager")
def nonlocal_mutation(x):
    total = 0

    def bump():
        nonlocal total
        total += 1

    bump()
    bump()
    return x + total


def test_nonlocal_mutation():
    nonlocal_mutation(torch.randn(2))


@torch.compile(backend="eager")
def global_mutation(x):
    global counter
    counter += 1
    return x + counter


def test_global_mutation():
    global_mutation(torch.randn(2))


@torch.compile(backend="eager")
def global_read(x):
    return x * scale


def test_global_read():
    global_read(torch.randn(2))


@torch.compile(backend="eager")
def lambda_call(x):
    f = lambda t, a=2: t ** a  # noqa: E731
    return f(x)


def test_lambda_call():
    lambda_call(torch.randn(2))


@torch.compile(backend="eager")
def partial_call(x):
    f = functools.partial(torch.clamp, min=0.0)
    return f(x)


def test_partial_call():
    partial_call(torch.randn(3))


_clip = functools.partial(torch.clamp, min=-1.0, max=1.0)


@torch.compile(backend="eager")
def module_level_partial(x):
    return _clip(x * 3)


def test_module_level_partial():
    module_level_partial(torch.randn(3))


@functools.lru_cache(maxsize=None)
def _table(n):
    return tuple(range(n))


@torch.compile(backend="eager")
def lru_cache_call(x):
    return x * len(_table(4))


def test_lru_cache_call():
    lru_cache_call(torch.randn(2))


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@torch.compile(backend="eager")
@_logged
def wraps_decorated(x):
    return x.cos()


def test_wraps_decorated():
    wraps_decorated(torch.randn(2))


@torch.compile(backend="eager")
def reduce_call(xs):
    return functools.reduce(lambda a, b: a + b, xs)


def test_reduce_call():
    reduce_call([torch.randn(2)] * 3)


def make_scaler(s):
    def scaler(x):
        return x * s

    return scaler


def test_closure_from_factory():
    f = torch.compile(make_scaler(3.0), backend="eager")
    f(torch.randn(2))


@torch.compile(backend="eager")
def returns_closure(x):
    def g():
        return x + 1

    return g


def test_returns_closure():
    returns_closure(torch.randn(2))()


@torch.compile(backend="eager")
def recursive_helper(x):
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return x * fact(4)


def test_recursive_helper():
    recursive_helper(torch.randn(2))


@torch.compile(backend="eager")
def default_mutable_arg(x, acc=[]):  # noqa: B006
    acc.append(1)
    return x + len(acc)


def test_default_mutable_arg():
    default_mutable_arg(torch.randn(2))


@torch.compile(backend="eager")
def star_args_kwargs(*args, **kwargs):
    return args[0] * kwargs.get("scale", 1.0)


def test_star_args_kwargs():
    star_args_kwargs(torch.randn(2), scale=3.0)


@torch.compile(backend="eager")
def cached_property_like(x):
    cache = {}

    def get(k):
        if k not in cache:
            cache[k] = x * k
        return cache[k]

    return get(2) + get(2)


def test_cached_property_like():
    cached_property_like(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
