"""NumPy's global RNG under Dynamo: the functions it maps to ``torch._numpy.random`` (``TRACED_NUMPY_RANDOM``,
generated from that map) are traced with torch's generator when they draw an array, and break where they draw
one number, which Dynamo reads from the tensor it draws (``choice`` always does); the other functions
(``permutation``, ``beta``) are refused.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("arrays-are-traced-numbers-break", """
    import numpy as np
    import torch


    def f(x: torch.Tensor):
        a = np.random.normal(0.0, 1.0, size=(3,))
        b = np.random.rand(3) + np.random.randn(*x.shape) + np.random.random_sample((3,))
        c = np.random.randint(0, 5, size=3) + np.random.uniform(0.0, 1.0, 3)
        np.random.seed(0)
        np.random.shuffle(c)
        s = np.random.normal(0.0, 1.0)  # breaks
        if np.random.rand() < 0.5:  # breaks
            x = x * 2
        k = np.random.choice(5, size=3)  # breaks
        return x * s + torch.from_numpy(a + b + c)
    """, "f", "[(torch.randn(3),)]"),
    ("functions-it-does-not-map", """
    import numpy as np
    import torch


    def f(x: torch.Tensor):
        p = np.random.permutation(3)  # breaks
        return x + torch.from_numpy(p)
    """, "f", "[(torch.randn(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
