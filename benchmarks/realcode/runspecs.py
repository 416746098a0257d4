"""The runs ``label.py`` labels: real library models, losses, metrics and data code, compiled as users do.

Each spec builds its callable from a tiny configuration with random weights (``build``, called once for the
eager pass and again, freshly, for the compiled one) and its input sets (``inputs``: several, with varying
shapes so that Dynamo's automatic dynamic shapes and recompiles come into play). ``setting`` is ``train``
(train mode, grad enabled) or ``eval`` (eval mode, ``no_grad``). Library code is compiled directly where a
user would (a module, a public function); a small step function stands in for user code only where users
combine library calls (a miner feeding a loss, a metric's update/compute).
"""

from __future__ import annotations

import functools
import importlib
import platform
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

LIBRARIES = (
    "kornia",
    "torchmetrics",
    "monai",
    "pytorch_metric_learning",
    "torchdiffeq",
    "x_transformers",
    "vector_quantize_pytorch",
)
DISTRIBUTIONS = {
    "kornia": "kornia",
    "kornia_rs": "kornia_rs",
    "torchmetrics": "torchmetrics",
    "lightning_utilities": "lightning-utilities",
    "monai": "monai",
    "pytorch_metric_learning": "pytorch-metric-learning",
    "torchdiffeq": "torchdiffeq",
    "einops": "einops",
    "x_transformers": "x-transformers",
    "vector_quantize_pytorch": "vector-quantize-pytorch",
    "einx": "einx",
    "torch_einops_utils": "torch-einops-utils",
    "scipy": "scipy",
    "numpy": "numpy",
}

InputSet = tuple[list, dict]


@dataclass
class Spec:
    name: str
    library: str
    model: str
    setting: str
    build: Callable[[], Callable]
    inputs: Callable[[], list[InputSet]]
    config: dict = field(default_factory=dict)
    dynamo_config: dict = field(default_factory=dict)
    notes: str | None = None


SPECS: dict[str, Spec] = {}


def register(
    specs: dict[str, Spec],
    name: str,
    library: str,
    model: str,
    setting: str,
    build: Callable[[], Callable],
    inputs: Callable[[], list[InputSet]],
    config: dict | None = None,
    **kw: Any,
) -> None:
    """Add a run to ``specs`` (this module's :data:`SPECS`, or another set's built with these helpers)."""
    assert name not in specs, name
    specs[name] = Spec(name, library, model, setting, build, inputs, config or {}, **kw)


spec = functools.partial(register, SPECS)


def versions(distributions: dict[str, str] = DISTRIBUTIONS) -> dict:
    """The versions of torch, the distributions the runs import and Python, as the labels record them."""
    from importlib.metadata import version

    out = {"torch": torch.__version__}
    for dist in distributions.values():
        try:
            out[dist] = version(dist)
        except Exception:
            out[dist] = None
    out["python"] = platform.python_version()
    return out


def held_out_set(distributions: dict[str, str]) -> tuple[dict[str, Spec], Callable[..., None], Callable[[], dict]]:
    """What another set of runs built with these helpers declares (``../realcode2/runspecs.py``): its ``SPECS``,
    the ``spec`` that registers a run in them, and the ``versions()`` of the distributions it imports."""
    specs: dict[str, Spec] = {}
    return specs, functools.partial(register, specs), functools.partial(versions, distributions)


def module(factory: Callable[[], torch.nn.Module], setting: str) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        m = factory()
        return m.train() if setting == "train" else m.eval()

    return build


def fn(path: str, **bound: Any) -> Callable[[], Callable]:
    """A library function by dotted path, with keyword arguments bound (as a user's call site would)."""

    def build() -> Callable:
        modname, _, attr = path.rpartition(".")
        f = getattr(importlib.import_module(modname), attr)
        if not bound:
            return f
        return functools.partial(f, **bound)

    return build


def g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=g(seed))


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=g(seed))


def randint(high: int, *shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=g(seed))


def images(shapes: list[tuple[int, ...]]) -> Callable[[], list[InputSet]]:
    return lambda: [([rand(*s, seed=i)], {}) for i, s in enumerate(shapes)]


# ======================================================================================= kornia
IMG3 = [(2, 3, 32, 32), (1, 3, 40, 48), (3, 3, 24, 36)]
IMG1 = [(2, 1, 32, 32), (1, 1, 40, 48), (3, 1, 24, 36)]


def _aug_sequential() -> torch.nn.Module:
    import kornia.augmentation as K

    return K.AugmentationSequential(
        K.RandomHorizontalFlip(p=0.5),
        K.RandomAffine(degrees=15.0, translate=(0.1, 0.1), p=0.7),
        K.ColorJitter(0.2, 0.2, 0.2, 0.05, p=0.8),
        K.RandomResizedCrop((24, 24), p=1.0),
        data_keys=["input"],
    )


def _aug_blur_erase() -> torch.nn.Module:
    import kornia.augmentation as K

    return torch.nn.Sequential(
        K.RandomGaussianBlur((3, 3), (0.1, 2.0), p=0.5),
        K.RandomErasing(p=0.7),
        K.RandomMotionBlur(3, 35.0, 0.5, p=0.5),
        K.RandomGrayscale(p=0.3),
    )


def _aug_geometric() -> torch.nn.Module:
    import kornia.augmentation as K

    return torch.nn.Sequential(
        K.RandomPerspective(0.3, p=0.7),
        K.RandomRotation(20.0, p=0.7),
        K.RandomThinPlateSpline(p=0.5),
        K.RandomElasticTransform(p=0.5),
    )


def _aug_intensity() -> torch.nn.Module:
    import kornia.augmentation as K

    return torch.nn.Sequential(
        K.RandomEqualize(p=0.5),
        K.RandomPosterize(3, p=0.5),
        K.RandomSolarize(0.1, 0.1, p=0.5),
        K.RandomSharpness(0.5, p=0.5),
        K.RandomInvert(p=0.3),
        K.Normalize(0.5, 0.25),
    )


def _aug_mix() -> Callable:
    import kornia.augmentation as K

    mixup, cutmix = K.RandomMixUpV2(p=0.8, data_keys=["input", "class"]), K.RandomCutMixV2(
        p=0.8, data_keys=["input", "class"]
    )

    def step(x: torch.Tensor, y: torch.Tensor) -> Any:
        x1, y1 = mixup(x, y)
        return cutmix(x1, y)

    return step


def _label_batches() -> list[InputSet]:
    return [([rand(*s, seed=i), randint(5, s[0], seed=i)], {}) for i, s in enumerate(IMG3)]


