"""Fixed cases may change Dynamo's process-wide configuration when imported (defer-logging adds
``print`` to ``reorderable_logging_functions``): each test gets it back as it found it, so later
tests in the same process see Dynamo's defaults."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _restore_dynamo_logging_config():
    try:
        import torch._dynamo
    except ImportError:  # pragma: no cover - torch missing
        yield
        return
    saved = set(torch._dynamo.config.reorderable_logging_functions)
    yield
    torch._dynamo.config.reorderable_logging_functions = saved
