"""Top-k accuracy as used in ImageNet training scripts, plus a metrics dict for the logger."""
from typing import Dict, Sequence

import torch


def accuracy(output: torch.Tensor, target: torch.Tensor, topk: Sequence[int] = (1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.reshape(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def classification_report(output: torch.Tensor, target: torch.Tensor) -> Dict[str, float]:
    acc1, acc5 = accuracy(output, target, topk=(1, 5))
    loss = torch.nn.functional.cross_entropy(output, target)
    return {"loss": loss.item(), "acc1": acc1.item(), "acc5": acc5.item()}


def make_inputs():
    return [(torch.randn(8, 10), torch.randint(0, 10, (8,)), (1, 5)) for _ in range(2)]


def make_inputs_report():
    return [(torch.randn(8, 10), torch.randint(0, 10, (8,))) for _ in range(2)]


EXAMPLES = {"accuracy": make_inputs, "classification_report": make_inputs_report}
