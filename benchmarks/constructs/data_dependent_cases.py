"""Data-dependent torch operations inside compiled functions (default configuration)."""
import torch


@torch.compile(backend="eager")
def nonzero_call(x):
    return torch.nonzero(x > 0)


def test_nonzero_call():
    nonzero_call(torch.randn(5))


@torch.compile(backend="eager")
def nonzero_method_as_tuple(x):
    idx = (x > 0).nonzero(as_tuple=True)
    return x[idx]


def test_nonzero_method_as_tuple():
    nonzero_method_as_tuple(torch.randn(5))


@torch.compile(backend="eager")
def unique_call(x):
    return torch.unique(x)


def test_unique_call():
    unique_call(torch.tensor([1, 2, 2, 3]))


@torch.compile(backend="eager")
def unique_method_counts(x):
    vals, counts = x.unique(return_counts=True)
    return vals * counts


def test_unique_method_counts():
    unique_method_counts(torch.tensor([1, 2, 2, 3]))


@torch.compile(backend="eager")
def unique_consecutive_call(x):
    return torch.unique_consecutive(x)


def test_unique_consecutive_call():
    unique_consecutive_call(torch.tensor([1, 1, 2, 3, 3]))


@torch.compile(backend="eager")
def masked_select_call(x):
    return torch.masked_select(x, x > 0)


def test_masked_select_call():
    masked_select_call(torch.randn(5))


@torch.compile(backend="eager")
def boolean_mask_index(x):
    return x[x > 0]


def test_boolean_mask_index():
    boolean_mask_index(torch.randn(5))


@torch.compile(backend="eager")
def boolean_mask_store(x):
    x[x < 0] = 0
    return x


def test_boolean_mask_store():
    boolean_mask_store(torch.randn(5))


@torch.compile(backend="eager")
def equal_call(x, y):
    if torch.equal(x, y):
        return x
    return y


def test_equal_call():
    equal_call(torch.ones(2), torch.ones(2))


@torch.compile(backend="eager")
def allclose_call(x, y):
    return x * torch.allclose(x, y)


def test_allclose_call():
    allclose_call(torch.ones(2), torch.ones(2))


@torch.compile(backend="eager")
def item_call(x):
    return x.sum().item()


def test_item_call():
    item_call(torch.randn(3))


@torch.compile(backend="eager")
def item_then_use(x):
    s = x.max().item()
    return x / s


def test_item_then_use():
    item_then_use(torch.rand(3))


@torch.compile(backend="eager")
def tolist_call(x):
    return x.tolist()


def test_tolist_call():
    tolist_call(torch.randn(3))


@torch.compile(backend="eager")
def tolist_then_loop(x, lengths):
    out = []
    for n in lengths.tolist():
        out.append(x[:n].sum())
    return torch.stack(out)


def test_tolist_then_loop():
    tolist_then_loop(torch.randn(5), torch.tensor([1, 3]))


@torch.compile(backend="eager")
def where_one_arg(x):
    return torch.where(x > 0)


def test_where_one_arg():
    where_one_arg(torch.randn(4))


@torch.compile(backend="eager")
def where_three_args(x):
    return torch.where(x > 0, x, torch.zeros_like(x))


def test_where_three_args():
    where_three_args(torch.randn(4))


@torch.compile(backend="eager")
def argwhere_call(x):
    return torch.argwhere(x)


def test_argwhere_call():
    argwhere_call(torch.tensor([0, 1, 0, 2]))


@torch.compile(backend="eager")
def repeat_interleave_tensor(x, r):
    return torch.repeat_interleave(x, r)


def test_repeat_interleave_tensor():
    repeat_interleave_tensor(torch.randn(3), torch.tensor([1, 2, 1]))


@torch.compile(backend="eager")
def repeat_interleave_int(x):
    return x.repeat_interleave(2)


def test_repeat_interleave_int():
    repeat_interleave_int(torch.randn(3))


@torch.compile(backend="eager")
def bincount_call(x):
    return torch.bincount(x)


def test_bincount_call():
    bincount_call(torch.tensor([0, 1, 1, 3]))


@torch.compile(backend="eager")
def count_nonzero_call(x):
    return torch.count_nonzero(x) * 2


def test_count_nonzero_call():
    count_nonzero_call(torch.tensor([0, 1, 1, 3]))


@torch.compile(backend="eager")
def topk_sort(x):
    v, i = torch.topk(x, 2)
    s, _ = torch.sort(x)
    return v.sum() + s[0] + i.float().sum()


def test_topk_sort():
    topk_sort(torch.randn(5))


@torch.compile(backend="eager")
def index_with_long_tensor(x, idx):
    return x[idx]


def test_index_with_long_tensor():
    index_with_long_tensor(torch.randn(5), torch.tensor([0, 2]))


@torch.compile(backend="eager")
def slice_bound_from_tensor(x, n):
    return x[: n.item()]


def test_slice_bound_from_tensor():
    slice_bound_from_tensor(torch.randn(5), torch.tensor(3))


@torch.compile(backend="eager")
def any_in_if(x):
    if torch.any(torch.isnan(x)):
        return torch.nan_to_num(x)
    return x


def test_any_in_if():
    any_in_if(torch.randn(3))


@torch.compile(backend="eager")
def histc_call(x):
    return torch.histc(x, bins=4)


def test_histc_call():
    histc_call(torch.randn(10))


@torch.compile(backend="eager")
def searchsorted_call(edges, x):
    return torch.searchsorted(edges, x)


def test_searchsorted_call():
    searchsorted_call(torch.tensor([0.0, 1.0, 2.0]), torch.tensor([0.5, 1.5]))


@torch.compile(backend="eager")
def index_put_bool(x, m):
    return x.index_put((m,), torch.tensor(0.0))


def test_index_put_bool():
    index_put_bool(torch.randn(4), torch.tensor([True, False, True, False]))


@torch.compile(backend="eager")
def masked_fill_call(x):
    return x.masked_fill(x < 0, 0.0)


def test_masked_fill_call():
    masked_fill_call(torch.randn(4))


@torch.compile(backend="eager")
def multinomial_call(p):
    return torch.multinomial(p, 2)


def test_multinomial_call():
    multinomial_call(torch.tensor([0.2, 0.3, 0.5]))


@torch.compile(backend="eager")
def tensor_to_python_bool(x):
    return bool(x.all())


def test_tensor_to_python_bool():
    tensor_to_python_bool(torch.ones(2))


@torch.compile(backend="eager")
def is_nonzero_call(x):
    return x.sum().is_nonzero()


def test_is_nonzero_call():
    is_nonzero_call(torch.ones(2))


@torch.compile(backend="eager")
def scalar_tensor_as_size(x, n):
    return torch.zeros(n)  + x.sum()


def test_scalar_tensor_as_size():
    scalar_tensor_as_size(torch.randn(2), torch.tensor(3))


@torch.compile(backend="eager")
def max_dim_values(x):
    return x.max(dim=0).values


def test_max_dim_values():
    max_dim_values(torch.randn(3, 2))


@torch.compile(backend="eager")
def split_with_tensor_sizes(x, sizes):
    return torch.split(x, sizes.tolist())


def test_split_with_tensor_sizes():
    split_with_tensor_sizes(torch.randn(5), torch.tensor([2, 3]))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
