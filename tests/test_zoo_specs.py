"""eval-zoo's runs rebuilt from their records: inputs drawn from the recorded descriptions, and the check that
a rebuilt run reproduces its label.

The labels describe inputs only by shape and dtype; a detection run is meaningless on boxes that are not
boxes, so the rebuilt targets must fit their images, and the same record must give the same tensors in
every process (the five runs of a spec are compared output for output).
"""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import requires_torch

pytestmark = requires_torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path[:0] = [str(BENCH), str(BENCH / "realcode")]

RECORD = {
    "spec": "tv.toy_detector:train",
    "config": {"num_classes": 3},
    "input_sets": [
        {"args": [["Tensor[3, 40, 60]:float32", "Tensor[3, 50, 30]:float32"],
                  [{"boxes": "Tensor[4, 4]:float32", "labels": "Tensor[4]:int64", "masks": "Tensor[4, 40, 60]:uint8",
                    "keypoints": "Tensor[4, 5, 3]:float32"},
                   {"boxes": "Tensor[2, 4]:float32", "labels": "Tensor[2]:int64", "masks": "Tensor[2, 50, 30]:uint8",
                    "keypoints": "Tensor[2, 5, 3]:float32"}]],
         "kwargs": {}},
        {"args": ["Tensor[3, 32, 48]:uint8", "Tensor[6, 4]:float32", "Tensor[6]:int64"], "kwargs": {}},
    ],
}


def test_detection_targets_fit_their_images() -> None:
    import torch
    from zoo_specs import input_sets

    (images, targets), _ = input_sets(RECORD)()[0]
    assert [tuple(t.shape) for t in images] == [(3, 40, 60), (3, 50, 30)]
    for image, target in zip(images, targets):
        h, w = image.shape[-2:]
        boxes = target["boxes"]
        assert (boxes[:, 0] >= 0).all() and (boxes[:, 1] >= 0).all()
        assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()
        assert (boxes[:, 2] <= w).all() and (boxes[:, 3] <= h).all()
        assert target["labels"].dtype == torch.int64
        assert ((target["labels"] >= 1) & (target["labels"] < 3)).all()  # 0 is the background class
        masks = target["masks"]
        assert masks.dtype == torch.uint8 and tuple(masks.shape) == (len(boxes), h, w)
        for mask, box in zip(masks, boxes):
            ys, xs = torch.nonzero(mask, as_tuple=True)
            assert xs.min() >= box[0].floor() and xs.max() < box[2] and ys.min() >= box[1].floor() and ys.max() < box[3]
        kp = target["keypoints"]
        assert tuple(kp.shape) == (len(boxes), 5, 3) and (kp[..., 2] == 1).all()
        assert ((kp[..., 0] >= boxes[:, None, 0]) & (kp[..., 0] <= boxes[:, None, 2])).all()


def test_inputs_follow_the_descriptions_and_repeat() -> None:
    import torch
    from zoo_specs import input_sets

    first, again = input_sets(RECORD)(), input_sets(RECORD)()
    image, boxes, idxs = first[1][0]
    assert image.dtype == torch.uint8 and tuple(image.shape) == (3, 32, 48)
    # a box tensor after an image lies on that image's canvas
    assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 2] <= 48).all() and (boxes[:, 3] <= 32).all()
    assert idxs.dtype == torch.int64 and tuple(idxs.shape) == (6,)
    for (a, _), (b, _) in zip(first, again):
        flat_a = [t for x in a for t in (x if isinstance(x, list) else [x])]
        flat_b = [t for x in b for t in (x if isinstance(x, list) else [x])]
        for x, y in zip(flat_a, flat_b):
            if isinstance(x, dict):
                assert all(torch.equal(x[k], y[k]) for k in x)
            else:
                assert torch.equal(x, y)


def test_reproduction_counts_the_labelled_lines_the_rebuilt_run_logged() -> None:
    from zoo_fix import reproduced, reproduction

    def brk(file: str, line: int, in_library: bool = True) -> dict:
        return {"file": file, "line": line, "in_library": in_library}

    label = {"breaks": [brk("lib/a.py", 3), brk("lib/a.py", 3), brk("lib/b.py", 9), brk("user.py", 1, False)]}
    rebuilt = {"breaks": [brk("lib/a.py", 3), brk("lib/c.py", 5)]}
    rep = reproduction(label, rebuilt)
    assert rep == {"labelled": 2, "reproduced": 1, "missed": ["lib/b.py:9"], "extra": ["lib/c.py:5"]}
    assert not reproduced({"reproduction": rep})
    full = reproduction(label, {"breaks": [brk("lib/b.py", 9), brk("lib/a.py", 3), brk("lib/c.py", 5)]})
    assert reproduced({"reproduction": full})  # lines beyond the label's do not make it unreproduced


def test_both_fixed_copies_keep_the_site_packages_name(tmp_path: Path) -> None:
    """The labeller places a break by its path under ``site-packages``: a copy under another name would
    record every break of the copy as outside the libraries (and a column as break-free)."""
    import fix
    import label

    site = tmp_path / "src" / "site-packages"
    (site / "toylib").mkdir(parents=True)
    (site / "toylib" / "ops.py").write_text("def f(x):\n    return x + 1\n")
    for flags in (False, True):
        root = fix.fixed_copy(str(site), ["toylib/ops.py"], str(tmp_path / "copies"), False, flags=flags)
        assert (Path(root) / "toylib" / "ops.py").is_file()
        assert label.rel_path(str(Path(root) / "toylib" / "ops.py")) == "toylib/ops.py"
