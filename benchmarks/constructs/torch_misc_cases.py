"""Other torch APIs inside compiled functions: global settings, IO, distributed queries, subclasses."""
import torch
import torch.nn.functional as F


@torch.compile(backend="eager")
def torch_save_call(x, path):
    torch.save(x, path)
    return x + 1


def test_torch_save_call():
    torch_save_call(torch.randn(2), "/tmp/constructs_save.pt")


@torch.compile(backend="eager")
def set_default_dtype_call(x):
    torch.set_default_dtype(torch.float32)
    return x + 1


def test_set_default_dtype_call():
    set_default_dtype_call(torch.randn(2))


@torch.compile(backend="eager")
def cuda_available_branch(x):
    if torch.cuda.is_available():
        return x.cuda()
    return x


def test_cuda_available_branch():
    cuda_available_branch(torch.randn(2))


@torch.compile(backend="eager")
def distributed_query(x):
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return x * torch.distributed.get_world_size()
    return x


def test_distributed_query():
    distributed_query(torch.randn(2))


@torch.compile(backend="eager")
def deterministic_query(x):
    if torch.are_deterministic_algorithms_enabled():
        return x
    return x * 2


def test_deterministic_query():
    deterministic_query(torch.randn(2))


@torch.compile(backend="eager")
def set_num_threads_call(x):
    torch.set_num_threads(1)
    return x + 1


def test_set_num_threads_call():
    set_num_threads_call(torch.randn(2))


@torch.compile(backend="eager")
def interpolate_scale_from_tensor(x, s):
    return F.interpolate(x, scale_factor=float(s))


def test_interpolate_scale_from_tensor():
    interpolate_scale_from_tensor(torch.randn(1, 1, 4), torch.tensor(2.0))


@torch.compile(backend="eager")
def interpolate_size_from_shape(x, y):
    return F.interpolate(x, size=y.shape[-1])


def test_interpolate_size_from_shape():
    interpolate_size_from_shape(torch.randn(1, 1, 4), torch.randn(1, 1, 8))


class Tagged(torch.Tensor):
    pass


@torch.compile(backend="eager")
def tensor_subclass_input(x):
    return x * 2


def test_tensor_subclass_input():
    tensor_subclass_input(torch.randn(2).as_subclass(Tagged))


@torch.compile(backend="eager")
def jit_is_scripting(x):
    if torch.jit.is_scripting():
        return x
    return x + 1


def test_jit_is_scripting():
    jit_is_scripting(torch.randn(2))


@torch.compile(backend="eager")
def backends_flag_read(x):
    if torch.backends.cudnn.benchmark:
        return x
    return x * 2


def test_backends_flag_read():
    backends_flag_read(torch.randn(2))


@torch.compile(backend="eager")
def backends_flag_write(x):
    torch.backends.cudnn.benchmark = True
    return x * 2


def test_backends_flag_write():
    backends_flag_write(torch.randn(2))


@torch.compile(backend="eager")
def one_hot_without_classes(x):
    return F.one_hot(x)


def test_one_hot_without_classes():
    one_hot_without_classes(torch.tensor([0, 2, 1]))


@torch.compile(backend="eager")
def one_hot_with_classes(x):
    return F.one_hot(x, num_classes=3)


def test_one_hot_with_classes():
    one_hot_with_classes(torch.tensor([0, 2, 1]))


@torch.compile(backend="eager")
def sparse_tensor_build(i, v):
    return torch.sparse_coo_tensor(i, v, (3,)).to_dense()


def test_sparse_tensor_build():
    sparse_tensor_build(torch.tensor([[0, 2]]), torch.tensor([1.0, 2.0]))


@torch.compile(backend="eager")
def nested_tensor_build(a, b):
    return torch.nested.nested_tensor([a, b])


def test_nested_tensor_build():
    nested_tensor_build(torch.randn(2), torch.randn(3))


@torch.compile(backend="eager")
def tensor_from_python_list(x):
    return x + torch.tensor([1.0, 2.0])


def test_tensor_from_python_list():
    tensor_from_python_list(torch.randn(2))


@torch.compile(backend="eager")
def cross_entropy_ignore_index(logits, y):
    return F.cross_entropy(logits, y, ignore_index=-1)


def test_cross_entropy_ignore_index():
    cross_entropy_ignore_index(torch.randn(3, 4), torch.tensor([0, -1, 2]))


@torch.compile(backend="eager")
def ctc_loss_call(lp, tgt, il, tl):
    return F.ctc_loss(lp, tgt, il, tl)


def test_ctc_loss_call():
    lp = torch.randn(5, 1, 3).log_softmax(-1)
    ctc_loss_call(lp, torch.tensor([[1, 2]]), torch.tensor([5]), torch.tensor([2]))


@torch.compile(backend="eager")
def embedding_bag_offsets(w, idx, offs):
    return F.embedding_bag(idx, w, offs)


def test_embedding_bag_offsets():
    embedding_bag_offsets(torch.randn(5, 2), torch.tensor([0, 1, 3]), torch.tensor([0, 2]))


@torch.compile(backend="eager")
def linalg_calls(x):
    return torch.linalg.inv(x) + torch.linalg.det(x)


def test_linalg_calls():
    linalg_calls(torch.eye(2) * 2)


@torch.compile(backend="eager")
def stft_call(x):
    return torch.stft(x, n_fft=8, return_complex=True).abs()


def test_stft_call():
    stft_call(torch.randn(32))


@torch.compile(backend="eager")
def autocast_state_query(x):
    if torch.is_autocast_enabled():
        return x.half()
    return x


def test_autocast_state_query():
    autocast_state_query(torch.randn(2))


@torch.compile(backend="eager")
def load_state_dict_inside(m, sd, x):
    m.load_state_dict(sd)
    return m(x)


def test_load_state_dict_inside():
    m = torch.nn.Linear(2, 2)
    load_state_dict_inside(m, torch.nn.Linear(2, 2).state_dict(), torch.randn(1, 2))


@torch.compile(backend="eager")
def optimizer_step_inside(opt, p):
    (p * 2).sum().backward()
    opt.step()
    opt.zero_grad()
    return p


def test_optimizer_step_inside():
    p = torch.nn.Parameter(torch.randn(2))
    optimizer_step_inside(torch.optim.SGD([p], lr=0.1), p)


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
