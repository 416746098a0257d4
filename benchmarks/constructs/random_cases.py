"""Randomness inside compiled functions: Python's random, numpy's, torch's seeds and generators."""
import random

import numpy as np
import torch


@torch.compile(backend="eager")
def python_random_random(x):
    return x * random.random()


def test_python_random_random():
    python_random_random(torch.randn(2))


@torch.compile(backend="eager")
def python_random_randint(x):
    return x * random.randint(1, 3)


def test_python_random_randint():
    python_random_randint(torch.randn(2))


@torch.compile(backend="eager")
def python_random_choice(xs):
    return random.choice(xs) * 2


def test_python_random_choice():
    python_random_choice([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def python_random_shuffle(xs):
    random.shuffle(xs)
    return xs[0]


def test_python_random_shuffle():
    python_random_shuffle([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def python_random_seed(x):
    random.seed(0)
    return x + 1


def test_python_random_seed():
    python_random_seed(torch.randn(2))


@torch.compile(backend="eager")
def numpy_random_rand(x):
    return x * np.random.rand()


def test_numpy_random_rand():
    numpy_random_rand(torch.randn(2))


@torch.compile(backend="eager")
def torch_manual_seed(x):
    torch.manual_seed(0)
    return x + torch.rand(2)


def test_torch_manual_seed():
    torch_manual_seed(torch.randn(2))


@torch.compile(backend="eager")
def torch_rand_ops(x):
    return x + torch.rand_like(x) + torch.randn(2) + torch.randint(0, 3, (2,))


def test_torch_rand_ops():
    torch_rand_ops(torch.randn(2))


@torch.compile(backend="eager")
def torch_randperm(x):
    return x[torch.randperm(x.shape[0])]


def test_torch_randperm():
    torch_randperm(torch.randn(4))


@torch.compile(backend="eager")
def torch_generator_object(x):
    g = torch.Generator().manual_seed(1)
    return x + torch.rand(2, generator=g)


def test_torch_generator_object():
    torch_generator_object(torch.randn(2))


@torch.compile(backend="eager")
def dropout_functional(x):
    return torch.nn.functional.dropout(x, p=0.5, training=True)


def test_dropout_functional():
    dropout_functional(torch.randn(4))


@torch.compile(backend="eager")
def rng_state_get_set(x):
    state = torch.get_rng_state()
    y = torch.rand(2)
    torch.set_rng_state(state)
    return x + y


def test_rng_state_get_set():
    rng_state_get_set(torch.randn(2))


@torch.compile(backend="eager")
def bernoulli_call(x):
    return torch.bernoulli(torch.full_like(x, 0.5)) * x


def test_bernoulli_call():
    bernoulli_call(torch.randn(2))


@torch.compile(backend="eager")
def initial_seed_call(x):
    return x + torch.initial_seed() % 7


def test_initial_seed_call():
    initial_seed_call(torch.randn(2))


@torch.compile(backend="eager")
def random_uniform_python(x):
    return x * random.uniform(0.5, 1.5)


def test_random_uniform_python():
    random_uniform_python(torch.randn(2))


@torch.compile(backend="eager")
def numpy_default_rng(x):
    rng = np.random.default_rng(0)
    return x * rng.random()


def test_numpy_default_rng():
    numpy_default_rng(torch.randn(2))


_rng = random.Random(0)


@torch.compile(backend="eager")
def random_instance_method(x):
    return x * _rng.random()


def test_random_instance_method():
    random_instance_method(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
