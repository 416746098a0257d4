"""Standard library calls inside compiled functions: copy, warnings, os, time, logging, print, inspect."""
import copy
import inspect
import json
import logging
import os
import sys
import time
import warnings
import weakref

import torch

logger = logging.getLogger(__name__)


@torch.compile(backend="eager")
def deepcopy_tensor(x):
    y = copy.deepcopy(x)
    return y + 1


def test_deepcopy_tensor():
    deepcopy_tensor(torch.randn(2))


@torch.compile(backend="eager")
def deepcopy_dict(d, x):
    e = copy.deepcopy(d)
    e["a"] = 5
    return x * e["a"]


def test_deepcopy_dict():
    deepcopy_dict({"a": 1}, torch.randn(2))


@torch.compile(backend="eager")
def copy_copy_list(xs):
    ys = copy.copy(xs)
    ys.append(xs[0])
    return len(ys) * xs[0]


def test_copy_copy_list():
    copy_copy_list([torch.randn(2)])


@torch.compile(backend="eager")
def deepcopy_module(m, x):
    return copy.deepcopy(m)(x)


def test_deepcopy_module():
    deepcopy_module(torch.nn.Linear(2, 2), torch.randn(2))


@torch.compile(backend="eager")
def warnings_warn(x):
    warnings.warn("deprecated path")
    return x + 1


def test_warnings_warn():
    warnings_warn(torch.randn(2))


@torch.compile(backend="eager")
def os_environ_get(x):
    if os.environ.get("CONSTRUCTS_FLAG", "0") == "1":
        return x * 2
    return x


def test_os_environ_get():
    os_environ_get(torch.randn(2))


@torch.compile(backend="eager")
def os_getenv(x):
    return x * len(os.getenv("HOME", ""))


def test_os_getenv():
    os_getenv(torch.randn(2))


@torch.compile(backend="eager")
def time_time(x):
    t0 = time.time()
    y = x * 2
    return y, time.time() - t0


def test_time_time():
    time_time(torch.randn(2))


@torch.compile(backend="eager")
def time_perf_counter(x):
    t0 = time.perf_counter()
    return x + t0


def test_time_perf_counter():
    time_perf_counter(torch.randn(2))


@torch.compile(backend="eager")
def print_call(x):
    print("shape", x.shape)
    return x + 1


def test_print_call():
    print_call(torch.randn(2))


@torch.compile(backend="eager")
def logging_info(x):
    logging.info("step")
    return x + 1


def test_logging_info():
    logging_info(torch.randn(2))


@torch.compile(backend="eager")
def logger_debug(x):
    logger.debug("value %s", x.shape)
    return x * 2


def test_logger_debug():
    logger_debug(torch.randn(2))


@torch.compile(backend="eager")
def logger_warning(x):
    logger.warning("careful")
    return x * 2


def test_logger_warning():
    logger_warning(torch.randn(2))


@torch.compile(backend="eager")
def sys_platform(x):
    if sys.platform.startswith("linux"):
        return x + 1
    return x


def test_sys_platform():
    sys_platform(torch.randn(2))


@torch.compile(backend="eager")
def inspect_signature(f, x):
    n = len(inspect.signature(f).parameters)
    return x * n


def test_inspect_signature():
    inspect_signature(lambda a, b: a, torch.randn(2))


@torch.compile(backend="eager")
def json_dumps(x, cfg):
    s = json.dumps(cfg)
    return x * len(s)


def test_json_dumps():
    json_dumps(torch.randn(2), {"a": 1})


@torch.compile(backend="eager")
def weakref_deref(r, x):
    obj = r()
    return x + obj.w


class _W:
    w = 1.0


_w = _W()


def test_weakref_deref():
    weakref_deref(weakref.ref(_w), torch.randn(2))


@torch.compile(backend="eager")
def isinstance_abc(x, xs):
    import collections.abc

    if isinstance(xs, collections.abc.Sequence):
        return x * len(xs)
    return x


def test_isinstance_abc():
    isinstance_abc(torch.randn(2), [1, 2])


@torch.compile(backend="eager")
def print_to_stderr(x):
    print("msg", file=sys.stderr)
    return x


def test_print_to_stderr():
    print_to_stderr(torch.randn(2))


@torch.compile(backend="eager")
def os_path_join(x, root):
    p = os.path.join(root, "ckpt.pt")
    return x * len(p)


def test_os_path_join():
    os_path_join(torch.randn(2), "/tmp")


@torch.compile(backend="eager")
def warnings_warn_in_branch(x):
    if x.dim() > 3:
        warnings.warn("large rank")
    return x + 1


def test_warnings_warn_in_branch():
    warnings_warn_in_branch(torch.randn(2))


@torch.compile(backend="eager")
def input_dict_environ(x):
    return x * ("CONSTRUCTS_UNSET" in os.environ)


def test_input_dict_environ():
    input_dict_environ(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
