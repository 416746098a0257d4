"""A ``logging.LoggerAdapter``, or an instance of a class of the checked code derived from one (or from
``logging.Logger``), is a logger: its methods call the logger's, which Dynamo does not trace (measured on torch
2.13: "logging.Logger method not supported for non-export cases")."""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    import logging

    import torch

    logger = logging.getLogger("train")
    plain = logging.LoggerAdapter(logger, {"phase": "eval"})


    class PrefixAdapter(logging.LoggerAdapter):
        def process(self, msg, kwargs):
            return f"[{self.extra['phase']}] {msg}", kwargs


    log = PrefixAdapter(logger, {"phase": "train"})


    @torch.compile(backend="eager")
    def step(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        log.debug("adapter")
        y = y + 1
        plain.info("plain adapter")
        return y


    def main(x):
        return step(x)
"""
BREAKS = {(20, "DYN105"), (22, "DYN105")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.randn(3),)]")
