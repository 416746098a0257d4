"""with-statements inside compiled functions: grad modes, autocast, user context managers."""
import contextlib
import warnings

import torch


@torch.compile(backend="eager")
def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y + x


def test_no_grad_block():
    no_grad_block(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def enable_grad_block(x):
    with torch.enable_grad():
        return x * 2


def test_enable_grad_block():
    with torch.no_grad():
        enable_grad_block(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def set_grad_enabled_false(x):
    with torch.set_grad_enabled(False):
        return x.sin()


def test_set_grad_enabled_false():
    set_grad_enabled_false(torch.randn(2))


@torch.compile(backend="eager")
def autocast_cpu(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return x @ w


def test_autocast_cpu():
    autocast_cpu(torch.randn(2, 2), torch.randn(2, 2))


@torch.compile(backend="eager")
def inference_mode_block(x):
    with torch.inference_mode():
        return x + 1


def test_inference_mode_block():
    inference_mode_block(torch.randn(2))


@contextlib.contextmanager
def scaled(factor):
    yield factor * 2


@torch.compile(backend="eager")
def contextmanager_generator(x):
    with scaled(3) as f:
        x = x * f
    return x


def test_contextmanager_generator():
    contextmanager_generator(torch.randn(2))


class Tracker:
    def __init__(self):
        self.depth = 0

    def __enter__(self):
        self.depth += 1
        return self

    def __exit__(self, *exc):
        self.depth -= 1
        return False


@torch.compile(backend="eager")
def user_context_class(x, t):
    with t:
        x = x + t.depth
    return x


def test_user_context_class():
    user_context_class(torch.randn(2), Tracker())


@torch.compile(backend="eager")
def nullcontext_block(x):
    with contextlib.nullcontext():
        return x * 3


def test_nullcontext_block():
    nullcontext_block(torch.randn(2))


@torch.compile(backend="eager")
def catch_warnings_block(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return x + 1


def test_catch_warnings_block():
    catch_warnings_block(torch.randn(2))


@torch.compile(backend="eager")
def open_file_block(x):
    with open(__file__) as fh:
        n = len(fh.readline())
    return x * n


def test_open_file_block():
    open_file_block(torch.randn(2))


@torch.compile(backend="eager")
def profiler_record_function(x):
    with torch.profiler.record_function("block"):
        return x * 2


def test_profiler_record_function():
    profiler_record_function(torch.randn(2))


@torch.compile(backend="eager")
def exit_stack(x):
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.no_grad())
        return x * 2


def test_exit_stack():
    exit_stack(torch.randn(2))


@torch.compile(backend="eager")
def sdpa_kernel_context(q):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)


def test_sdpa_kernel_context():
    sdpa_kernel_context(torch.randn(1, 2, 4, 8))


@torch.compile(backend="eager")
def device_context(x):
    with torch.device("cpu"):
        return x + torch.ones(2)


def test_device_context():
    device_context(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
