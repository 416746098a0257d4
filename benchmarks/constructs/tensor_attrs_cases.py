"""Tensor attributes and methods inside compiled functions: setting attributes, in-place ops, metadata."""
import torch


@torch.compile(backend="eager")
def set_python_attribute(x):
    x.tag = "seen"
    return x + 1


def test_set_python_attribute():
    set_python_attribute(torch.randn(2))


@torch.compile(backend="eager")
def read_python_attribute(x):
    return x * getattr(x, "scale", 1.0)


def test_read_python_attribute():
    t = torch.randn(2)
    t.scale = 3.0
    read_python_attribute(t)


@torch.compile(backend="eager")
def inplace_ops(x):
    x.add_(1)
    x.mul_(2)
    x.clamp_(min=0)
    return x


def test_inplace_ops():
    inplace_ops(torch.randn(3))


@torch.compile(backend="eager")
def inplace_on_view(x):
    x[0].fill_(0)
    x[:, 1] += 1
    return x


def test_inplace_on_view():
    inplace_on_view(torch.randn(2, 2))


@torch.compile(backend="eager")
def copy_into(x, y):
    x.copy_(y)
    return x


def test_copy_into():
    copy_into(torch.randn(2), torch.randn(2))


@torch.compile(backend="eager")
def requires_grad_setter(x):
    y = x.detach()
    y.requires_grad_(True)
    return y * 2


def test_requires_grad_setter():
    requires_grad_setter(torch.randn(2))


@torch.compile(backend="eager")
def data_attribute(x):
    return x.data * 2


def test_data_attribute():
    data_attribute(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def set_data_attribute(p, x):
    p.data = x
    return p + 1


def test_set_data_attribute():
    set_data_attribute(torch.nn.Parameter(torch.randn(2)), torch.randn(2))


@torch.compile(backend="eager")
def grad_attribute(p):
    if p.grad is not None:
        return p.grad * 2
    return p


def test_grad_attribute():
    p = torch.nn.Parameter(torch.randn(2))
    p.sum().backward()
    grad_attribute(p)


@torch.compile(backend="eager")
def metadata_queries(x):
    if x.dtype == torch.float32 and x.device.type == "cpu" and not x.is_cuda:
        return x.to(torch.float64) * x.stride(0) * x.element_size()
    return x


def test_metadata_queries():
    metadata_queries(torch.randn(2, 3))


@torch.compile(backend="eager")
def data_ptr_call(x):
    return x + (x.data_ptr() % 2)


def test_data_ptr_call():
    data_ptr_call(torch.randn(2))


@torch.compile(backend="eager")
def untyped_storage_call(x):
    return x * x.untyped_storage().nbytes()


def test_untyped_storage_call():
    untyped_storage_call(torch.randn(2))


@torch.compile(backend="eager")
def numpy_method(x):
    return x.numpy() * 2


def test_numpy_method():
    numpy_method(torch.randn(2))


@torch.compile(backend="eager")
def numpy_then_torch(x):
    return torch.from_numpy(x.numpy() + 1)


def test_numpy_then_torch():
    numpy_then_torch(torch.randn(2))


@torch.compile(backend="eager")
def cpu_and_contiguous(x):
    return x.t().contiguous().cpu() + 1


def test_cpu_and_contiguous():
    cpu_and_contiguous(torch.randn(2, 3))


@torch.compile(backend="eager")
def resize_inplace(x):
    x.resize_(4)
    return x


def test_resize_inplace():
    resize_inplace(torch.randn(2))


@torch.compile(backend="eager")
def set_requires_grad_attr(x):
    x.requires_grad = True
    return x * 2


def test_set_requires_grad_attr():
    set_requires_grad_attr(torch.randn(2))


@torch.compile(backend="eager")
def type_conversion_methods(x):
    return x.float() + x.long().float() + x.half().float() + x.type(torch.float32)


def test_type_conversion_methods():
    type_conversion_methods(torch.randn(2))


@torch.compile(backend="eager")
def tensor_dunder_len_iter(x):
    return [t + len(x) for t in x]


def test_tensor_dunder_len_iter():
    tensor_dunder_len_iter(torch.randn(3))


@torch.compile(backend="eager")
def index_assign_scalar(x, i):
    x[i] = 0.0
    return x


def test_index_assign_scalar():
    index_assign_scalar(torch.randn(3), 1)


@torch.compile(backend="eager")
def tensor_new_methods(x):
    return x.new_zeros(2) + x.new_ones(2) + x.new_tensor([1.0, 2.0])


def test_tensor_new_methods():
    tensor_new_methods(torch.randn(2))


@torch.compile(backend="eager")
def register_hook_on_tensor(x):
    y = x * 2
    y.register_hook(lambda g: g * 2)
    return y


def test_register_hook_on_tensor():
    register_hook_on_tensor(torch.randn(2, requires_grad=True)).sum().backward()


@torch.compile(backend="eager")
def retain_grad_call(x):
    y = x * 2
    y.retain_grad()
    return y.sum()


def test_retain_grad_call():
    retain_grad_call(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def tensor_apply_python(x):
    return x.apply_(lambda v: v * 2)


def test_tensor_apply_python():
    tensor_apply_python(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
