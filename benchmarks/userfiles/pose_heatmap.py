"""Top-down human pose estimation with heatmaps.

A small conv backbone with a deconvolution head predicts one heatmap per joint. Training uses a
visibility-weighted MSE with online hard keypoint mining (OHKM). Inference averages the prediction
with that of the horizontally flipped image, decodes the arg-max with a quarter-pixel shift towards
the higher neighbour, and maps coordinates back to the image with the box's centre and scale.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

N_JOINTS = 6
FLIP_PAIRS = [(1, 2), (3, 4)]


class PoseNet(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=2, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        )
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(2 * width, width, 4, stride=2, padding=1), nn.BatchNorm2d(width), nn.ReLU()
        )
        self.final = nn.Conv2d(width, N_JOINTS, 1)

    def forward(self, x):
        return self.final(self.deconv(self.backbone(x)))


class JointsOHKMMSELoss(nn.Module):
    def __init__(self, topk=3, use_target_weight=True):
        super().__init__()
        self.topk = topk
        self.use_target_weight = use_target_weight

    def ohkm(self, loss):
        total = 0.0
        for i in range(loss.size(0)):
            sub_loss = loss[i]
            _, topk_idx = torch.topk(sub_loss, k=self.topk, dim=0, sorted=False)
            total += torch.gather(sub_loss, 0, topk_idx).sum() / self.topk
        return total / loss.size(0)

    def forward(self, output, target, target_weight):
        b, j = output.shape[:2]
        pred = output.reshape(b, j, -1)
        gt = target.reshape(b, j, -1)
        if self.use_target_weight:
            pred = pred * target_weight
            gt = gt * target_weight
        loss = 0.5 * F.mse_loss(pred, gt, reduction="none").mean(-1)
        return self.ohkm(loss)


def gaussian_targets(joints, visible, h, w, sigma=1.5):
    ys = torch.arange(h, dtype=torch.float32)[:, None]
    xs = torch.arange(w, dtype=torch.float32)[None, :]
    mu_x = joints[..., 0, None, None]
    mu_y = joints[..., 1, None, None]
    heat = torch.exp(-((xs - mu_x) ** 2 + (ys - mu_y) ** 2) / (2 * sigma**2))
    return heat * visible[..., None, None], visible[..., None].float()


def flip_back(heatmaps, flip_pairs):
    heatmaps = heatmaps.flip(-1)
    for a, b in flip_pairs:
        tmp = heatmaps[:, a].clone()
        heatmaps[:, a] = heatmaps[:, b]
        heatmaps[:, b] = tmp
    return heatmaps


def get_max_preds(heatmaps):
    b, j, h, w = heatmaps.shape
    flat = heatmaps.reshape(b, j, -1)
    maxvals, idx = flat.max(-1)
    preds = torch.stack([idx % w, idx // w], -1).float()
    preds = preds * (maxvals > 0.0)[..., None]
    return preds, maxvals


def decode(heatmaps, center, scale, shift=True):
    coords, maxvals = get_max_preds(heatmaps)
    b, j, h, w = heatmaps.shape
    if shift:
        for n in range(b):
            for k in range(j):
                hm = heatmaps[n, k]
                px, py = int(coords[n, k, 0] + 0.5), int(coords[n, k, 1] + 0.5)
                if 1 < px < w - 1 and 1 < py < h - 1:
                    diff = torch.stack([hm[py, px + 1] - hm[py, px - 1], hm[py + 1, px] - hm[py - 1, px]])
                    coords[n, k] += diff.sign() * 0.25
    # heatmap -> image coordinates
    size = torch.tensor([w, h], dtype=torch.float32)
    preds = coords * (scale[:, None, :] / size) + center[:, None, :] - scale[:, None, :] * 0.5
    return preds, maxvals


torch.manual_seed(0)
model = PoseNet()
criterion = JointsOHKMMSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


@torch.compile
def train_step(images, joints, visible):
    out = model(images)
    target, target_weight = gaussian_targets(joints, visible, out.shape[2], out.shape[3])
    loss = criterion(out, target, target_weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


@torch.compile
def predict(images, center, scale, flip_test=True, shift=True):
    heatmaps = model(images)
    if flip_test:
        flipped = flip_back(model(images.flip(-1)), FLIP_PAIRS)
        heatmaps = (heatmaps + flipped) * 0.5
    return decode(heatmaps, center, scale, shift=shift)


def main():
    for step in range(4):
        h, w = (64, 48) if step < 2 else (96, 72)
        images = torch.randn(2, 3, h, w)
        joints = torch.rand(2, N_JOINTS, 2) * torch.tensor([w / 4, h / 4])
        visible = torch.rand(2, N_JOINTS) > 0.2
        loss = train_step(images, joints, visible)
        print(f"step {step} input {h}x{w} loss {loss.item():.5f}")

    model.eval()
    with torch.no_grad():
        images = torch.randn(2, 3, 64, 48)
        center = torch.tensor([[100.0, 120.0], [60.0, 80.0]])
        scale = torch.tensor([[96.0, 128.0], [48.0, 64.0]])
        for flip in (True, False):
            preds, conf = predict(images, center, scale, flip_test=flip)
            print("flip", flip, tuple(preds.shape), conf.mean().item())


if __name__ == "__main__":
    main()