spec(
    "kornia.aug_sequential:train",
    "kornia",
    "AugmentationSequential(flip,affine,jitter,rrc)",
    "train",
    _aug_sequential,
    images(IMG3),
)
spec(
    "kornia.aug_blur_erase:train",
    "kornia",
    "GaussianBlur+Erasing+MotionBlur+Grayscale",
    "train",
    module(_aug_blur_erase, "train"),
    images(IMG3),
)
spec(
    "kornia.aug_geometric:train",
    "kornia",
    "Perspective+Rotation+ThinPlateSpline+Elastic",
    "train",
    module(_aug_geometric, "train"),
    images(IMG3),
)
spec(
    "kornia.aug_intensity:train",
    "kornia",
    "Equalize+Posterize+Solarize+Sharpness+Invert+Normalize",
    "train",
    module(_aug_intensity, "train"),
    images(IMG3),
)
spec("kornia.aug_mix:train", "kornia", "RandomMixUpV2+RandomCutMixV2", "train", _aug_mix, _label_batches)
spec("kornia.canny:eval", "kornia", "filters.canny", "eval", fn("kornia.filters.canny"), images(IMG1))
spec(
    "kornia.connected_components:eval",
    "kornia",
    "contrib.connected_components",
    "eval",
    fn("kornia.contrib.connected_components", num_iterations=20),
    lambda: [([(rand(*s, seed=i) > 0.6).float()], {}) for i, s in enumerate(IMG1)],
)
spec(
    "kornia.distance_transform:eval",
    "kornia",
    "contrib.distance_transform",
    "eval",
    fn("kornia.contrib.distance_transform"),
    lambda: [([(rand(*s, seed=i) > 0.9).float()], {}) for i, s in enumerate(IMG1)],
)
spec(
    "kornia.equalize_clahe:eval",
    "kornia",
    "enhance.equalize_clahe",
    "eval",
    fn("kornia.enhance.equalize_clahe", grid_size=(2, 2)),
    images(IMG3),
)


def _match_inputs() -> list[InputSet]:
    out = []
    for i, (n, m) in enumerate([(16, 20), (12, 12), (30, 8)]):
        a = randn(n, 32, seed=i)
        b = torch.cat(
            [a[: min(n, m)] + 0.05 * randn(min(n, m), 32, seed=i + 10), randn(max(0, m - n), 32, seed=i + 20)]
        )
        out.append(([a, b], {}))
    return out


def _matchers() -> Callable:
    from kornia.feature import match_mnn, match_smnn, match_snn

    def step(a: torch.Tensor, b: torch.Tensor) -> Any:
        return match_snn(a, b, 0.8), match_mnn(a, b), match_smnn(a, b, 0.9)

    return step


spec("kornia.matching:eval", "kornia", "feature.match_snn/mnn/smnn", "eval", _matchers, _match_inputs)
spec(
    "kornia.disk:eval",
    "kornia",
    "feature.DISK",
    "eval",
    module(
        lambda: __import__("kornia.feature", fromlist=["DISK"]).DISK(
            desc_dim=16,
            unet=__import__("kornia.feature.disk._unets", fromlist=["Unet"]).Unet(
                in_features=3, size=3, down=[8, 8, 16], up=[16, 17]
            ),
        ),
        "eval",
    ),
    lambda: [
        ([rand(*s, seed=i)], {"n": 20, "pad_if_not_divisible": True})
        for i, s in enumerate([(1, 3, 32, 32), (2, 3, 40, 48)])
    ],
)
spec(
    "kornia.sift:eval",
    "kornia",
    "feature.SIFTFeature",
    "eval",
    module(
        lambda: __import__("kornia.feature", fromlist=["SIFTFeature"]).SIFTFeature(num_features=16), "eval"
    ),
    lambda: [([rand(*s, seed=i)], {}) for i, s in enumerate([(1, 1, 48, 48), (1, 1, 40, 56)])],
)


