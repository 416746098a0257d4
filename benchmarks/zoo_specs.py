"""The breaking runs of eval-zoo (torchvision 0.28.0, timm 1.0.31) as run specs for ``realcode/label.py``.

eval-zoo's ``labels.json`` records, per run, the library, the model, the setting (eval/train), the
constructor's ``config``, the input sets as descriptions (``Tensor[3, 96, 128]:float32``, containers kept)
and the ``dynamo_config``; it holds no code.  This module rebuilds each breaking run from its record: the
model from a constructor that takes the recorded config, the inputs from the recorded descriptions (drawn
from seeded generators; a float ``[N, 4]`` tensor is a set of valid ``xyxy`` boxes on its image's canvas,
detection targets get boxes, labels, masks and keypoints that fit their image), and ``label.py`` runs them
as it runs its own specs (fresh process, ``torch.manual_seed(0)``, one thread, an eager call per input
set, then a fresh model under ``torch.compile(backend="eager")``).

Where the record does not name the code that ran (a step function over several library functions, a
composition whose description was cut short, a predictor the constructor needs), the builder follows the
functions the run traced and broke in; :data:`RECONSTRUCTED` says which runs and how.  The labels are
found through ``ZOO_LABELS`` (default: ``../shared/eval-zoo/labels.json`` beside the repository).
"""
from __future__ import annotations

import importlib.util
import json
import os
import platform
import random
import re
import sys
from pathlib import Path
from typing import Any, Callable

import torch

HERE = Path(__file__).resolve().parent
LIBRARIES = ("torchvision", "timm")
LABELS = os.environ.get("ZOO_LABELS") or str(HERE.parent.parent / "shared" / "eval-zoo" / "labels.json")


