"""Functions a function defines and compiles (``def case(): @torch.compile def fn(...)``, as Dynamo's own
tests write them): each is a function of its own, called where the name its ``def`` binds reaches, so two of
one name in two functions keep their calls apart (DYN206 and DYN208 report each with its own calls), and its
parameters take what those calls pass (``math.sqrt`` of an int argument folds, no break).  An object the
defining function built before the call is made outside the compiled code: a context manager of a class of the
file cannot be entered (its ``__enter__`` then runs as a frame of its own, without a graph: the count it keeps
guards nothing), and a ``torch.Generator`` cannot reach an op.  A variable of the defining function the
compiled one reads is guarded on its value: rebound between two calls, or changed by the compiled function itself
at each call of one compiled object (a ``nonlocal`` counter), it recompiles (DYN201); so does a parameter of a
function that compiles a closure reading it at each call (``make(2)(x)``, ``make(3)(x)``: the closures share
the cache of one code object).  Each case also runs under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests, script_case_tests

TWO_OF_ONE_NAME = """\
import torch


def case_a():
    @torch.compile(backend="eager")
    def fn(x, y):
        return x + y

    fn(torch.randn(3), torch.randn(3))


def case_b():
    @torch.compile(backend="eager")
    def fn(x, n):
        for _ in range(n):
            x = x * 0.9
        return x

    for n in (1, 2, 3):
        fn(torch.randn(4), n)


if __name__ == "__main__":
    case_a()
    case_b()
"""

GRAD_MODES_APART = """\
import torch


def case_a():
    @torch.compile(backend="eager")
    def fn(x):
        return x.sin() + 1

    fn(torch.randn(3))
    fn(torch.randn(3))


def case_b():
    w = torch.randn(3, requires_grad=True)

    @torch.compile(backend="eager")
    def fn(x):
        return x * w

    fn(torch.randn(3))
    with torch.no_grad():
        fn(torch.randn(3))


if __name__ == "__main__":
    case_a()
    case_b()
"""

test_check_varies, test_dynamo_varies = script_case_tests({"two-of-one-name": (TWO_OF_ONE_NAME, [14], 2)},
                                                          "DYN206")
test_check_modes, test_dynamo_modes = script_case_tests({"grad-modes-apart": (GRAD_MODES_APART, [17], 1)},
                                                        "DYN208")

MATH_OF_AN_INT = """
import math
import torch


def main():
    @torch.compile(backend="eager")
    def fn(x, d):
        return x / math.sqrt(d) + math.log(d)

    return [fn(torch.randn(4), 16), fn(torch.randn(4), 16)]
"""

CONTEXT_MADE_BEFORE = """
import torch


class Timer:
    def __init__(self):
        self.n = 0

    def __enter__(self):
        self.n += 1
        return self

    def __exit__(self, *exc):
        return False


def main():
    t = Timer()

    @torch.compile(backend="eager")
    def fn(x):
        with t:
            y = x.sin()
        return y + 1

    return [fn(torch.randn(3)), fn(torch.randn(3))]


if __name__ == "__main__":
    main()
"""

GENERATOR_MADE_BEFORE = """
import torch


def main():
    g = torch.Generator().manual_seed(0)

    @torch.compile(backend="eager")
    def fn(x):
        return x + torch.rand(x.shape, generator=g)

    return [fn(torch.zeros(3)), fn(torch.zeros(3))]
"""

test_check_math, test_dynamo_math = break_tests(MATH_OF_AN_INT, set(), "[()]")
test_check_context, test_dynamo_context = break_tests(CONTEXT_MADE_BEFORE, {(21, "DYN105")}, "[()]")
test_check_generator, test_dynamo_generator = break_tests(GENERATOR_MADE_BEFORE, {(9, "DYN105")}, "[()]")

test_check_entered_eagerly, test_dynamo_entered_eagerly = script_case_tests(
    {"context-made-before": (CONTEXT_MADE_BEFORE, [], 0)}, "DYN203")

CELL_REBOUND = """\
import torch


def case():
    scale = 1.0

    @torch.compile(backend="eager")
    def fn(x):
        return x * scale

    fn(torch.randn(2))
    scale = {second}
    fn(torch.randn(2))


if __name__ == "__main__":
    case()
"""

CELL_THROUGH_A_HANDLE = """\
import torch


