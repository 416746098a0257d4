"""Instance segmentation post-processing: per-instance masks from an id map, and panoptic merging."""
import torch
import torch.nn.functional as F


def masks_from_id_map(id_map: torch.Tensor, ignore_id: int = 0):
    ids = torch.unique(id_map)
    ids = ids[ids != ignore_id]
    masks = id_map[None] == ids[:, None, None]
    return ids, masks


def instance_areas(id_map: torch.Tensor, max_instances: int = 8) -> torch.Tensor:
    onehot = F.one_hot(id_map.long().clamp(max=max_instances - 1), max_instances)
    return onehot.flatten(0, -2).sum(0)


def merge_instances(mask_logits: torch.Tensor, scores: torch.Tensor, min_area: int = 4):
    masks = mask_logits.sigmoid() > 0.5
    order = torch.argsort(scores, descending=True)
    panoptic = torch.zeros(masks.shape[-2:], dtype=torch.long)
    next_id = 1
    for i in order.tolist():
        m = masks[i] & (panoptic == 0)
        if m.sum() < min_area:
            continue
        panoptic[m] = next_id
        next_id += 1
    return panoptic


def make_idmap():
    m = torch.zeros(8, 8, dtype=torch.long)
    m[:4, :4] = 1
    m[4:, 4:] = 3
    return m


def make_inputs():
    return [(make_idmap(),) for _ in range(2)]


def make_inputs_merge():
    return [(torch.randn(3, 8, 8), torch.rand(3)) for _ in range(2)]


EXAMPLES = {"masks_from_id_map": make_inputs, "instance_areas": make_inputs, "merge_instances": make_inputs_merge}