def _losses_kornia() -> Callable:
    import kornia.losses as L

    focal, dice, tversky = L.FocalLoss(0.5, 2.0, "mean"), L.DiceLoss(), L.TverskyLoss(0.5, 0.5)
    ssim, tv = L.SSIMLoss(5), L.TotalVariation()

    def step(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        probs = logits.softmax(1)
        return (
            focal(logits, target)
            + dice(logits, target)
            + tversky(logits, target)
            + ssim(probs, probs.flip(-1))
            + tv(probs).mean()
        )

    return step


def _seg_inputs(
    c: int, shapes: list[tuple[int, int, int]], grad: bool = True
) -> Callable[[], list[InputSet]]:
    return lambda: [
        ([randn(b, c, h, w, seed=i).requires_grad_(grad), randint(c, b, h, w, seed=i)], {})
        for i, (b, h, w) in enumerate(shapes)
    ]


SEG = [(2, 16, 16), (1, 24, 20), (3, 12, 16)]
spec(
    "kornia.losses:train",
    "kornia",
    "Focal+Dice+Tversky+SSIM+TV losses",
    "train",
    _losses_kornia,
    _seg_inputs(3, SEG),
)
spec(
    "kornia.hausdorff_loss:train",
    "kornia",
    "losses.HausdorffERLoss",
    "train",
    lambda: __import__("kornia.losses", fromlist=["HausdorffERLoss"]).HausdorffERLoss(k=3),
    lambda: [
        ([randn(b, 3, h, w, seed=i).softmax(1).requires_grad_(), randint(3, b, 1, h, w, seed=i)], {})
        for i, (b, h, w) in enumerate(SEG[:2])
    ],
)


def _geometry() -> Callable:
    from kornia.geometry import homography, transform

    def step(img: torch.Tensor, pts1: torch.Tensor, pts2: torch.Tensor) -> Any:
        m = transform.get_perspective_transform(pts1[:, :4], pts2[:, :4])
        warped = transform.warp_perspective(img, m, img.shape[-2:])
        h = homography.find_homography_dlt(pts1, pts2)
        return (
            warped,
            h,
            transform.resize(img, (16, 20)),
            transform.rotate(img, torch.tensor([30.0] * img.shape[0])),
        )

    return step


def _geom_inputs() -> list[InputSet]:
    out = []
    for i, (b, n, h, w) in enumerate([(2, 6, 24, 24), (1, 8, 32, 20), (3, 5, 16, 16)]):
        p = rand(b, n, 2, seed=i) * 20
        out.append(([rand(b, 3, h, w, seed=i), p, p + 0.5 * randn(b, n, 2, seed=i + 5)], {}))
    return out


spec("kornia.geometry:eval", "kornia", "perspective/warp/dlt/resize/rotate", "eval", _geometry, _geom_inputs)


def _ransac() -> Callable:
    from kornia.geometry.ransac import RANSAC

    return RANSAC("homography", inl_th=2.0, batch_size=16, max_iter=3, max_lo_iters=2)


def _ransac_inputs() -> list[InputSet]:
    out = []
    for i, n in enumerate([20, 28]):
        p = rand(n, 2, seed=i) * 50
        out.append(([p, p * 1.1 + 3 + 0.3 * randn(n, 2, seed=i)], {}))
    return out


spec("kornia.ransac:eval", "kornia", "geometry.ransac.RANSAC(homography)", "eval", _ransac, _ransac_inputs)


def _morphology() -> Callable:
    from kornia.morphology import gradient, opening, top_hat

    def step(x: torch.Tensor) -> torch.Tensor:
        kernel = torch.ones(3, 3)
        return opening(x, kernel) + gradient(x, kernel) + top_hat(x, kernel)

    return step


spec(
    "kornia.morphology:eval",
    "kornia",
    "morphology opening/gradient/top_hat",
    "eval",
    _morphology,
    images(IMG3),
)


# ======================================================================================= torchmetrics
def _cls_inputs(nc: int) -> Callable[[], list[InputSet]]:
    return lambda: [
        ([randn(n, nc, seed=i).softmax(-1), randint(nc, n, seed=i)], {}) for i, n in enumerate([16, 24, 9])
    ]


def _bin_inputs() -> list[InputSet]:
    return [([rand(n, seed=i), randint(2, n, seed=i)], {}) for i, n in enumerate([16, 24, 9])]


def _tm_multiclass() -> Callable:
    import torchmetrics.functional.classification as C

    def step(preds: torch.Tensor, target: torch.Tensor) -> Any:
        return (
            C.multiclass_accuracy(preds, target, num_classes=5),
            C.multiclass_f1_score(preds, target, num_classes=5),
            C.multiclass_confusion_matrix(preds, target, num_classes=5),
            C.multiclass_matthews_corrcoef(preds, target, num_classes=5),
            C.multiclass_cohen_kappa(preds, target, num_classes=5),
        )

    return step


def _tm_curves() -> Callable:
    import torchmetrics.functional.classification as C

    def step(preds: torch.Tensor, target: torch.Tensor) -> Any:
        return (
            C.binary_auroc(preds, target),
            C.binary_average_precision(preds, target),
            C.binary_precision_recall_curve(preds, target),
            C.binary_roc(preds, target),
            C.binary_calibration_error(preds, target, n_bins=5),
        )

    return step


def _tm_multiclass_curves() -> Callable:
    import torchmetrics.functional.classification as C

    def step(preds: torch.Tensor, target: torch.Tensor) -> Any:
        return (
            C.multiclass_auroc(preds, target, num_classes=5, thresholds=None),
            C.multiclass_average_precision(preds, target, num_classes=5, thresholds=10),
            C.multiclass_calibration_error(preds, target, num_classes=5),
            C.multiclass_hinge_loss(preds, target, num_classes=5),
        )

    return step


spec(
    "tm.multiclass_stats:train",
    "torchmetrics",
    "accuracy/f1/confmat/mcc/kappa",
    "train",
    _tm_multiclass,
    _cls_inputs(5),
)
spec("tm.binary_curves:eval", "torchmetrics", "auroc/ap/prc/roc/calibration", "eval", _tm_curves, _bin_inputs)
spec(
    "tm.multiclass_curves:eval",
    "torchmetrics",
    "multiclass auroc/ap/calibration/hinge",
    "eval",
    _tm_multiclass_curves,
    _cls_inputs(5),
)


def _tm_regression() -> Callable:
    import torchmetrics.functional as F

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        return (
            F.pearson_corrcoef(p, t),
            F.spearman_corrcoef(p, t),
            F.r2_score(p, t),
            F.concordance_corrcoef(p, t),
            F.kendall_rank_corrcoef(p, t),
            F.mean_absolute_percentage_error(p, t),
            F.explained_variance(p, t),
        )

    return step


spec(
    "tm.regression:eval",
    "torchmetrics",
    "pearson/spearman/r2/ccc/kendall/mape/ev",
    "eval",
    _tm_regression,
    lambda: [([randn(n, seed=i), randn(n, seed=i + 9)], {}) for i, n in enumerate([16, 24, 9])],
)


def _tm_image() -> Callable:
    import torchmetrics.functional.image as IM

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        return (
            IM.peak_signal_noise_ratio(p, t, data_range=1.0),
            IM.structural_similarity_index_measure(p, t, data_range=1.0),
            IM.total_variation(p),
            IM.spectral_angle_mapper(p, t),
            IM.universal_image_quality_index(p, t),
            IM.error_relative_global_dimensionless_synthesis(p, t),
            IM.image_gradients(p),
        )

    return step


spec(
    "tm.image:eval",
    "torchmetrics",
    "psnr/ssim/tv/sam/uqi/ergas/gradients",
    "eval",
    _tm_image,
    lambda: [([rand(*s, seed=i), rand(*s, seed=i + 7)], {}) for i, s in enumerate(IMG3)],
)


def _tm_retrieval() -> Callable:
    import torchmetrics.functional.retrieval as R

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        return (
            R.retrieval_normalized_dcg(p, t, top_k=5),
            R.retrieval_average_precision(p, t),
            R.retrieval_reciprocal_rank(p, t),
            R.retrieval_precision(p, t, top_k=3),
            R.retrieval_r_precision(p, t),
            R.retrieval_hit_rate(p, t, top_k=4),
        )

    return step


spec(
    "tm.retrieval:eval",
    "torchmetrics",
    "ndcg/ap/rr/precision/r-precision/hit-rate",
    "eval",
    _tm_retrieval,
    lambda: [([rand(n, seed=i), randint(2, n, seed=i).bool()], {}) for i, n in enumerate([16, 24, 9])],
)


def _tm_audio() -> Callable:
    import torchmetrics.functional.audio as A

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        return (
            A.scale_invariant_signal_distortion_ratio(p, t),
            A.signal_noise_ratio(p, t),
            A.permutation_invariant_training(
                p, t, A.scale_invariant_signal_distortion_ratio, eval_func="max"
            ),
        )

    return step


spec(
    "tm.audio:eval",
    "torchmetrics",
    "si-sdr/snr/pit",
    "eval",
    _tm_audio,
    lambda: [
        ([randn(*s, seed=i), randn(*s, seed=i + 3)], {})
        for i, s in enumerate([(2, 2, 64), (1, 3, 80), (3, 2, 48)])
    ],
)


def _tm_clustering() -> Callable:
    import torchmetrics.functional as F
    import torchmetrics.functional.clustering
    import torchmetrics.functional.nominal  # noqa: F401

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        return (
            F.clustering.mutual_info_score(p, t),
            F.clustering.adjusted_rand_score(p, t),
            F.clustering.normalized_mutual_info_score(p, t),
            F.nominal.cramers_v(p, t),
        )

    return step


spec(
    "tm.clustering_nominal:eval",
    "torchmetrics",
    "mutual_info/ari/nmi/cramers_v",
    "eval",
    _tm_clustering,
    lambda: [([randint(4, n, seed=i), randint(4, n, seed=i + 1)], {}) for i, n in enumerate([20, 32, 12])],
)


def _tm_segmentation() -> Callable:
    import torchmetrics.functional.segmentation as S

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        return (
            S.mean_iou(p, t, num_classes=3, input_format="index"),
            S.generalized_dice_score(p, t, num_classes=3, input_format="index"),
            S.dice_score(p, t, num_classes=3, input_format="index"),
        )

    return step


spec(
    "tm.segmentation:eval",
    "torchmetrics",
    "mean_iou/generalized_dice/dice",
    "eval",
    _tm_segmentation,
    lambda: [
        ([randint(3, b, h, w, seed=i), randint(3, b, h, w, seed=i + 1)], {})
        for i, (b, h, w) in enumerate(SEG)
    ],
)


def _tm_modular() -> Callable:
    from torchmetrics import MeanSquaredError
    from torchmetrics.classification import MulticlassAccuracy, MulticlassAUROC

    acc, auroc, mse = (
        MulticlassAccuracy(num_classes=5),
        MulticlassAUROC(num_classes=5, thresholds=8),
        MeanSquaredError(),
    )

    def step(preds: torch.Tensor, target: torch.Tensor) -> Any:
        a = acc(preds, target)
        auroc.update(preds, target)
        mse.update(preds.argmax(-1).float(), target.float())
        return a, auroc.compute(), mse.compute()

    return step


spec(
    "tm.modular_update:train",
    "torchmetrics",
    "MulticlassAccuracy/AUROC/MSE update+compute",
    "train",
    _tm_modular,
    _cls_inputs(5),
)


# ======================================================================================= monai
def _monai_net(cls: str, **kw: Any) -> Callable[[], torch.nn.Module]:
    return lambda: getattr(importlib.import_module("monai.networks.nets"), cls)(**kw)


IMG2D = [(2, 1, 32, 32), (1, 1, 64, 48), (3, 1, 32, 64)]
spec(
    "monai.unet:train",
    "monai",
    "UNet 2d",
    "train",
    module(
        _monai_net(
            "UNet",
            spatial_dims=2,
            in_channels=1,
            out_channels=2,
            channels=(4, 8, 16),
            strides=(2, 2),
            num_res_units=1,
        ),
        "train",
    ),
    images(IMG2D),
)
spec(
    "monai.basic_unet:eval",
    "monai",
    "BasicUNet 2d",
    "eval",
    module(
        _monai_net("BasicUNet", spatial_dims=2, in_channels=1, out_channels=2, features=(4, 4, 8, 8, 16, 4)),
        "eval",
    ),
    images(IMG2D),
)
spec(
    "monai.segresnet:eval",
    "monai",
    "SegResNet 2d",
    "eval",
    module(
        _monai_net(
            "SegResNet",
            spatial_dims=2,
            init_filters=8,
            in_channels=1,
            out_channels=2,
            blocks_down=(1, 1, 1),
            blocks_up=(1, 1),
        ),
        "eval",
    ),
    images(IMG2D),
)
spec(
    "monai.swin_unetr:eval",
    "monai",
    "SwinUNETR 2d",
    "eval",
    module(
        _monai_net(
            "SwinUNETR",
            in_channels=1,
            out_channels=2,
            feature_size=12,
            depths=(1, 1, 1, 1),
            num_heads=(1, 1, 2, 2),
            spatial_dims=2,
        ),
        "eval",
    ),
    images([(1, 1, 64, 64), (2, 1, 64, 96)]),
)
spec(
    "monai.unetr:eval",
    "monai",
    "UNETR 2d",
    "eval",
    module(
        _monai_net(
            "UNETR",
            in_channels=1,
            out_channels=2,
            img_size=(32, 32),
            feature_size=4,
            hidden_size=48,
            mlp_dim=96,
            num_heads=4,
            spatial_dims=2,
        ),
        "eval",
    ),
    images([(2, 1, 32, 32), (1, 1, 32, 32)]),
)
spec(
    "monai.dynunet:train",
    "monai",
    "DynUNet 2d deep supervision",
    "train",
    module(
        _monai_net(
            "DynUNet",
            spatial_dims=2,
            in_channels=1,
            out_channels=2,
            kernel_size=[3, 3, 3],
            strides=[1, 2, 2],
            upsample_kernel_size=[2, 2],
            filters=[4, 8, 16],
            deep_supervision=True,
            deep_supr_num=1,
        ),
        "train",
    ),
    images(IMG2D),
)
spec(
    "monai.attention_unet:eval",
    "monai",
    "AttentionUnet 2d",
    "eval",
    module(
        _monai_net(
            "AttentionUnet",
            spatial_dims=2,
            in_channels=1,
            out_channels=2,
            channels=(4, 8, 16),
            strides=(2, 2),
        ),
        "eval",
    ),
    images(IMG2D),
)


def _monai_losses() -> Callable:
    import monai.losses as L

    dce = L.DiceCELoss(to_onehot_y=True, softmax=True)
    focal = L.FocalLoss(to_onehot_y=True, gamma=2.0)
    gdl = L.GeneralizedDiceLoss(to_onehot_y=True, softmax=True)
    tv = L.TverskyLoss(to_onehot_y=True, softmax=True)
    dfl = L.DiceFocalLoss(to_onehot_y=True, softmax=True)

    def step(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        t = target[:, None]
        return dce(logits, t) + focal(logits, t) + gdl(logits, t) + tv(logits, t) + dfl(logits, t)

    return step


spec(
    "monai.losses:train",
    "monai",
    "DiceCE/Focal/GeneralizedDice/Tversky/DiceFocal",
    "train",
    _monai_losses,
    _seg_inputs(3, SEG),
)


def _monai_losses2() -> Callable:
    import monai.losses as L

    masked = L.MaskedDiceLoss(sigmoid=True)
    ssim = L.SSIMLoss(spatial_dims=2, data_range=1.0, win_size=5)
    gwd = L.GeneralizedWassersteinDiceLoss(
        dist_matrix=torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.5], [1.0, 0.5, 0.0]])
    )
    contrast = L.ContrastiveLoss(temperature=0.5)

    def step(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        mask = (target[:, None] > 0).float()
        onehot = torch.nn.functional.one_hot(target, 3).permute(0, 3, 1, 2).float()
        p = logits.sigmoid()
        return (
            masked(logits, onehot, mask=mask)
            + ssim(p[:, :1], p[:, 1:2])
            + gwd(logits, target)
            + contrast(logits.flatten(1), logits.flatten(1).flip(0))
        )

    return step


spec(
    "monai.losses2:train",
    "monai",
    "MaskedDice/SSIM/GeneralizedWassersteinDice/Contrastive",
    "train",
    _monai_losses2,
    _seg_inputs(3, SEG),
)


def _monai_metrics() -> Callable:
    import monai.metrics as M

    def step(pred: torch.Tensor, target: torch.Tensor) -> Any:
        return (
            M.compute_dice(pred, target, include_background=False),
            M.compute_iou(pred, target),
            M.compute_generalized_dice(pred, target),
            M.get_confusion_matrix(pred, target),
            M.compute_confusion_matrix_metric("f1 score", M.get_confusion_matrix(pred, target)),
        )

    return step


def _monai_distance_metrics() -> Callable:
    import monai.metrics as M

    def step(pred: torch.Tensor, target: torch.Tensor) -> Any:
        return (
            M.compute_hausdorff_distance(pred, target, percentile=95),
            M.compute_surface_dice(pred, target, class_thresholds=[1.0, 1.0]),
            M.compute_average_surface_distance(pred, target, symmetric=True),
        )

    return step


def _onehot_pairs() -> list[InputSet]:
    out = []
    for i, (b, h, w) in enumerate(SEG):
        p = torch.nn.functional.one_hot(randint(3, b, h, w, seed=i), 3).permute(0, 3, 1, 2).float()
        t = torch.nn.functional.one_hot(randint(3, b, h, w, seed=i + 1), 3).permute(0, 3, 1, 2).float()
        out.append(([p, t], {}))
    return out


spec(
    "monai.metrics:eval",
    "monai",
    "dice/iou/generalized dice/confusion matrix/f1",
    "eval",
    _monai_metrics,
    _onehot_pairs,
)
spec(
    "monai.distance_metrics:eval",
    "monai",
    "hausdorff/surface dice/average surface distance (scipy-backed)",
    "eval",
    _monai_distance_metrics,
    _onehot_pairs,
)


def _monai_cumulative() -> Callable:
    from monai.metrics import ConfusionMatrixMetric, DiceMetric, MeanIoU, ROCAUCMetric

    dice, iou = DiceMetric(include_background=True, reduction="mean"), MeanIoU()
    cm, auc = ConfusionMatrixMetric(metric_name="sensitivity"), ROCAUCMetric()

    def step(pred: torch.Tensor, target: torch.Tensor) -> Any:
        dice(pred, target)
        iou(pred, target)
        cm(pred, target)
        auc(pred.flatten(2).mean(-1), target.flatten(2).amax(-1))
        return dice.aggregate(), iou.aggregate(), cm.aggregate(), auc.aggregate()

    return step


spec(
    "monai.cumulative_metrics:eval",
    "monai",
    "DiceMetric/MeanIoU/ConfusionMatrix/ROCAUC",
    "eval",
    _monai_cumulative,
    _onehot_pairs,
)


def _monai_sliding() -> Callable:
    from monai.inferers import sliding_window_inference
    from monai.networks.nets import UNet

    net = UNet(
        spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8), strides=(2,), num_res_units=0
    ).eval()

    def infer(x: torch.Tensor) -> torch.Tensor:
        return sliding_window_inference(x, roi_size=(16, 16), sw_batch_size=4, predictor=net, overlap=0.25)

    return infer