def _realcode_runspecs():  # type: ignore[no-untyped-def]
    """realcode's run-spec module, for its ``Spec`` (loaded under its own name: ``label.py`` registers the
    module it loads, this one, as ``runspecs``)."""
    spec = importlib.util.spec_from_file_location("realcode_runspecs", HERE / "realcode" / "runspecs.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = mod  # the dataclasses it defines look their module up
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


Spec = _realcode_runspecs().Spec

#: runs whose code the record does not fully name, and what the builder assumes
RECONSTRUCTED = {
    "tv.ops_boxes:eval": "step function over the box functions the run traced (batched_nms, box_iou, box_convert "
                         "xyxy->cxcywh, clip_boxes_to_image, remove_small_boxes, masks_to_boxes, "
                         "generalized_box_iou_loss, sigmoid_focal_loss); thresholds and reductions chosen",
    "tv.ops_layers:train": "step function FeaturePyramidNetwork -> MultiScaleRoIAlign -> DropBlock2d -> "
                           "StochasticDepth; channel counts from the inputs, sizes chosen",
    "tv.transforms_v1:eval": "composition from the recorded description, which is cut short; RandomErasing "
                             "(traced and broken in) appended with its defaults",
    "tv.transforms_v2:eval": "composition from the recorded description (cut short after Normalize), called "
                             "on tv_tensors: an Image and BoundingBoxes (XYXY) on its canvas",
    "tv.fasterrcnn_r18_fpn:train": "num_classes is None: FastRCNNPredictor(128, 5) after the recorded box head",
    "tv.maskrcnn_r18_fpn:eval": "num_classes is None: FastRCNNPredictor(1024, 5) and MaskRCNNPredictor(32, 32, 5)",
    "tv.maskrcnn_r18_fpn:train": "num_classes is None: FastRCNNPredictor(1024, 5) and MaskRCNNPredictor(32, 32, 5)",
}

DESCRIPTION = re.compile(r"Tensor\[([0-9, ]*)\]:(\w+)$")
#: the canvas of a box tensor that comes with no image
DEFAULT_CANVAS = (64, 64)
InputSet = tuple[list, dict]


def versions() -> dict:
    from importlib.metadata import version

    out = {"torch": torch.__version__}
    for dist in LIBRARIES:
        try:
            out[dist] = version(dist)
        except Exception:
            out[dist] = None
    out["python"] = platform.python_version()
    return out


# --------------------------------------------------------------------------------------------------------
# Inputs from the recorded descriptions
# --------------------------------------------------------------------------------------------------------


class Draw:
    """Tensors from descriptions, each from its own seeded generator (so a run's inputs are the same in
    every process)."""

    def __init__(self, seed: int, num_classes: int) -> None:
        self.seed, self.num_classes = seed, max(2, num_classes)

    def gen(self) -> torch.Generator:
        self.seed += 1
        return torch.Generator().manual_seed(self.seed)

    def shape_dtype(self, desc: str) -> tuple[list[int], torch.dtype] | None:
        m = DESCRIPTION.match(desc)
        if not m:
            return None
        shape = [int(s) for s in m.group(1).split(",") if s.strip()]
        return shape, getattr(torch, m.group(2))

    def boxes(self, n: int, canvas: tuple[int, int]) -> torch.Tensor:
        """``n`` valid ``xyxy`` boxes inside a ``(height, width)`` canvas."""
        h, w = canvas
        r = torch.rand(n, 4, generator=self.gen())
        x1, y1 = r[:, 0] * w * 0.5, r[:, 1] * h * 0.5
        bw, bh = (0.2 + 0.3 * r[:, 2]) * w, (0.2 + 0.3 * r[:, 3]) * h
        return torch.stack([x1, y1, x1 + bw, y1 + bh], dim=1)

    def tensor(self, desc: str, canvas: tuple[int, int] | None = None) -> Any:
        parsed = self.shape_dtype(desc)
        if parsed is None:
            return desc
        shape, dtype = parsed
        if dtype.is_floating_point:
            if len(shape) == 2 and shape[1] == 4:
                return self.boxes(shape[0], canvas or DEFAULT_CANVAS)
            return torch.rand(*shape, generator=self.gen(), dtype=dtype)
        if dtype == torch.uint8:
            return torch.randint(0, 256, shape, generator=self.gen(), dtype=dtype)
        if dtype == torch.bool:
            return torch.rand(*shape, generator=self.gen()) > 0.5
        return torch.randint(0, self.num_classes, shape, generator=self.gen(), dtype=dtype)

    def target(self, desc: dict, canvas: tuple[int, int]) -> dict:
        """A detection target whose boxes, masks and keypoints fit a ``(height, width)`` image."""
        n = next((self.shape_dtype(v)[0][0] for v in desc.values() if self.shape_dtype(v)), 0)
        boxes = self.boxes(n, canvas)
        out: dict = {}
        for key, d in desc.items():
            shape, dtype = self.shape_dtype(d) or ([], torch.float32)
            if key == "boxes":
                out[key] = boxes
            elif key == "labels":
                out[key] = torch.randint(1, self.num_classes, shape, generator=self.gen(), dtype=dtype)
            elif key == "masks":
                ys, xs = torch.arange(canvas[0])[:, None], torch.arange(canvas[1])[None, :]
                out[key] = torch.stack([((xs >= b[0]) & (xs < b[2]) & (ys >= b[1]) & (ys < b[3])).to(dtype)
                                        for b in boxes]) if n else torch.zeros(shape, dtype=dtype)
            elif key == "keypoints":
                r = torch.rand(*shape[:2], 2, generator=self.gen())
                x = boxes[:, None, 0] + r[..., 0] * (boxes[:, None, 2] - boxes[:, None, 0])
                y = boxes[:, None, 1] + r[..., 1] * (boxes[:, None, 3] - boxes[:, None, 1])
                out[key] = torch.stack([x, y, torch.ones_like(x)], dim=-1).to(dtype)
            else:
                out[key] = self.tensor(d, canvas)
        return out

    def value(self, desc: Any, canvas: tuple[int, int] | None = None) -> Any:
        if isinstance(desc, str):
            return self.tensor(desc, canvas)
        if isinstance(desc, dict):
            return {k: self.value(v, canvas) for k, v in desc.items()}
        if isinstance(desc, list):
            return [self.value(v, canvas) for v in desc]
        return desc


def canvas_of(x: Any) -> tuple[int, int] | None:
    return tuple(x.shape[-2:]) if isinstance(x, torch.Tensor) and x.dim() >= 3 else None  # type: ignore[return-value]


def input_sets(record: dict) -> Callable[[], list[InputSet]]:
    """The run's input sets from its descriptions: a list of images followed by a list of target dicts is
    a detection batch (each target fits its image); a box tensor fits the image before it in the set."""
    num_classes = record.get("config", {}).get("num_classes") or 5

    def inputs() -> list[InputSet]:
        out = []
        for i, s in enumerate(record["input_sets"]):
            draw = Draw(1000 * (i + 1), num_classes)
            args: list = []
            canvas = None
            for a in s["args"]:
                if (isinstance(a, list) and a and isinstance(a[0], dict) and args
                        and isinstance(args[-1], list)):
                    args.append([draw.target(t, canvas_of(img) or DEFAULT_CANVAS) for t, img in zip(a, args[-1])])
                    continue
                args.append(draw.value(a, canvas))
                canvas = canvas_of(args[-1]) or canvas
            out.append((args, draw.value(s.get("kwargs") or {})))
        return out

    return inputs


# --------------------------------------------------------------------------------------------------------
# Models and functions from the recorded config
# --------------------------------------------------------------------------------------------------------


def _resnet18_fpn(p6p7: bool = False) -> torch.nn.Module:
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7

    if p6p7:  # as retinanet/fcos_resnet50_fpn build theirs
        return resnet_fpn_backbone(backbone_name="resnet18", weights=None, returned_layers=[2, 3, 4],
                                   extra_blocks=LastLevelP6P7(256, 256))
    return resnet_fpn_backbone(backbone_name="resnet18", weights=None)


def _detection_kwargs(config: dict) -> dict:
    """The recorded config less what names parts (built from it instead)."""
    return {k: v for k, v in config.items() if k not in ("backbone", "box_head", "mask_head")}


def _faster_r18(config: dict) -> torch.nn.Module:
    from torchvision.models.detection.faster_rcnn import FasterRCNN, FastRCNNPredictor, TwoMLPHead

    return FasterRCNN(_resnet18_fpn(), box_head=TwoMLPHead(256 * 7 * 7, 128),
                      box_predictor=FastRCNNPredictor(128, 5), **_detection_kwargs(config))


def _mask_r18(config: dict) -> torch.nn.Module:
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor
    from torchvision.models.detection.mask_rcnn import MaskRCNN, MaskRCNNHeads, MaskRCNNPredictor

    return MaskRCNN(_resnet18_fpn(), box_predictor=FastRCNNPredictor(1024, 5),
                    mask_head=MaskRCNNHeads(256, [32, 32], 1), mask_predictor=MaskRCNNPredictor(32, 32, 5),
                    **_detection_kwargs(config))


def _keypoint_r18(config: dict) -> torch.nn.Module:
    from torchvision.models.detection.keypoint_rcnn import KeypointRCNN

    return KeypointRCNN(_resnet18_fpn(), **_detection_kwargs(config))


def _one_stage(cls: str) -> Callable[[dict], torch.nn.Module]:
    def build(config: dict) -> torch.nn.Module:
        import torchvision.models.detection as det

        return getattr(det, cls)(_resnet18_fpn(p6p7=True), **_detection_kwargs(config))

    return build


def _named(path: str) -> Callable[[dict], Any]:
    """``module.attr`` called with the recorded config as keyword arguments."""

    def build(config: dict) -> Any:
        modname, _, attr = path.rpartition(".")
        return getattr(importlib.import_module(modname), attr)(**config)

    return build


def _timm_model(config: dict) -> torch.nn.Module:
    import timm

    return timm.create_model(config["name"], **{k: v for k, v in config.items() if k != "name"})


def _ops_boxes(config: dict) -> Callable:
    from torchvision import ops

    def step(boxes, scores, idxs, image, boxes1, boxes2):  # type: ignore[no-untyped-def]
        keep = ops.batched_nms(boxes, scores, idxs, 0.5)
        iou = ops.box_iou(boxes1, boxes2)
        centers = ops.box_convert(boxes, "xyxy", "cxcywh")
        clipped = ops.clip_boxes_to_image(boxes, image.shape[-2:])
        big = ops.remove_small_boxes(boxes, 8.0)
        giou = ops.generalized_box_iou_loss(boxes1, boxes2, reduction="mean")
        from_masks = ops.masks_to_boxes(image > 0.5)
        focal = ops.sigmoid_focal_loss(scores, (idxs > 0).float(), reduction="mean")
        return keep, iou, centers, clipped, big, giou, from_masks, focal

    return step


def _ops_layers(config: dict) -> torch.nn.Module:
    from collections import OrderedDict

    from torchvision.ops import DropBlock2d, FeaturePyramidNetwork, MultiScaleRoIAlign, StochasticDepth

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fpn = FeaturePyramidNetwork([8, 16], 16)
            self.pool = MultiScaleRoIAlign(["0", "1"], output_size=4, sampling_ratio=2)
            self.drop = DropBlock2d(p=0.2, block_size=3)
            self.depth = StochasticDepth(p=0.2, mode="row")

        def forward(self, f0, f1, boxes, image_sizes):  # type: ignore[no-untyped-def]
            feats = self.fpn(OrderedDict([("0", f0), ("1", f1)]))
            pooled = self.pool(feats, boxes, [tuple(s) for s in image_sizes])
            return self.depth(self.drop(pooled))

    return Step()


def _transforms_v1(config: dict) -> Callable:
    from torchvision import transforms as T

    return T.Compose([
        T.RandomResizedCrop(32, antialias=True), T.RandomHorizontalFlip(0.5), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
        T.RandomGrayscale(0.2), T.GaussianBlur(3, (0.1, 2.0)), T.Normalize([0.5] * 3, [0.25] * 3),
        T.RandomErasing(),
    ])


def _transforms_v2(config: dict) -> Callable:
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    compose = v2.Compose([
        v2.RandomResizedCrop(32, antialias=True), v2.RandomHorizontalFlip(0.5), v2.RandomPhotometricDistort(p=1.0),
        v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3),
    ])

    def step(image, boxes):  # type: ignore[no-untyped-def]
        return compose(tv_tensors.Image(image),
                       tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=tuple(image.shape[-2:])))

    return step


