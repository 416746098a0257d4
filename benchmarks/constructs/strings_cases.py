"""String formatting and string methods inside compiled functions."""
import torch


@torch.compile(backend="eager")
def fstring_of_int(x):
    key = f"layer_{x.shape[0]}"
    return x * len(key)


def test_fstring_of_int():
    fstring_of_int(torch.randn(3))


@torch.compile(backend="eager")
def fstring_of_tensor(x):
    msg = f"value {x}"
    return x + len(msg)


def test_fstring_of_tensor():
    fstring_of_tensor(torch.randn(2))


@torch.compile(backend="eager")
def str_format_method(x, name):
    key = "{}.{}".format(name, "weight")
    return x * len(key)


def test_str_format_method():
    str_format_method(torch.randn(2), "fc")


@torch.compile(backend="eager")
def percent_format(x):
    s = "%s_%d" % ("a", 3)
    return x * len(s)


def test_percent_format():
    percent_format(torch.randn(2))


@torch.compile(backend="eager")
def str_of_tensor(x):
    return x * len(str(x))


def test_str_of_tensor():
    str_of_tensor(torch.randn(2))


@torch.compile(backend="eager")
def repr_of_shape(x):
    return x * len(repr(x.shape))


def test_repr_of_shape():
    repr_of_shape(torch.randn(2))


@torch.compile(backend="eager")
def string_methods(x, name):
    parts = name.strip().lower().split(".")
    joined = "/".join(parts)
    if joined.startswith("enc") and name.endswith("w"):
        return x * 2
    return x


def test_string_methods():
    string_methods(torch.randn(2), " Enc.layer.w ")


@torch.compile(backend="eager")
def string_replace_in(x, name):
    if "bias" in name.replace("_", ""):
        return x
    return x * 2


def test_string_replace_in():
    string_replace_in(torch.randn(2), "b_ias")


@torch.compile(backend="eager")
def fstring_format_spec(x, lr):
    tag = f"{lr:.3e}"
    return x * len(tag)


def test_fstring_format_spec():
    fstring_format_spec(torch.randn(2), 0.001)


@torch.compile(backend="eager")
def fstring_of_item(x):
    tag = f"{x.sum().item():.2f}"
    return x * len(tag)


def test_fstring_of_item():
    fstring_of_item(torch.randn(2))


@torch.compile(backend="eager")
def str_of_dtype(x):
    if str(x.dtype) == "torch.float32":
        return x.double()
    return x


def test_str_of_dtype():
    str_of_dtype(torch.randn(2))


@torch.compile(backend="eager")
def getattr_by_string(x, op):
    return getattr(torch, op)(x)


def test_getattr_by_string():
    getattr_by_string(torch.randn(2), "tanh")


@torch.compile(backend="eager")
def string_isdigit_int(x, s):
    if s.isdigit():
        return x * int(s)
    return x


def test_string_isdigit_int():
    string_isdigit_int(torch.randn(2), "3")


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
