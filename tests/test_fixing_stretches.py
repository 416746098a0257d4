"""A rewrite is proven sound by parsing the top-level statements it touched: the same answer as
parsing the whole rewritten file."""
from __future__ import annotations

import random
from collections import Counter

import libcst as cst
import pytest

from dynalint.engine.fixing import _comments, _sound, _sound_near

SOURCE = '''\
"""Doc."""
# header comment
import torch  # why


@decorator
def f(x):  # f
    if x.sum() > 0:
        return x * 2
    # inside
    return x


class A:
    y = (1,
         2)

    def g(self):
        s = """a
b"""
        return s
x = 1; y = 2
z = [
    3,  # three
]
# footer
'''

PIECES = ["", "    ", "# new\n", "    # new\n", "pass\n", "    pass\n", "else:\n", "    return x\n", "(\n", ")\n",
          '"""\n', "def h():\n", "import torch\n\n", "x = 1 \\\n", "\n"]


def _mutations(rng: random.Random, lines: list[str]) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        k = rng.randint(0, len(out))
        roll = rng.random()
        if roll < 0.4:
            out.insert(k, rng.choice(PIECES))
        elif roll < 0.6 and out:
            del out[min(k, len(out) - 1)]
        elif roll < 0.8 and out:
            i = min(k, len(out) - 1)
            out[i] = out[i].replace("#", "") if "#" in out[i] else "    " + out[i]
        elif out:
            i = min(k, len(out) - 1)
            out.insert(k, out[i])
    return out


@pytest.mark.parametrize("seed", range(300))
def test_local_proof_agrees_with_parsing_the_whole_file(seed: int) -> None:
    rng = random.Random(seed)
    module = cst.parse_module(SOURCE)
    comments = Counter(_comments(module))
    new = "".join(_mutations(rng, SOURCE.splitlines(keepends=True)))
    assert _sound_near(module, SOURCE, new, comments) == _sound(new, comments), new


def test_a_comment_moved_to_a_statement_appended_at_the_end_is_kept() -> None:
    """A rewrite that moves statements with their comments into a helper appended after the file's last
    statement (``eager-tail`` splitting the last function) keeps every comment, though no stretch keeps its
    own."""
    module = cst.parse_module(SOURCE)
    comments = Counter(_comments(module))
    new = SOURCE.replace("    # inside\n", "") + "\n\ndef helper():\n    # inside\n    pass\n"
    assert _sound(new, comments)
    assert _sound_near(module, SOURCE, new, comments)