spec(
    "monai.sliding_window:eval",
    "monai",
    "sliding_window_inference(UNet)",
    "eval",
    _monai_sliding,
    images([(1, 1, 32, 32), (1, 1, 40, 24), (2, 1, 24, 24)]),
)


def _monai_transforms() -> Callable:
    from monai.transforms import (
        Compose,
        NormalizeIntensity,
        RandAdjustContrast,
        RandFlip,
        RandGaussianNoise,
        RandScaleIntensity,
        ScaleIntensityRange,
    )

    t = Compose(
        [
            ScaleIntensityRange(0.0, 1.0, -1.0, 1.0),
            NormalizeIntensity(nonzero=True),
            RandGaussianNoise(prob=1.0, std=0.05),
            RandScaleIntensity(0.1, prob=1.0),
            RandAdjustContrast(prob=1.0),
            RandFlip(prob=0.5, spatial_axis=1),
        ]
    )
    t.set_random_state(seed=0)
    return t


spec(
    "monai.transforms:train",
    "monai",
    "Compose(intensity + random transforms)",
    "train",
    _monai_transforms,
    lambda: [([rand(*s, seed=i)], {}) for i, s in enumerate([(1, 32, 32), (1, 24, 40), (2, 16, 16)])],
)


# =========================================================================== pytorch_metric_learning
def _emb_inputs() -> list[InputSet]:
    return [
        ([randn(n, 16, seed=i).requires_grad_(), randint(k, n, seed=i)], {})
        for i, (n, k) in enumerate([(16, 4), (24, 6), (12, 3)])
    ]


