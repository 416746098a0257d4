import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

HAS_TORCH = importlib.util.find_spec("torch") is not None

requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
