"""Objects a module or helper is given rather than builds: a ``random.Random`` or a ``logging.Logger`` passed to
``__init__`` (annotated as one) and kept on ``self`` is used in ``forward`` as one built there is (two drawn
numbers added, a logger method: both break), and a ``torch.Generator`` a compiled caller hands a helper whose
parameter is ``Optional[torch.Generator] = None`` is the generator there, not ``None`` (a torch op cannot take
it), as is one every construction of a class passes its ``__init__`` so annotated. Each case is also run under
real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests, marked_case_tests

CASES = [
    ("injected-random", """
    import random

    import torch
    import torch.nn as nn


    class SpecAugment(nn.Module):
        def __init__(self, rng: random.Random = random.Random(0), width: int = 3):
            super().__init__()
            self._rng, self.width = rng, width

        @torch.no_grad()
        def forward(self, spec: torch.Tensor) -> torch.Tensor:
            left = self._rng.randint(0, spec.size(1) - self.width)
            w = self._rng.randint(0, self.width)
            spec[:, left:left + w, :] = 0.0  # breaks
            return spec
    """, "SpecAugment", "[(torch.randn(2, 8, 5),)]"),
    ("injected-logger", """
    import logging

    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, logger: logging.Logger = logging.getLogger("enc")):
            super().__init__()
            self.fc = nn.Linear(5, 5)
            self.logger = logger

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.logger.debug("input shape %s", tuple(x.shape))  # breaks
            return self.fc(x)
    """, "Encoder", "[(torch.randn(2, 5),)]"),
    ("optional-generator", """
    from typing import Optional

    import torch
    import torch.nn as nn


    def time_mask(x: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        starts = torch.randint(0, 4, (x.size(0), 1), generator=generator)  # breaks
        return x + starts


    class TimeMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.generator = torch.Generator()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return time_mask(x, generator=self.generator)
    """, "TimeMask", "[(torch.randn(2, 8),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)

CONSTRUCTED_WITH_A_GENERATOR = """
from typing import Optional

import torch


class Sampler:
    def __init__(self, n: int, generator: Optional[torch.Generator] = None):
        self.n = n
        self.gen = generator

    def draw(self) -> torch.Tensor:
        return torch.rand(self.n, generator=self.gen)


def sample_points(s: Sampler) -> torch.Tensor:
    return s.draw() * 2 - 1


def main():
    s = Sampler(4, torch.Generator().manual_seed(0))
    return torch.compile(sample_points, backend="eager")(s)
"""

test_constructed_with_a_generator, test_constructed_with_a_generator_under_dynamo = break_tests(
    CONSTRUCTED_WITH_A_GENERATOR, {(12, "DYN105")}, "[()]")


OPTIONAL_MODULE_LEFT_OUT = """
import bisect
from typing import Optional

import torch
import torch.nn as nn


class Scale(nn.Module):
    def forward(self):
        return torch.tensor(2.0)


class Loss(nn.Module):
    def __init__(self, scale: Optional[Scale] = None):
        super().__init__()
        self.scale = scale

    def factor(self):
        if self.scale is not None:
            return self.scale()
        return float(bisect.bisect_right((4, 8), 5))

    def forward(self, x):
        return x.sum() * self.factor()


def main(x):
    return torch.compile(Loss(), backend="eager")(x)
"""
"""An ``Optional[...]`` parameter of ``__init__`` that no construction passes is ``None`` in every instance:
the branch past ``if self.scale is not None:`` runs."""

test_optional_module_left_out, test_optional_module_left_out_under_dynamo = break_tests(
    OPTIONAL_MODULE_LEFT_OUT, {(21, "DYN105")}, "[(torch.randn(4),)]")
