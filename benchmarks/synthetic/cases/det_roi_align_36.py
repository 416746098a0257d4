"""Second-stage helpers: convert per-image proposal lists to an (N, 5) roi tensor and sample fg/bg rois."""
from typing import List

import torch


def convert_boxes_to_roi_format(boxes: List[torch.Tensor]) -> torch.Tensor:
    concat = torch.cat(boxes, dim=0)
    ids = torch.cat([torch.full_like(b[:, :1], i) for i, b in enumerate(boxes)], dim=0)
    return torch.cat([ids, concat], dim=1)


def rois_from_counts(boxes: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    batch_idx = torch.repeat_interleave(torch.arange(counts.shape[0]), counts)
    return torch.cat([batch_idx[:, None].to(boxes.dtype), boxes], dim=1)


def sample_rois(labels: torch.Tensor, num_samples: int = 8, positive_fraction: float = 0.25):
    positive = torch.nonzero(labels >= 1).squeeze(1)
    negative = torch.nonzero(labels == 0).squeeze(1)
    num_pos = min(positive.numel(), int(num_samples * positive_fraction))
    num_neg = min(negative.numel(), num_samples - num_pos)
    perm1 = torch.randperm(positive.numel())[:num_pos]
    perm2 = torch.randperm(negative.numel())[:num_neg]
    return positive[perm1], negative[perm2]


def make_inputs_conv():
    return [([torch.rand(3, 4), torch.rand(2, 4)],) for _ in range(2)]


def make_inputs_counts():
    return [(torch.rand(5, 4), torch.tensor(counts)) for counts in ([3, 2], [1, 4])]


def make_inputs_sample():
    return [(torch.randint(0, 3, (10,)),) for _ in range(2)]


EXAMPLES = {"convert_boxes_to_roi_format": make_inputs_conv, "rois_from_counts": make_inputs_counts,
            "sample_rois": make_inputs_sample}