#: run (by its name in the labels) -> the builder that takes the recorded config
BUILDERS: dict[str, Callable[[dict], Any]] = {
    "tv.fasterrcnn_resnet50_fpn:eval": _named("torchvision.models.detection.fasterrcnn_resnet50_fpn"),
    "tv.fasterrcnn_r18_fpn:train": _faster_r18,
    "tv.fasterrcnn_mobilenet_v3_large_320_fpn:eval":
        _named("torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn"),
    "tv.maskrcnn_r18_fpn:eval": _mask_r18,
    "tv.maskrcnn_r18_fpn:train": _mask_r18,
    "tv.keypointrcnn_r18_fpn:eval": _keypoint_r18,
    "tv.keypointrcnn_r18_fpn:train": _keypoint_r18,
    "tv.retinanet_r18_fpn:eval": _one_stage("RetinaNet"),
    "tv.retinanet_r18_fpn:train": _one_stage("RetinaNet"),
    "tv.fcos_r18_fpn:eval": _one_stage("FCOS"),
    "tv.fcos_r18_fpn:train": _one_stage("FCOS"),
    "tv.ssdlite320_mobilenet_v3_large:eval": _named("torchvision.models.detection.ssdlite320_mobilenet_v3_large"),
    "tv.ssdlite320_mobilenet_v3_large:train": _named("torchvision.models.detection.ssdlite320_mobilenet_v3_large"),
    "tv.ssd300_vgg16:eval": _named("torchvision.models.detection.ssd300_vgg16"),
    "tv.ops_boxes:eval": _ops_boxes,
    "tv.ops_layers:train": _ops_layers,
    "tv.transforms_v1:eval": _transforms_v1,
    "tv.transforms_v2:eval": _transforms_v2,
    "timm.sequencer2d_s:eval": _timm_model,
    "timm.Mixup:train": _named("timm.data.Mixup"),
    "timm.RandomErasing:train": _named("timm.data.random_erasing.RandomErasing"),
}


