"""Generators, iterators and itertools inside compiled functions."""
import itertools

import torch


def gen_squares(x, n):
    for i in range(n):
        yield x * i


@torch.compile(backend="eager")
def generator_function(x):
    return sum(gen_squares(x, 3))


def test_generator_function():
    generator_function(torch.randn(2))


def gen_delegate(x):
    yield from gen_squares(x, 2)
    yield x


@torch.compile(backend="eager")
def yield_from(x):
    return torch.stack(list(gen_delegate(x)))


def test_yield_from():
    yield_from(torch.randn(2))


@torch.compile(backend="eager")
def generator_next_manual(x):
    g = gen_squares(x, 3)
    a = next(g)
    b = next(g)
    return a + b


def test_generator_next_manual():
    generator_next_manual(torch.randn(2))


def accumulator():
    total = 0
    while True:
        v = yield total
        total += v


@torch.compile(backend="eager")
def generator_send(x):
    g = accumulator()
    next(g)
    g.send(2)
    return x * g.send(3)


def test_generator_send():
    generator_send(torch.randn(2))


@torch.compile(backend="eager")
def itertools_product(x):
    out = x
    for i, j in itertools.product(range(2), range(2)):
        out = out + i * j
    return out


def test_itertools_product():
    itertools_product(torch.randn(2))


@torch.compile(backend="eager")
def itertools_chain(xs, ys):
    return torch.stack(list(itertools.chain(xs, ys)))


def test_itertools_chain():
    itertools_chain([torch.randn(2)], [torch.randn(2)])


@torch.compile(backend="eager")
def itertools_accumulate(xs):
    return list(itertools.accumulate(xs))[-1]


def test_itertools_accumulate():
    itertools_accumulate([torch.randn(2) for _ in range(3)])


@torch.compile(backend="eager")
def itertools_islice_count(x):
    out = x
    for i in itertools.islice(itertools.count(1), 3):
        out = out * i
    return out


def test_itertools_islice_count():
    itertools_islice_count(torch.randn(2))


@torch.compile(backend="eager")
def itertools_zip_longest(xs, ys):
    out = 0
    for a, b in itertools.zip_longest(xs, ys, fillvalue=None):
        out = out + (a if b is None else a + b)
    return out


def test_itertools_zip_longest():
    itertools_zip_longest([torch.randn(2)] * 3, [torch.randn(2)])


@torch.compile(backend="eager")
def itertools_combinations(xs):
    return sum(a * b for a, b in itertools.combinations(xs, 2))


def test_itertools_combinations():
    itertools_combinations([torch.randn(2) for _ in range(3)])


@torch.compile(backend="eager")
def itertools_pairwise(xs):
    return sum(b - a for a, b in itertools.pairwise(xs))


def test_itertools_pairwise():
    itertools_pairwise([torch.randn(2) for _ in range(3)])


@torch.compile(backend="eager")
def itertools_groupby(x):
    keys = [k for k, _ in itertools.groupby([1, 1, 2, 3, 3])]
    return x * len(keys)


def test_itertools_groupby():
    itertools_groupby(torch.randn(2))


@torch.compile(backend="eager")
def iterate_tensor_unbind(x):
    return [t * 2 for t in x.unbind(1)]


def test_iterate_tensor_unbind():
    iterate_tensor_unbind(torch.randn(2, 3))


class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


@torch.compile(backend="eager")
def user_iterator_class(x):
    for i in Countdown(3):
        x = x + i
    return x


def test_user_iterator_class():
    user_iterator_class(torch.randn(2))


@torch.compile(backend="eager")
def enumerate_start(xs):
    return sum(t * i for i, t in enumerate(xs, start=1))


def test_enumerate_start():
    enumerate_start([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def generator_returned(x):
    return (x * i for i in range(3))


def test_generator_returned():
    list(generator_returned(torch.randn(2)))


@torch.compile(backend="eager")
def zip_strict(xs, ys):
    return [a + b for a, b in zip(xs, ys, strict=True)]


def test_zip_strict():
    zip_strict([torch.randn(2)], [torch.randn(2)])


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
