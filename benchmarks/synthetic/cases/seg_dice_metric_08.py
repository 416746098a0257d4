"""Per-class Dice/IoU for semantic segmentation, skipping classes absent from the target."""
import torch
import torch.nn.functional as F


def dice_per_class(pred_logits: torch.Tensor, target: torch.Tensor, num_classes: int, eps: float = 1e-6):
    pred = pred_logits.argmax(1)
    scores = []
    for c in range(num_classes):
        t = target == c
        if t.sum() == 0:
            continue
        p = pred == c
        inter = (p & t).sum().float()
        scores.append((2 * inter + eps) / (p.sum() + t.sum() + eps))
    return torch.stack(scores).mean()


def dice_vectorised(pred_logits: torch.Tensor, target: torch.Tensor, num_classes: int, eps: float = 1e-6):
    pred = F.one_hot(pred_logits.argmax(1), num_classes).permute(0, 3, 1, 2).float()
    tgt = F.one_hot(target, num_classes).permute(0, 3, 1, 2).float()
    dims = (0, 2, 3)
    inter = (pred * tgt).sum(dims)
    denom = pred.sum(dims) + tgt.sum(dims)
    present = tgt.sum(dims) > 0
    dice = (2 * inter + eps) / (denom + eps)
    return (dice * present).sum() / present.sum().clamp(min=1)


def soft_dice_loss(probs, target_onehot, smooth=1.0, ignore_empty=True):
    inter = (probs * target_onehot).flatten(2).sum(-1)
    union = probs.flatten(2).sum(-1) + target_onehot.flatten(2).sum(-1)
    loss = 1 - (2 * inter + smooth) / (union + smooth)
    if ignore_empty:
        has_fg = target_onehot.flatten(2).amax(-1) > 0
        loss = torch.where(has_fg, loss, torch.zeros_like(loss))
    return loss.mean()


def make_inputs():
    return [(torch.randn(2, 4, 8, 8), torch.randint(0, 3, (2, 8, 8)), 4) for _ in range(2)]


def make_inputs_soft():
    t = F.one_hot(torch.randint(0, 3, (2, 8, 8)), 3).permute(0, 3, 1, 2).float()
    return [(torch.rand(2, 3, 8, 8), t) for _ in range(2)]


EXAMPLES = {"dice_per_class": make_inputs, "dice_vectorised": make_inputs, "soft_dice_loss": make_inputs_soft}