def builder(record: dict) -> Callable[[], Any]:
    """A fresh model or function per call, in the run's setting; Python's and NumPy's generators are
    seeded too (Mixup and RandomErasing draw from them), so that two runs of the same spec draw alike."""
    make, setting = BUILDERS[record["spec"]], record.get("setting")

    def build() -> Any:
        import numpy as np

        random.seed(0)
        np.random.seed(0)
        made = make(dict(record.get("config") or {}))
        if isinstance(made, torch.nn.Module):
            made = made.train() if setting == "train" else made.eval()
        return made

    return build


def settings(record: dict) -> dict:
    """The run's Dynamo settings (the labels write ``"defaults"`` where there are none)."""
    config = record.get("dynamo_config")
    return dict(config) if isinstance(config, dict) else {}


def load_specs(path: str = LABELS) -> dict[str, Any]:
    """Spec per run of the labels that :data:`BUILDERS` can rebuild."""
    with open(path) as fh:
        records = json.load(fh)
    return {r["spec"]: Spec(r["spec"], r["library"], str(r.get("model")), r["setting"], builder(r), input_sets(r),
                            r.get("config") or {}, settings(r),
                            RECONSTRUCTED.get(r["spec"]))
            for r in records if r["spec"] in BUILDERS}


SPECS: dict[str, Any] = load_specs() if os.path.exists(LABELS) else {}
