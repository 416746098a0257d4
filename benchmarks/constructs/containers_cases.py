"""dict, list, set and tuple methods and collections types inside compiled functions."""
import collections

import torch


@torch.compile(backend="eager")
def dict_get_setdefault(d, x):
    d.setdefault("b", 2.0)
    return x * d.get("a", 1.0) * d["b"]


def test_dict_get_setdefault():
    dict_get_setdefault({"a": 3.0}, torch.randn(2))


@torch.compile(backend="eager")
def dict_update_pop(d, x):
    d.update(c=x)
    y = d.pop("c")
    return y + len(d)


def test_dict_update_pop():
    dict_update_pop({"a": 1}, torch.randn(2))


@torch.compile(backend="eager")
def dict_items_loop(d):
    out = 0
    for k, v in d.items():
        out = out + v * len(k)
    return out


def test_dict_items_loop():
    dict_items_loop({"ab": torch.randn(2), "c": torch.randn(2)})


@torch.compile(backend="eager")
def list_methods(x):
    xs = [x]
    xs.append(x + 1)
    xs.extend([x + 2, x + 3])
    xs.insert(0, x - 1)
    last = xs.pop()
    return torch.stack(xs).sum(0) + last


def test_list_methods():
    list_methods(torch.randn(2))


@torch.compile(backend="eager")
def list_sort_python(x):
    ks = [3, 1, 2]
    ks.sort(reverse=True)
    return x * ks[0] + ks.index(1)


def test_list_sort_python():
    list_sort_python(torch.randn(2))


@torch.compile(backend="eager")
def set_operations(x):
    a = {1, 2, 3}
    b = {2, 3, 4}
    return x * len(a & b) + len(a | b) - len(a - b)


def test_set_operations():
    set_operations(torch.randn(2))


@torch.compile(backend="eager")
def set_of_tensors(x, y):
    s = {x, y}
    return len(s) * x


def test_set_of_tensors():
    set_of_tensors(torch.randn(2), torch.randn(2))


@torch.compile(backend="eager")
def tuple_unpacking(x):
    a, *rest = x.unbind(0)
    (b, c), d = (rest[0], rest[1]), a
    return a + b + c + d


def test_tuple_unpacking():
    tuple_unpacking(torch.randn(4, 2))


@torch.compile(backend="eager")
def star_call(xs):
    return torch.cat([*xs, *xs])


def test_star_call():
    star_call([torch.randn(2), torch.randn(2)])


@torch.compile(backend="eager")
def ordered_dict(x):
    d = collections.OrderedDict()
    d["a"] = x
    d["b"] = x * 2
    d.move_to_end("a")
    return list(d.values())[-1]


def test_ordered_dict():
    ordered_dict(torch.randn(2))


@torch.compile(backend="eager")
def default_dict(xs):
    d = collections.defaultdict(list)
    for i, t in enumerate(xs):
        d[i % 2].append(t)
    return torch.stack(d[0]).sum(0)


def test_default_dict():
    default_dict([torch.randn(2) for _ in range(4)])


@torch.compile(backend="eager")
def deque_ops(x):
    q = collections.deque(maxlen=2)
    for i in range(3):
        q.append(x * i)
    return q.popleft() + q[-1]


def test_deque_ops():
    deque_ops(torch.randn(2))


@torch.compile(backend="eager")
def counter_ops(x):
    c = collections.Counter("abca")
    return x * c["a"]


def test_counter_ops():
    counter_ops(torch.randn(2))


@torch.compile(backend="eager")
def dict_with_tensor_keys(x, y):
    d = {x: 1, y: 2}
    return x * d[x] + y * d[y]


def test_dict_with_tensor_keys():
    dict_with_tensor_keys(torch.randn(2), torch.randn(2))


@torch.compile(backend="eager")
def in_operator_list(x, names):
    if "scale" in names:
        return x * 2
    return x


def test_in_operator_list():
    in_operator_list(torch.randn(2), ["scale", "shift"])


@torch.compile(backend="eager")
def list_of_tensors_index_by_tensor(xs, i):
    return xs[i]


def test_list_of_tensors_index_by_tensor():
    list_of_tensors_index_by_tensor([torch.randn(2), torch.randn(2)], torch.tensor(1))


@torch.compile(backend="eager")
def dict_keys_membership(d, x):
    keys = d.keys() - {"skip"}
    return x * len(keys)


def test_dict_keys_membership():
    dict_keys_membership({"a": 1, "skip": 2}, torch.randn(2))


@torch.compile(backend="eager")
def list_slicing_assignment(x):
    xs = [x, x, x, x]
    xs[1:3] = [x * 0]
    del xs[0]
    return sum(xs)


def test_list_slicing_assignment():
    list_slicing_assignment(torch.randn(2))


@torch.compile(backend="eager")
def frozenset_membership(x, k):
    allowed = frozenset(["a", "b"])
    return x * (k in allowed)


def test_frozenset_membership():
    frozenset_membership(torch.randn(2), "a")


@torch.compile(backend="eager")
def dict_fromkeys_copy(x):
    d = dict.fromkeys(["a", "b"], 0)
    e = d.copy()
    e["a"] = 5
    return x * (e["a"] + d["a"])


def test_dict_fromkeys_copy():
    dict_fromkeys_copy(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
