"""Box utilities for a one-stage detector: pairwise IoU, delta decoding, and greedy NMS."""
import math

import torch

BBOX_XFORM_CLIP = math.log(1000.0 / 16)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area1[:, None] + area2 - inter)


def decode_boxes(deltas, anchors, weights=(10.0, 10.0, 5.0, 5.0)):
    wx, wy, ww, wh = weights
    widths = anchors[:, 2] - anchors[:, 0]
    heights = anchors[:, 3] - anchors[:, 1]
    ctr_x = anchors[:, 0] + 0.5 * widths
    ctr_y = anchors[:, 1] + 0.5 * heights
    dx, dy = deltas[:, 0] / wx, deltas[:, 1] / wy
    dw = torch.clamp(deltas[:, 2] / ww, max=BBOX_XFORM_CLIP)
    dh = torch.clamp(deltas[:, 3] / wh, max=BBOX_XFORM_CLIP)
    pred_ctr_x = dx * widths + ctr_x
    pred_ctr_y = dy * heights + ctr_y
    pred_w = torch.exp(dw) * widths
    pred_h = torch.exp(dh) * heights
    return torch.stack(
        [pred_ctr_x - 0.5 * pred_w, pred_ctr_y - 0.5 * pred_h, pred_ctr_x + 0.5 * pred_w, pred_ctr_y + 0.5 * pred_h],
        dim=1,
    )


def greedy_nms(boxes, scores, iou_threshold=0.5):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]]).squeeze(0)
        order = order[1:][ious <= iou_threshold]
    return torch.stack(keep)


def make_boxes(n):
    xy = torch.rand(n, 2) * 50
    wh = torch.rand(n, 2) * 20 + 1
    return torch.cat([xy, xy + wh], dim=1)


def make_inputs_iou():
    return [(make_boxes(5), make_boxes(7)) for _ in range(2)]


def make_inputs_decode():
    return [(torch.randn(6, 4), make_boxes(6)) for _ in range(2)]


def make_inputs_nms():
    return [(make_boxes(6), torch.rand(6)) for _ in range(2)]


EXAMPLES = {"box_iou": make_inputs_iou, "decode_boxes": make_inputs_decode, "greedy_nms": make_inputs_nms}
