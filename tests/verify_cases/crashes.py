"""A function that kills its process (a segfault in native code): verify reports the crash."""
import ctypes

import torch


def segfault(x):
    ctypes.string_at(0)
    return x


def dynalint_inputs():
    return [(torch.randn(2),)]
