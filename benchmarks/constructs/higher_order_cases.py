"""Higher-order operators under torch.compile: torch.cond with and without side effects, map, scan."""
import torch

seen = []


@torch.compile(backend="eager")
def cond_pure(x):
    return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))


def test_cond_pure():
    cond_pure(torch.randn(3))


@torch.compile(backend="eager")
def cond_with_print(x):
    def true_fn(t):
        print("true branch")
        return t + 1

    def false_fn(t):
        return t - 1

    return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


def test_cond_with_print():
    cond_with_print(torch.randn(3))


@torch.compile(backend="eager")
def cond_with_list_append(x):
    def true_fn(t):
        seen.append(1)
        return t + 1

    def false_fn(t):
        return t - 1

    return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


def test_cond_with_list_append():
    cond_with_list_append(torch.randn(3))


@torch.compile(backend="eager")
def cond_with_item(x):
    def true_fn(t):
        return t * t.max().item()

    def false_fn(t):
        return t

    return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


def test_cond_with_item():
    cond_with_item(torch.randn(3))


@torch.compile(backend="eager")
def cond_python_predicate(x, flag):
    return torch.cond(flag, lambda t: t + 1, lambda t: t - 1, (x,))


def test_cond_python_predicate():
    cond_python_predicate(torch.randn(3), True)


@torch.compile(backend="eager")
def cond_mismatched_outputs(x):
    return torch.cond(x.sum() > 0, lambda t: t.sum(), lambda t: t, (x,))


def test_cond_mismatched_outputs():
    cond_mismatched_outputs(torch.randn(3))


@torch.compile(backend="eager")
def map_hop(xs):
    from torch._higher_order_ops.map import map as hop_map

    return hop_map(lambda r: r * 2, xs)


def test_map_hop():
    map_hop(torch.randn(3, 2))


@torch.compile(backend="eager")
def cond_nonlocal_write(x):
    state = {"n": 0}

    def true_fn(t):
        state["n"] = 1
        return t + 1

    def false_fn(t):
        return t - 1

    return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


def test_cond_nonlocal_write():
    cond_nonlocal_write(torch.randn(3))


@torch.compile(backend="eager")
def while_loop_hop(x):
    from torch._higher_order_ops.while_loop import while_loop

    return while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t * 2), (torch.tensor(0), x))


def test_while_loop_hop():
    while_loop_hop(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
