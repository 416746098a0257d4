"""A script that compiles its functions from a table (``for fn in (f, g): torch.compile(fn)(boxes, scores)``)
passes each of them what the loop's body passes: the scores are a 1-d tensor there, so an element of their
``argsort`` or ``argmax`` is 0-d, and indexing with it reads its value (measured on torch 2.13: "Data
dependent operator", ``aten._local_scalar_dense``).  A ``copy.deepcopy`` of a parameter the analysis can
only guess to be a tensor (a config the table passes) is not taken for a deep copy of tensors."""
from helpers import break_tests

TABLE = """\
import copy
import dataclasses

import torch


@dataclasses.dataclass
class Config:
    temperature: float = 1.0


def top_box(boxes, scores):
    order = scores.argsort(descending=True)
    i = order[0]
    return boxes[i, :2]


def best_box(boxes, scores):
    j = scores.argmax()
    return boxes[j]


def scaled(logits, cfg):
    local = copy.deepcopy(cfg)
    return logits / local.temperature


def main():
    boxes, scores = torch.rand(5, 4), torch.rand(5)
    out = []
    for fn in (top_box, best_box):
        out.append(torch.compile(fn, backend="eager")(boxes, scores))
    for fn, args in ((scaled, (scores, Config())), (scaled, (scores, Config(0.7)))):
        out.append(torch.compile(fn, backend="eager")(*args))
    return out
"""
test_check, test_dynamo = break_tests(TABLE, {(15, "DYN102"), (20, "DYN102")},
                                      "[()]")

#: scores of two dimensions: `order[0]` is a row, and indexing with it is advanced indexing, which reads no
#: data (the full `argmax()` is still 0-d)
UNKNOWN_RANK = TABLE.replace("(boxes, scores))\n    for", "(boxes, torch.rand(2, 5)))\n    for")
test_check_rank, test_dynamo_rank = break_tests(UNKNOWN_RANK, {(20, "DYN102")},
                                                "[()]")

#: compiled functions bound by unpacking (`cf, cg = torch.compile(f), torch.compile(g)`): the calls of each
#: name are the calls of its function, so the generator `cf` is given is known to be one (Dynamo cannot hand
#: a torch.Generator argument to an op: "Failed to convert args/kwargs to proxy", measured on torch 2.13)
UNPACKED = """\
import torch

GEN = torch.Generator().manual_seed(0)


def masked(x, gen):
    return x * (torch.rand(x.shape, generator=gen) > 0.5)


def shifted(x):
    return x + 1


def main():
    cf, cg = torch.compile(masked, backend="eager"), torch.compile(shifted, backend="eager")
    return cf(torch.randn(4), GEN), cg(torch.randn(4))
"""
test_check_unpacked, test_dynamo_unpacked = break_tests(UNPACKED, {(7, "DYN105")}, "[()]")

#: the table bound to a name that only loops iterate (`fns = [top_box, best_box]`; `for fn in fns:`): each
#: function is given what the loop's body passes, as with the table written out in the loop
NAMED_TABLE = TABLE.replace("    for fn in (top_box, best_box):\n",
                            "    fns = [top_box, best_box]\n    for fn in fns:\n")
test_check_named, test_dynamo_named = break_tests(NAMED_TABLE, {(15, "DYN102"), (20, "DYN102")}, "[()]")
