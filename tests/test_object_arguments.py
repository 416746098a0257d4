"""Objects a module or helper is given rather than builds: a ``random.Random`` or a ``logging.Logger`` passed to
``__init__`` (annotated as one) and kept on ``self`` is used in ``forward`` as one built there is (two drawn numbers
added, a logger method: both break), and a ``torch.Generator`` a compiled caller hands a helper whose parameter is
``Optional[torch.Generator] = None`` is the generator there, not ``None`` (a torch op cannot take it).  Each case is
also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

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
