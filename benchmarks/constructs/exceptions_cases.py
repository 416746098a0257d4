"""try/except/finally, raise and custom exceptions inside compiled functions."""
import torch


class ShapeError(ValueError):
    pass


@torch.compile(backend="eager")
def try_except_caught(x):
    try:
        raise ValueError("bad")
    except ValueError:
        x = x + 1
    return x


def test_try_except_caught():
    try_except_caught(torch.randn(2))


@torch.compile(backend="eager")
def try_finally(x):
    try:
        x = x * 2
    finally:
        x = x + 1
    return x


def test_try_finally():
    try_finally(torch.randn(2))


@torch.compile(backend="eager")
def raise_uncaught(x):
    if x.shape[0] != 3:
        raise ShapeError("need three")
    return x


def test_raise_uncaught():
    try:
        raise_uncaught(torch.randn(2))
    except ShapeError:
        pass


@torch.compile(backend="eager")
def except_key_error(d, x):
    try:
        return x * d["missing"]
    except KeyError:
        return x


def test_except_key_error():
    except_key_error({"a": 1}, torch.randn(2))


@torch.compile(backend="eager")
def except_index_error(xs):
    try:
        return xs[5]
    except IndexError:
        return xs[0]


def test_except_index_error():
    except_index_error([torch.randn(2)])


@torch.compile(backend="eager")
def raise_from_tensor_check(x):
    if (x < 0).any():
        raise ValueError("negative")
    return x


def test_raise_from_tensor_check():
    try:
        raise_from_tensor_check(torch.rand(3))
    except ValueError:
        pass


@torch.compile(backend="eager")
def custom_exception_caught(x):
    try:
        raise ShapeError("x")
    except ShapeError as e:
        return x + len(str(e))


def test_custom_exception_caught():
    custom_exception_caught(torch.randn(2))


@torch.compile(backend="eager")
def reraise(x):
    try:
        x = x + 1
        raise RuntimeError("r")
    except RuntimeError:
        raise


def test_reraise():
    try:
        reraise(torch.randn(2))
    except RuntimeError:
        pass


@torch.compile(backend="eager")
def exception_attribute(x):
    try:
        raise ValueError(3)
    except ValueError as e:
        return x * e.args[0]


def test_exception_attribute():
    exception_attribute(torch.randn(2))


@torch.compile(backend="eager")
def try_else(x):
    try:
        y = x + 1
    except Exception:
        y = x
    else:
        y = y * 2
    return y


def test_try_else():
    try_else(torch.randn(2))


@torch.compile(backend="eager")
def suppress_context(x):
    import contextlib

    with contextlib.suppress(KeyError):
        x = x + {}["k"]
    return x


def test_suppress_context():
    suppress_context(torch.randn(2))


@torch.compile(backend="eager")
def raise_not_implemented(x):
    raise NotImplementedError("subclass")


def test_raise_not_implemented():
    try:
        raise_not_implemented(torch.randn(2))
    except NotImplementedError:
        pass


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
