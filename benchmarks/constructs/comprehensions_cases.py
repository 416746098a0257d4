"""List, dict and set comprehensions and generator expressions inside compiled functions."""
import torch


@torch.compile(backend="eager")
def list_comp(x):
    return torch.stack([x * i for i in range(3)])


def test_list_comp():
    list_comp(torch.randn(2))


@torch.compile(backend="eager")
def dict_comp(xs):
    d = {k: v.sum() for k, v in xs.items()}
    return d["a"] + d["b"]


def test_dict_comp():
    dict_comp({"a": torch.randn(2), "b": torch.randn(2)})


@torch.compile(backend="eager")
def set_comp(x):
    sizes = {d for d in x.shape}
    return x * len(sizes)


def test_set_comp():
    set_comp(torch.randn(2, 2, 3))


@torch.compile(backend="eager")
def generator_expression_sum(xs):
    return sum(t.sum() for t in xs)


def test_generator_expression_sum():
    generator_expression_sum([torch.randn(2), torch.randn(3)])


@torch.compile(backend="eager")
def nested_comp(x):
    rows = [[x[i] * j for j in range(2)] for i in range(2)]
    return torch.stack([torch.stack(r) for r in rows])


def test_nested_comp():
    nested_comp(torch.randn(3, 2))


@torch.compile(backend="eager")
def comp_with_tensor_condition(xs):
    return [t for t in xs if t.sum() > 0]


def test_comp_with_tensor_condition():
    comp_with_tensor_condition([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def comp_with_shape_condition(xs):
    return torch.cat([t for t in xs if t.shape[0] > 1])


def test_comp_with_shape_condition():
    comp_with_shape_condition([torch.randn(1), torch.randn(3)])


@torch.compile(backend="eager")
def comp_over_tensor(x):
    return torch.stack([row.max() for row in x])


def test_comp_over_tensor():
    comp_over_tensor(torch.randn(3, 4))


@torch.compile(backend="eager")
def comp_calling_item(x):
    return [v.item() for v in x]


def test_comp_calling_item():
    comp_calling_item(torch.randn(3))


@torch.compile(backend="eager")
def walrus_in_comp(x):
    out = [y for i in range(3) if (y := x * i).shape[0] > 0]
    return out[-1]


def test_walrus_in_comp():
    walrus_in_comp(torch.randn(2))


@torch.compile(backend="eager")
def any_generator(xs):
    if any(t is None for t in xs):
        return torch.zeros(1)
    return xs[0]


def test_any_generator():
    any_generator([torch.randn(1), torch.randn(1)])


@torch.compile(backend="eager")
def all_generator_tensor(xs):
    return all(bool(t.all()) for t in xs)


def test_all_generator_tensor():
    all_generator_tensor([torch.ones(2), torch.ones(2)])


@torch.compile(backend="eager")
def dict_from_zip(keys, x):
    d = dict(zip(keys, x.unbind(0)))
    return d["p"] - d["q"]


def test_dict_from_zip():
    dict_from_zip(["p", "q"], torch.randn(2, 3))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
