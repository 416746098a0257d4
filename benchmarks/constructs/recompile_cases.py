"""Compiled functions called with varying Python values, shapes and state: recompiles."""
import torch
from torch import nn

threshold = 0.5
_config = {"scale": 1.0}


@torch.compile(backend="eager")
def int_argument(x, n):
    return x * n


def test_int_argument():
    for n in (1, 2, 3):
        int_argument(torch.randn(2), n)


@torch.compile(backend="eager")
def float_argument(x, lr):
    return x - lr * x


def test_float_argument():
    for lr in (0.1, 0.01, 0.001):
        float_argument(torch.randn(2), lr)


@torch.compile(backend="eager")
def bool_argument(x, training):
    if training:
        return x * 2
    return x


def test_bool_argument():
    bool_argument(torch.randn(2), True)
    bool_argument(torch.randn(2), False)


@torch.compile(backend="eager")
def string_argument(x, mode):
    if mode == "sum":
        return x.sum()
    return x.mean()


def test_string_argument():
    string_argument(torch.randn(2), "sum")
    string_argument(torch.randn(2), "mean")


@torch.compile(backend="eager")
def none_or_tensor(x, bias=None):
    if bias is None:
        return x
    return x + bias


def test_none_or_tensor():
    none_or_tensor(torch.randn(2))
    none_or_tensor(torch.randn(2), torch.randn(2))


@torch.compile(backend="eager")
def list_length_varies(xs):
    return torch.stack(xs).sum(0)


def test_list_length_varies():
    list_length_varies([torch.randn(2)] * 2)
    list_length_varies([torch.randn(2)] * 3)


@torch.compile(backend="eager")
def shape_varies(x):
    return x.sum(0)


def test_shape_varies():
    for n in (2, 3, 4):
        shape_varies(torch.randn(n, 2))


@torch.compile(backend="eager")
def dtype_varies(x):
    return x + 1


def test_dtype_varies():
    dtype_varies(torch.randn(2))
    dtype_varies(torch.randn(2, dtype=torch.float64))


@torch.compile(backend="eager")
def requires_grad_varies(x):
    return x * 2


def test_requires_grad_varies():
    requires_grad_varies(torch.randn(2))
    requires_grad_varies(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def grad_mode_varies(x):
    return x * 2


def test_grad_mode_varies():
    grad_mode_varies(torch.randn(2))
    with torch.no_grad():
        grad_mode_varies(torch.randn(2))


@torch.compile(backend="eager")
def global_value_changes(x):
    return x * (x > threshold)


def test_global_value_changes():
    global threshold
    global_value_changes(torch.randn(2))
    threshold = 0.7
    global_value_changes(torch.randn(2))


@torch.compile(backend="eager")
def global_dict_entry_changes(x):
    return x * _config["scale"]


def test_global_dict_entry_changes():
    global_dict_entry_changes(torch.randn(2))
    _config["scale"] = 2.0
    global_dict_entry_changes(torch.randn(2))


class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = 1.0

    def forward(self, x):
        return x * self.factor


def test_module_attribute_changes():
    m = Scaler()
    cm = torch.compile(m, backend="eager")
    cm(torch.randn(2))
    m.factor = 2.0
    cm(torch.randn(2))


class Counted(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + self.calls


def test_module_counter_each_call():
    cm = torch.compile(Counted(), backend="eager")
    for _ in range(3):
        cm(torch.randn(2))


@torch.compile(backend="eager")
def item_crosses_break(x):
    n = x.sum().item()
    return x * n


def test_item_crosses_break():
    item_crosses_break(torch.randn(2))
    item_crosses_break(torch.randn(2))


@torch.compile(backend="eager")
def kwarg_added(x, **kwargs):
    if kwargs.get("scale"):
        return x * kwargs["scale"]
    return x


def test_kwarg_added():
    kwarg_added(torch.randn(2))
    kwarg_added(torch.randn(2), scale=2.0)


@torch.compile(backend="eager")
def tuple_argument_values(x, size):
    return x.reshape(size)


def test_tuple_argument_values():
    tuple_argument_values(torch.randn(6), (2, 3))
    tuple_argument_values(torch.randn(6), (3, 2))


@torch.compile(backend="eager")
def different_callable(f, x):
    return f(x)


def test_different_callable():
    different_callable(torch.sin, torch.randn(2))
    different_callable(torch.cos, torch.randn(2))


@torch.compile(backend="eager")
def train_eval_flip(m, x):
    return m(x)


def test_train_eval_flip():
    m = nn.Dropout(0.5)
    train_eval_flip(m, torch.randn(2))
    m.eval()
    train_eval_flip(m, torch.randn(2))


@torch.compile(backend="eager")
def range_from_argument(x, steps):
    for _ in range(steps):
        x = x * 0.5
    return x


def test_range_from_argument():
    range_from_argument(torch.randn(2), 2)
    range_from_argument(torch.randn(2), 3)


@torch.compile(backend="eager")
def dict_argument_values(x, cfg):
    return x * cfg["alpha"] + cfg["beta"]


def test_dict_argument_values():
    dict_argument_values(torch.randn(2), {"alpha": 1.0, "beta": 0.0})
    dict_argument_values(torch.randn(2), {"alpha": 2.0, "beta": 1.0})


@torch.compile(backend="eager")
def enum_like_int_flag(x, level):
    if level > 1:
        return x.relu()
    return x


def test_enum_like_int_flag():
    enum_like_int_flag(torch.randn(2), 1)
    enum_like_int_flag(torch.randn(2), 2)


@torch.compile(backend="eager")
def rank_varies(x):
    return x * 2


def test_rank_varies():
    rank_varies(torch.randn(2))
    rank_varies(torch.randn(2, 2))


@torch.compile(backend="eager")
def closure_cell_changes(x):
    return x * _factor_cell()


_factor = [1.0]


def _factor_cell():
    return _factor[0]


def test_closure_cell_changes():
    closure_cell_changes(torch.randn(2))
    _factor[0] = 3.0
    closure_cell_changes(torch.randn(2))


@torch.compile(backend="eager")
def float_from_schedule(x, step):
    warm = min(1.0, step / 10)
    return x * warm


def test_float_from_schedule():
    for step in range(3):
        float_from_schedule(torch.randn(2), step)


@torch.compile(backend="eager")
def len_of_python_list(x, names):
    return x * len(names)


def test_len_of_python_list():
    len_of_python_list(torch.randn(2), ["a"])
    len_of_python_list(torch.randn(2), ["a", "b"])


class Decayer:
    def __init__(self):
        self.decay = 0.9

    @torch.compile(backend="eager")
    def update(self, x):
        return x * self.decay


def test_object_attribute_varies():
    d = Decayer()
    d.update(torch.randn(2))
    d.decay = 0.99
    d.update(torch.randn(2))


@torch.compile(backend="eager")
def shape_int_in_python(x):
    n = x.shape[0]
    return torch.arange(n) * 2


def test_shape_int_in_python():
    shape_int_in_python(torch.randn(2))
    shape_int_in_python(torch.randn(5))


@torch.compile(backend="eager")
def device_string_arg(x, device):
    return x.to(device) + 1


def test_device_string_arg():
    device_string_arg(torch.randn(2), "cpu")
    device_string_arg(torch.randn(2), torch.device("cpu"))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