def main():
    factor = 1.0

    def f(x):
        return x * factor

    cf = torch.compile(f, backend="eager")
    cf(torch.randn(4))
    factor = 2.0
    cf(torch.randn(4))


if __name__ == "__main__":
    main()
"""

test_check_cells, test_dynamo_cells = script_case_tests({
    "cell-rebound": (CELL_REBOUND.format(second="3.0"), [9], 1),
    "cell-rebound-alike": (CELL_REBOUND.format(second="1.0"), [], 0),
    "cell-rebound-handle": (CELL_THROUGH_A_HANDLE, [8], 1),
    "cell-rebound-to-a-string": (CELL_REBOUND.format(second='"x"').replace("x * scale", "x + len(scale)")
                                 .replace("scale = 1.0", 'scale = "ab"'), [9], 1),
}, "DYN201")

ATTRIBUTE_OF_A_CELL = """\
import torch


class Opts:
    def __init__(self):
        self.temperature = 1.0


def main():
    opts = Opts()

    @torch.compile(backend="eager")
    def f(x):
        return x / opts.temperature

    f(torch.randn(4))
    opts.temperature = {value}
    f(torch.randn(4))


if __name__ == "__main__":
    main()
"""

test_check_cell_attributes, test_dynamo_cell_attributes = script_case_tests({
    "attribute-set-between-calls": (ATTRIBUTE_OF_A_CELL.format(value="0.5"), [14], 1),
    "attribute-set-alike": (ATTRIBUTE_OF_A_CELL.format(value="1.0"), [], 0),
}, "DYN201")

# a counter the compiled closure keeps itself (`nonlocal calls; calls += 1`): every call of one compiled object
# finds another value in the cell; a closure made anew for each call starts from the same value each time
COUNTER_FACTORY = """\
import torch


def make():
    calls = 0

    def inner(x):
        nonlocal calls
        calls += 1
        return x * 3 + calls

    return inner


if __name__ == "__main__":
{calls}
"""

COUNTER_IN_A_LOOP = """\
import torch


def run(xs):
    seen = 0

    @torch.compile(backend="eager")
    def step(x):
        nonlocal seen
        seen += 1
        return x * seen

    for x in xs:
        step(x)
    return seen


if __name__ == "__main__":
    run([torch.randn(4) for _ in range(3)])
"""

test_check_counters, test_dynamo_counters = script_case_tests({
    "counter-one-object": (COUNTER_FACTORY.format(calls="""\
    f = torch.compile(make(), backend="eager")
    for _ in range(3):
        f(torch.randn(4))"""), [9], 1),
    "counter-new-object-each-call": (COUNTER_FACTORY.format(calls="""\
    for _ in range(3):
        f = torch.compile(make(), backend="eager")
        f(torch.randn(4))"""), [], 0),
    "counter-in-a-loop": (COUNTER_IN_A_LOOP, [10], 1),
}, "DYN201")

# closures a function makes and compiles anew at each call, given other constants: one cache, that of the
# closure's code, guarded on the cell's value
MADE_AND_CALLED = """\
import torch


def make(k):
    def f(x):
        return x * k
    return torch.compile(f, backend="eager")


if __name__ == "__main__":
    x = torch.randn(4)
    make({first})(x)
    make({second})(x)
"""

DECORATED_INSIDE = """\
import torch


def case(k, x):
    @torch.compile(backend="eager")
    def fn(x):
        return x * k

    return fn(x)


if __name__ == "__main__":
    x = torch.randn(4)
    case(2, x)
    case(3, x)
"""

COMPILED_BY_THE_CALLER = """\
import torch


def make(scale):
    def f(x):
        return x * scale

    return f


if __name__ == "__main__":
    x = torch.randn(4)
    a = torch.compile(make(0.5), backend="eager")
    a(x)
    b = torch.compile(make(2.0), backend="eager")
    {run_b}
"""

test_check_made, test_dynamo_made = script_case_tests({
    "made-and-called": (MADE_AND_CALLED.format(first="2", second="3"), [6], 1),
    "made-alike": (MADE_AND_CALLED.format(first="2", second="2"), [], 0),
    "decorated-inside": (DECORATED_INSIDE, [7], 1),
    "compiled-by-the-caller": (COMPILED_BY_THE_CALLER.format(run_b="b(x)"), [6], 1),
    "compiled-by-the-caller-not-run": (COMPILED_BY_THE_CALLER.format(run_b="print(b)"), [], 0),
}, "DYN201")
