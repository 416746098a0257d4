"""Branches and loops in compiled functions: on Python values, on shapes, on tensor data."""
import torch


@torch.compile(backend="eager")
def if_on_tensor(x):
    if x.sum() > 0:
        return x * 2
    return x


def test_if_on_tensor():
    if_on_tensor(torch.randn(4))


@torch.compile(backend="eager")
def if_on_shape(x):
    if x.shape[0] > 2:
        return x[:2]
    return x


def test_if_on_shape():
    if_on_shape(torch.randn(4))


@torch.compile(backend="eager")
def if_on_bool_arg(x, flag):
    if flag:
        return x + 1
    return x - 1


def test_if_on_bool_arg():
    if_on_bool_arg(torch.randn(2), True)


@torch.compile(backend="eager")
def while_on_tensor(x):
    while x.norm() > 1:
        x = x / 2
    return x


def test_while_on_tensor():
    while_on_tensor(torch.randn(3) * 10)


@torch.compile(backend="eager")
def for_over_rows(x):
    acc = torch.zeros(x.shape[1])
    for row in x:
        acc = acc + row
    return acc


def test_for_over_rows():
    for_over_rows(torch.randn(3, 2))


@torch.compile(backend="eager")
def for_range_of_item(x, n):
    for _ in range(int(n)):
        x = x + 1
    return x


def test_for_range_of_item():
    for_range_of_item(torch.randn(2), torch.tensor(3))


@torch.compile(backend="eager")
def break_continue(xs):
    out = xs[0]
    for i, t in enumerate(xs):
        if i == 1:
            continue
        if i > 2:
            break
        out = out + t
    return out


def test_break_continue():
    break_continue([torch.randn(2) for _ in range(5)])


@torch.compile(backend="eager")
def assert_on_shape(x):
    assert x.dim() == 2, "expected a matrix"
    return x.t()


def test_assert_on_shape():
    assert_on_shape(torch.randn(2, 3))


@torch.compile(backend="eager")
def assert_on_tensor(x):
    assert (x >= 0).all()
    return x.sqrt()


def test_assert_on_tensor():
    assert_on_tensor(torch.rand(3))


@torch.compile(backend="eager")
def ternary_on_tensor(x):
    return x if x.max() > 0.5 else -x


def test_ternary_on_tensor():
    ternary_on_tensor(torch.rand(3))


@torch.compile(backend="eager")
def bool_and_or_tensor(x, y):
    return (x.any() and y) or x


def test_bool_and_or_tensor():
    bool_and_or_tensor(torch.rand(2), torch.rand(1))


@torch.compile(backend="eager")
def is_none_branch(x, mask=None):
    if mask is not None:
        x = x * mask
    return x


def test_is_none_branch():
    is_none_branch(torch.randn(3))


@torch.compile(backend="eager")
def if_on_numel(x):
    if x.numel() == 0:
        return x
    return x.mean()


def test_if_on_numel():
    if_on_numel(torch.randn(3))


@torch.compile(backend="eager")
def while_python_counter(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


def test_while_python_counter():
    while_python_counter(torch.randn(2))


@torch.compile(backend="eager")
def match_statement(x, kind):
    match kind:
        case "double":
            return x * 2
        case _:
            return x


def test_match_statement():
    match_statement(torch.randn(2), "double")


@torch.compile(backend="eager")
def if_tensor_equal_scalar(x):
    if x[0] == 0:
        return x
    return x + 1


def test_if_tensor_equal_scalar():
    if_tensor_equal_scalar(torch.randn(3))


@torch.compile(backend="eager")
def loop_tensor_cond_in_body(x):
    for _ in range(3):
        if x.sum() < 0:
            x = -x
        x = x - 1
    return x


def test_loop_tensor_cond_in_body():
    loop_tensor_cond_in_body(torch.randn(3))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