def _pml(
    loss: str, miner: str | None = None, loss_kw: dict | None = None, miner_kw: dict | None = None
) -> Callable:
    def build() -> Callable:
        from pytorch_metric_learning import losses, miners

        lo = getattr(losses, loss)(**(loss_kw or {}))
        mi = getattr(miners, miner)(**(miner_kw or {})) if miner else None
        if mi is None:
            return lo

        def step(emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return lo(emb, labels, mi(emb, labels))

        return step

    return build


spec(
    "pml.triplet_miner:train",
    "pytorch_metric_learning",
    "TripletMarginLoss+TripletMarginMiner",
    "train",
    _pml(
        "TripletMarginLoss",
        "TripletMarginMiner",
        {"margin": 0.2},
        {"margin": 0.2, "type_of_triplets": "semihard"},
    ),
    _emb_inputs,
)
spec(
    "pml.multi_similarity:train",
    "pytorch_metric_learning",
    "MultiSimilarityLoss+MultiSimilarityMiner",
    "train",
    _pml("MultiSimilarityLoss", "MultiSimilarityMiner"),
    _emb_inputs,
)
spec("pml.ntxent:train", "pytorch_metric_learning", "NTXentLoss", "train", _pml("NTXentLoss"), _emb_inputs)
spec("pml.supcon:train", "pytorch_metric_learning", "SupConLoss", "train", _pml("SupConLoss"), _emb_inputs)
spec(
    "pml.contrastive_batchhard:train",
    "pytorch_metric_learning",
    "ContrastiveLoss+BatchHardMiner",
    "train",
    _pml("ContrastiveLoss", "BatchHardMiner"),
    _emb_inputs,
)
spec(
    "pml.circle_pairmargin:train",
    "pytorch_metric_learning",
    "CircleLoss+PairMarginMiner",
    "train",
    _pml("CircleLoss", "PairMarginMiner"),
    _emb_inputs,
)
spec(
    "pml.lifted_structure:train",
    "pytorch_metric_learning",
    "LiftedStructureLoss",
    "train",
    _pml("LiftedStructureLoss"),
    _emb_inputs,
)
spec(
    "pml.margin_loss:train",
    "pytorch_metric_learning",
    "MarginLoss+DistanceWeightedMiner",
    "train",
    _pml("MarginLoss", "DistanceWeightedMiner", {}, {"cutoff": 0.5, "nonzero_loss_cutoff": 1.4}),
    _emb_inputs,
)
spec(
    "pml.arcface:train",
    "pytorch_metric_learning",
    "ArcFaceLoss",
    "train",
    _pml("ArcFaceLoss", None, {"num_classes": 6, "embedding_size": 16}),
    _emb_inputs,
)
spec(
    "pml.proxy_anchor:train",
    "pytorch_metric_learning",
    "ProxyAnchorLoss",
    "train",
    _pml("ProxyAnchorLoss", None, {"num_classes": 6, "embedding_size": 16}),
    _emb_inputs,
)
spec(
    "pml.fast_ap:train",
    "pytorch_metric_learning",
    "FastAPLoss",
    "train",
    _pml("FastAPLoss", None, {"num_bins": 8}),
    _emb_inputs,
)
spec(
    "pml.npairs_hdc:train",
    "pytorch_metric_learning",
    "NPairsLoss+HDCMiner",
    "train",
    _pml("NPairsLoss", "HDCMiner", {}, {"filter_percentage": 0.5}),
    _emb_inputs,
)


# ======================================================================================= torchdiffeq
class _ODEFunc(torch.nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(dim, 16), torch.nn.Tanh(), torch.nn.Linear(16, dim))

    def forward(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.net(y)


def _ode(method: str, adjoint: bool = False, **options: Any) -> Callable:
    def build() -> Callable:
        import torchdiffeq

        f = _ODEFunc()
        solve = torchdiffeq.odeint_adjoint if adjoint else torchdiffeq.odeint

        def integrate(y0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return solve(
                f, y0, t, method=method, rtol=1e-3, atol=1e-4, **({"options": options} if options else {})
            )

        return integrate

    return build


def _ode_inputs() -> list[InputSet]:
    return [
        ([randn(b, 4, seed=i), torch.linspace(0, 1, n)], {})
        for i, (b, n) in enumerate([(2, 3), (4, 5), (3, 3)])
    ]


spec("diffeq.dopri5:train", "torchdiffeq", "odeint(dopri5)", "train", _ode("dopri5"), _ode_inputs)
spec(
    "diffeq.rk4:train",
    "torchdiffeq",
    "odeint(rk4, step_size)",
    "train",
    _ode("rk4", step_size=0.25),
    _ode_inputs,
)
spec(
    "diffeq.adjoint_bosh3:train",
    "torchdiffeq",
    "odeint_adjoint(bosh3)",
    "train",
    _ode("bosh3", adjoint=True),
    _ode_inputs,
)


# ======================================================================================= more: kornia
def _lightglue() -> torch.nn.Module:
    from kornia.feature import LightGlue

    return LightGlue(None, input_dim=32, descriptor_dim=32, n_layers=2, num_heads=2, flash=False)


def _lightglue_inputs() -> list[InputSet]:
    out = []
    for i, (b, m, n) in enumerate([(1, 24, 20), (2, 16, 30)]):

        def side(k: int, s: int, b: int = b) -> dict:
            return {
                "keypoints": rand(b, k, 2, seed=s) * 60,
                "descriptors": randn(b, k, 32, seed=s + 1),
                "image_size": torch.tensor([[64.0, 64.0]] * b),
            }

        out.append(([{"image0": side(m, i), "image1": side(n, i + 50)}], {}))
    return out


spec(
    "kornia.lightglue:eval",
    "kornia",
    "feature.LightGlue (2 layers, pruning and early stop)",
    "eval",
    module(_lightglue, "eval"),
    _lightglue_inputs,
)


def _kmeans() -> Callable:
    from kornia.contrib import KMeans

    km = KMeans(3, None, 1e-4, 10, seed=0)

    def fit(x: torch.Tensor) -> torch.Tensor:
        km.fit(x)
        return km.cluster_centers

    return fit


spec(
    "kornia.kmeans:eval",
    "kornia",
    "contrib.KMeans.fit",
    "eval",
    _kmeans,
    lambda: [
        ([randn(n, 2, seed=i) + (randint(3, n, 1, seed=i) * 4).float()], {})
        for i, n in enumerate([30, 45, 24])
    ],
)


def _fginn() -> Callable:
    from kornia.feature import KeyNetDetector, get_laf_center, match_fginn

    det = KeyNetDetector(pretrained=False, num_features=12).eval()

    def detect_and_match(img: torch.Tensor) -> Any:
        lafs, resp = det(img)
        desc = resp[..., None].expand(-1, -1, 8) + get_laf_center(lafs).repeat(1, 1, 4)
        return match_fginn(desc[0], desc[0].flip(0), lafs, lafs.flip(1))

    return detect_and_match


spec(
    "kornia.fginn_keynet:eval",
    "kornia",
    "KeyNetDetector + feature.match_fginn",
    "eval",
    _fginn,
    lambda: [([rand(1, 1, 48, 48, seed=i)], {}) for i in range(2)],
)


spec(
    "kornia.aug_crop_pad:train",
    "kornia",
    "RandomCrop(pad_if_needed)+CenterCrop+RandomResizedCrop(same_on_batch)",
    "train",
    module(
        lambda: torch.nn.Sequential(
            __import__("kornia.augmentation", fromlist=["RandomCrop"]).RandomCrop(
                (28, 28), pad_if_needed=True, p=1.0
            ),
            __import__("kornia.augmentation", fromlist=["CenterCrop"]).CenterCrop(24),
            __import__("kornia.augmentation", fromlist=["RandomResizedCrop"]).RandomResizedCrop(
                (16, 16), same_on_batch=True
            ),
        ),
        "train",
    ),
    images(IMG3),
)


# ======================================================================================= more: torchmetrics
def _tm_multilabel() -> Callable:
    import torchmetrics.functional.classification as C

    def step(preds: torch.Tensor, target: torch.Tensor) -> Any:
        return (
            C.multilabel_accuracy(preds, target, num_labels=4),
            C.multilabel_ranking_average_precision(preds, target, 4),
            C.multilabel_coverage_error(preds, target, 4),
            C.multilabel_exact_match(preds, target, 4),
            C.multilabel_auroc(preds, target, 4, thresholds=None),
            C.multilabel_hamming_distance(preds, target, 4),
        )

    return step


spec(
    "tm.multilabel:eval",
    "torchmetrics",
    "multilabel accuracy/ranking AP/coverage/exact match/auroc/hamming",
    "eval",
    _tm_multilabel,
    lambda: [([rand(n, 4, seed=i), randint(2, n, 4, seed=i)], {}) for i, n in enumerate([16, 24, 9])],
)


def _tm_pairwise() -> Callable:
    import torchmetrics.functional as F
    import torchmetrics.functional.pairwise as P

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        return (
            P.pairwise_cosine_similarity(p, t, reduction="mean"),
            P.pairwise_euclidean_distance(p, t),
            P.pairwise_manhattan_distance(p, zero_diagonal=True),
            F.kl_divergence(p.softmax(-1), t.softmax(-1)),
            F.cosine_similarity(p, t),
            F.tweedie_deviance_score(p.abs() + 0.1, t.abs(), power=1.5),
            F.minkowski_distance(p, t, 3),
        )

    return step


spec(
    "tm.pairwise_regression:eval",
    "torchmetrics",
    "pairwise distances/kl/cosine/tweedie/minkowski",
    "eval",
    _tm_pairwise,
    lambda: [([randn(n, 5, seed=i), randn(n, 5, seed=i + 4)], {}) for i, n in enumerate([8, 12, 6])],
)


def _tm_modular_image() -> Callable:
    from torchmetrics import MetricCollection
    from torchmetrics.image import PeakSignalNoiseRatio, StructuralSimilarityIndexMeasure
    from torchmetrics.regression import PearsonCorrCoef, SpearmanCorrCoef

    img = MetricCollection(
        [PeakSignalNoiseRatio(data_range=1.0), StructuralSimilarityIndexMeasure(data_range=1.0)]
    )
    pear, spear = PearsonCorrCoef(), SpearmanCorrCoef()

    def step(p: torch.Tensor, t: torch.Tensor) -> Any:
        out = img(p, t)
        pear.update(p.flatten(), t.flatten())
        spear.update(p.flatten(), t.flatten())
        return out, pear.compute(), spear.compute()

    return step


spec(
    "tm.modular_collection:eval",
    "torchmetrics",
    "MetricCollection(PSNR,SSIM)+Pearson/Spearman update",
    "eval",
    _tm_modular_image,
    lambda: [([rand(*s, seed=i), rand(*s, seed=i + 7)], {}) for i, s in enumerate(IMG3)],
)


# ======================================================================================= more: monai


class _VitDense(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        from monai.networks.nets import ViT, DenseNet121

        self.vit = ViT(
            in_channels=1,
            img_size=(32, 32),
            patch_size=(8, 8),
            hidden_size=32,
            mlp_dim=64,
            num_layers=2,
            num_heads=2,
            classification=True,
            num_classes=3,
            spatial_dims=2,
        )
        self.dense = DenseNet121(
            spatial_dims=2, in_channels=1, out_channels=3, init_features=8, growth_rate=4
        )

    def forward(self, x: torch.Tensor) -> Any:
        return self.vit(x)[0] + self.dense(x)


def _vit_dense() -> torch.nn.Module:
    return _VitDense()


spec(
    "monai.vit_densenet:eval",
    "monai",
    "ViT classification + DenseNet121 2d",
    "eval",
    module(_vit_dense, "eval"),
    images([(2, 1, 32, 32), (1, 1, 32, 32)]),
)


def _monai_postprocess() -> Callable:
    from monai.transforms import AsDiscrete, DistanceTransformEDT, FillHoles, LabelFilter

    argmax, edt = AsDiscrete(argmax=True, to_onehot=3), DistanceTransformEDT()
    fill, keep = FillHoles(applied_labels=[1, 2]), LabelFilter([1, 2])

    def post(logits: torch.Tensor) -> Any:
        onehot = argmax(logits)
        labels = logits.argmax(0, keepdim=True)
        return edt(onehot), fill(labels), keep(labels)

    return post


spec(
    "monai.postprocess:eval",
    "monai",
    "AsDiscrete+DistanceTransformEDT+FillHoles+LabelFilter",
    "eval",
    _monai_postprocess,
    lambda: [([randn(3, h, w, seed=i)], {}) for i, (h, w) in enumerate([(16, 16), (12, 20)])],
)


def _monai_crops() -> Callable:
    from monai.transforms import CropForeground, RandCropByPosNegLabel, RandSpatialCrop, SpatialPad

    fg, pad = CropForeground(margin=1), SpatialPad((24, 24))
    posneg = RandCropByPosNegLabel((8, 8), pos=1, neg=1, num_samples=2)
    rsc = RandSpatialCrop((12, 12), random_size=False)
    posneg.set_random_state(0)
    rsc.set_random_state(0)

    def crop(img: torch.Tensor, label: torch.Tensor) -> Any:
        return fg(img), pad(img), posneg(img, label=label), rsc(img)

    return crop


def _crop_inputs() -> list[InputSet]:
    out = []
    for i, (h, w) in enumerate([(20, 20), (16, 24)]):
        img = torch.zeros(1, h, w)
        img[:, 3 : h - 4, 5 : w - 3] = rand(1, h - 7, w - 8, seed=i)
        out.append(([img, (img > 0.5).float()], {}))
    return out


spec(
    "monai.crops:train",
    "monai",
    "CropForeground+SpatialPad+RandCropByPosNegLabel+RandSpatialCrop",
    "train",
    _monai_crops,
    _crop_inputs,
)


def _monai_losses3() -> Callable:
    import monai.losses as L

    hd = L.HausdorffDTLoss(softmax=True, to_onehot_y=True)
    cl = L.SoftclDiceLoss()
    ds = L.DeepSupervisionLoss(L.DiceLoss(to_onehot_y=True, softmax=True), weight_mode="exp")

    def step(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        t = target[:, None]
        onehot = torch.nn.functional.one_hot(target, 3).permute(0, 3, 1, 2).float()
        return hd(logits, t) + cl(onehot, logits.softmax(1)) + ds([logits, logits[..., ::2, ::2]], t.float())

    return step


spec(
    "monai.losses3:train",
    "monai",
    "HausdorffDT/SoftclDice/DeepSupervision losses",
    "train",
    _monai_losses3,
    _seg_inputs(3, SEG),
)


# ====================================================================== more: pytorch_metric_learning
spec(
    "pml.cross_batch_memory:train",
    "pytorch_metric_learning",
    "CrossBatchMemory(ContrastiveLoss)",
    "train",
    lambda: __import__("pytorch_metric_learning.losses", fromlist=["CrossBatchMemory"]).CrossBatchMemory(
        __import__("pytorch_metric_learning.losses", fromlist=["ContrastiveLoss"]).ContrastiveLoss(),
        16,
        memory_size=32,
    ),
    _emb_inputs,
)
spec(
    "pml.soft_triple:train",
    "pytorch_metric_learning",
    "SoftTripleLoss",
    "train",
    _pml("SoftTripleLoss", None, {"num_classes": 6, "embedding_size": 16, "centers_per_class": 2}),
    _emb_inputs,
)
spec(
    "pml.tuplet_angular:train",
    "pytorch_metric_learning",
    "TupletMarginLoss+AngularMiner",
    "train",
    _pml("TupletMarginLoss", "AngularMiner"),
    _emb_inputs,
)
spec(
    "pml.nca_easyhard:train",
    "pytorch_metric_learning",
    "NCALoss+BatchEasyHardMiner",
    "train",
    _pml("NCALoss", "BatchEasyHardMiner"),
    _emb_inputs,
)
spec(
    "pml.histogram_uniform:train",
    "pytorch_metric_learning",
    "HistogramLoss+UniformHistogramMiner",
    "train",
    _pml(
        "HistogramLoss",
        "UniformHistogramMiner",
        {"n_bins": 10},
        {"num_bins": 10, "pos_per_bin": 2, "neg_per_bin": 2},
    ),
    _emb_inputs,
)
spec(
    "pml.ranked_list:train",
    "pytorch_metric_learning",
    "RankedListLoss",
    "train",
    _pml("RankedListLoss", None, {"margin": 0.4, "Tn": 10.0}),
    _emb_inputs,
)
spec(
    "pml.subcenter_arcface:train",
    "pytorch_metric_learning",
    "SubCenterArcFaceLoss",
    "train",
    _pml("SubCenterArcFaceLoss", None, {"num_classes": 6, "embedding_size": 16, "sub_centers": 2}),
    _emb_inputs,
)


# ======================================================================================= more: torchdiffeq
def _ode_event() -> Callable:
    import torchdiffeq

    f = _ODEFunc()

    def solve(y0: torch.Tensor, t: torch.Tensor) -> Any:
        return torchdiffeq.odeint_event(
            f,
            y0,
            t[0],
            event_fn=lambda t, y: y.sum() - 1.0e3 + 200.0 * t,
            method="dopri5",
            rtol=1e-3,
            atol=1e-4,
        )

    return solve


spec("diffeq.event:eval", "torchdiffeq", "odeint_event(dopri5)", "eval", _ode_event, _ode_inputs)
spec(
    "diffeq.implicit_adams:eval",
    "torchdiffeq",
    "odeint(implicit_adams)",
    "eval",
    _ode("implicit_adams", step_size=0.25),
    _ode_inputs,
)
spec(
    "diffeq.dopri8_grid:eval",
    "torchdiffeq",
    "odeint(dopri8, jump_t/perturb options)",
    "eval",
    _ode("dopri8", first_step=0.1),
    _ode_inputs,
)


# ======================================================================================= x_transformers
def _xt_decoder(**kw: Any) -> torch.nn.Module:
    from x_transformers import Decoder, TransformerWrapper

    return TransformerWrapper(
        num_tokens=64,
        max_seq_len=32,
        attn_layers=Decoder(dim=32, depth=2, heads=2, rotary_pos_emb=True),
        **kw,
    )


def _tokens(shapes: list[tuple[int, int]], masked: bool = False) -> Callable[[], list[InputSet]]:
    def make() -> list[InputSet]:
        out = []
        for i, (b, n) in enumerate(shapes):
            x = randint(64, b, n, seed=i)
            kw = (
                {"mask": torch.arange(n)[None, :] < torch.tensor([[n], [n - 2], [n - 3]])[:b]}
                if masked
                else {}
            )
            out.append(([x], kw))
        return out

    return make


spec(
    "xt.decoder_lm:train",
    "x_transformers",
    "TransformerWrapper(Decoder, rotary)",
    "train",
    module(_xt_decoder, "train"),
    _tokens([(2, 16), (1, 24), (3, 8)]),
)


def _xt_encoder() -> torch.nn.Module:
    from x_transformers import Encoder, TransformerWrapper

    return TransformerWrapper(
        num_tokens=64,
        max_seq_len=32,
        num_memory_tokens=2,
        attn_layers=Encoder(dim=32, depth=2, heads=2, attn_num_mem_kv=2, ff_glu=True, use_rmsnorm=True),
    )


spec(
    "xt.encoder_masked:eval",
    "x_transformers",
    "TransformerWrapper(Encoder, memory tokens, mask)",
    "eval",
    module(_xt_encoder, "eval"),
    _tokens([(2, 16), (3, 12), (2, 20)], masked=True),
)


def _xt_generate() -> Callable:
    from x_transformers import AutoregressiveWrapper

    wrapper = AutoregressiveWrapper(_xt_decoder()).eval()
    return functools.partial(wrapper.generate, seq_len=4, temperature=0.0, cache_kv=True)


spec(
    "xt.generate:eval",
    "x_transformers",
    "AutoregressiveWrapper.generate (greedy, kv cache)",
    "eval",
    _xt_generate,
    lambda: [([randint(64, b, n, seed=i)], {}) for i, (b, n) in enumerate([(1, 6), (2, 8)])],
)


def _xt_vit() -> torch.nn.Module:
    from x_transformers import Encoder, ViTransformerWrapper

    return ViTransformerWrapper(
        image_size=32, patch_size=8, num_classes=5, attn_layers=Encoder(dim=32, depth=2, heads=2)
    )


spec(
    "xt.vit:train",
    "x_transformers",
    "ViTransformerWrapper",
    "train",
    module(_xt_vit, "train"),
    images([(2, 3, 32, 32), (1, 3, 32, 32)]),
)


# =========================================================================== vector_quantize_pytorch
def _vq(name: str, **kw: Any) -> Callable[[], torch.nn.Module]:
    return lambda: getattr(importlib.import_module("vector_quantize_pytorch"), name)(**kw)


def _features(shapes: list[tuple[int, int, int]]) -> Callable[[], list[InputSet]]:
    return lambda: [([randn(*s, seed=i)], {}) for i, s in enumerate(shapes)]


VQ_IN = [(2, 16, 16), (1, 24, 16), (3, 8, 16)]
spec(
    "vq.vector_quantize:train",
    "vector_quantize_pytorch",
    "VectorQuantize(kmeans init, EMA, commitment)",
    "train",
    module(
        _vq(
            "VectorQuantize",
            dim=16,
            codebook_size=32,
            kmeans_init=True,
            kmeans_iters=2,
            decay=0.8,
            commitment_weight=1.0,
        ),
        "train",
    ),
    _features(VQ_IN),
)
spec(
    "vq.residual_vq:train",
    "vector_quantize_pytorch",
    "ResidualVQ(quantize dropout)",
    "train",
    module(_vq("ResidualVQ", dim=16, num_quantizers=3, codebook_size=32, quantize_dropout=True), "train"),
    _features(VQ_IN),
)
spec(
    "vq.lfq:train",
    "vector_quantize_pytorch",
    "LFQ(entropy loss)",
    "train",
    module(_vq("LFQ", dim=16, codebook_size=2**4, entropy_loss_weight=0.1), "train"),
    _features(VQ_IN),
)
spec(
    "vq.fsq_cosine:eval",
    "vector_quantize_pytorch",
    "FSQ + cosine-sim VectorQuantize",
    "eval",
    module(lambda: _FsqCosine(), "eval"),
    _features(VQ_IN),
)


class _FsqCosine(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        from vector_quantize_pytorch import FSQ, VectorQuantize

        self.fsq = FSQ(levels=[8, 5, 5], dim=16)
        self.vq = VectorQuantize(dim=16, codebook_size=32, use_cosine_sim=True, threshold_ema_dead_code=2)

    def forward(self, x: torch.Tensor) -> Any:
        return self.fsq(x), self.vq(x)
