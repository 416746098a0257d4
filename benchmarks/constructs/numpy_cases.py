"""numpy inside compiled functions: numpy calls on tensors' arrays, ndarray inputs, numpy scalars."""
import numpy as np
import torch


@torch.compile(backend="eager")
def np_sum_of_numpy(x):
    return np.sum(x.numpy())


def test_np_sum_of_numpy():
    np_sum_of_numpy(torch.randn(3))


@torch.compile(backend="eager")
def ndarray_input(a):
    return np.exp(a) + 1


def test_ndarray_input():
    ndarray_input(np.ones(3, dtype=np.float32))


@torch.compile(backend="eager")
def np_constants(x):
    return x * np.pi + np.float32(2.0)


def test_np_constants():
    np_constants(torch.randn(2))


@torch.compile(backend="eager")
def np_array_of_tensor(x):
    a = np.array(x)
    return torch.from_numpy(a) + 1


def test_np_array_of_tensor():
    np_array_of_tensor(torch.randn(2))


@torch.compile(backend="eager")
def np_on_shape(x):
    n = int(np.prod(x.shape))
    return x.reshape(n)


def test_np_on_shape():
    np_on_shape(torch.randn(2, 3))


@torch.compile(backend="eager")
def np_where_array(a):
    return np.where(a > 0, a, 0)


def test_np_where_array():
    np_where_array(np.array([-1.0, 2.0]))


@torch.compile(backend="eager")
def as_tensor_of_list(x):
    return x + torch.as_tensor([1.0, 2.0])


def test_as_tensor_of_list():
    as_tensor_of_list(torch.randn(2))


@torch.compile(backend="eager")
def torch_tensor_of_tensor_list(xs):
    return torch.tensor([t.sum() for t in xs])


def test_torch_tensor_of_tensor_list():
    torch_tensor_of_tensor_list([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def torch_tensor_of_item(x):
    return torch.tensor(x.sum().item())


def test_torch_tensor_of_item():
    torch_tensor_of_item(torch.randn(2))


@torch.compile(backend="eager")
def np_linspace_python(x):
    grid = np.linspace(0, 1, 4)
    return x * torch.from_numpy(grid)


def test_np_linspace_python():
    np_linspace_python(torch.randn(4, dtype=torch.float64))


@torch.compile(backend="eager")
def numpy_scalar_arg(x, s):
    return x * s


def test_numpy_scalar_arg():
    numpy_scalar_arg(torch.randn(2), np.float64(0.5))


@torch.compile(backend="eager")
def np_isnan_of_item(x):
    return x if not np.isnan(x.sum().item()) else x * 0


def test_np_isnan_of_item():
    np_isnan_of_item(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
