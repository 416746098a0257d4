"""Detection post-processing: score thresholding, top-k per image and conversion to per-image results."""
from typing import Dict, List

import torch
import torch.nn as nn


class DetectionPostProcessor(nn.Module):
    def __init__(self, score_thresh=0.3, topk=5, return_lists=False):
        super().__init__()
        self.score_thresh = score_thresh
        self.topk = topk
        self.return_lists = return_lists

    def select_topk(self, scores, boxes):
        k = min(self.topk, scores.shape[0])
        top_scores, idx = scores.topk(k)
        return top_scores, boxes[idx]

    def forward(self, logits: torch.Tensor, boxes: torch.Tensor) -> List[Dict[str, torch.Tensor]]:
        probs = logits.sigmoid()
        scores, labels = probs.max(dim=-1)
        results = []
        for b in range(scores.shape[0]):
            keep = scores[b] > self.score_thresh
            s, bx, lb = scores[b][keep], boxes[b][keep], labels[b][keep]
            s, bx = self.select_topk(s, bx)
            result = {"scores": s, "boxes": bx, "labels": lb[: s.shape[0]]}
            if self.return_lists:
                result = {k: v.tolist() for k, v in result.items()}
            results.append(result)
        return results


def dense_topk_postprocess(logits: torch.Tensor, boxes: torch.Tensor, k: int = 5, thresh: float = 0.3):
    """Fixed-size output: top-k over all anchors, low scores zeroed instead of dropped."""
    probs = logits.sigmoid()
    scores, labels = probs.max(dim=-1)
    top_scores, idx = scores.topk(k, dim=1)
    top_boxes = torch.gather(boxes, 1, idx.unsqueeze(-1).expand(-1, -1, 4))
    top_labels = torch.gather(labels, 1, idx)
    valid = top_scores > thresh
    top_scores = torch.where(valid, top_scores, torch.zeros_like(top_scores))
    return top_scores, top_boxes * valid.unsqueeze(-1), top_labels.masked_fill(~valid, -1)


def make_inputs():
    return [((), (torch.randn(2, 10, 3), torch.rand(2, 10, 4))) for _ in range(2)]


def make_inputs_dense():
    return [(torch.randn(2, 10, 3), torch.rand(2, 10, 4)) for _ in range(2)]


EXAMPLES = {"DetectionPostProcessor": make_inputs, "dense_topk_postprocess": make_inputs_dense}
