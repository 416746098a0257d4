"""Self-supervised optical flow: an iterative refinement network trained with a photometric loss.

The flow is refined a few times per pair by warping the second frame's features with the current
estimate; training uses a census-free photometric loss with optional forward-backward occlusion masking
and an edge-aware smoothness term. At test time the previous pair's flow warm-starts the next one.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def coords_grid(b, h, w, device):
    ys, xs = torch.meshgrid(
        torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij"
    )
    grid = torch.stack([xs, ys], dim=0).float()
    return grid[None].repeat(b, 1, 1, 1)


def warp(img, flow):
    """Backward-warp ``img`` with ``flow`` (pixels)."""
    b, _, h, w = img.shape
    grid = coords_grid(b, h, w, img.device) + flow
    gx = 2.0 * grid[:, 0] / max(w - 1, 1) - 1.0
    gy = 2.0 * grid[:, 1] / max(h - 1, 1) - 1.0
    grid = torch.stack([gx, gy], dim=-1)
    return F.grid_sample(img, grid, mode="bilinear", padding_mode="border", align_corners=True)


def occlusion_mask(flow_fw, flow_bw, alpha1=0.01, alpha2=0.5):
    bw_warped = warp(flow_bw, flow_fw)
    diff = (flow_fw + bw_warped).pow(2).sum(1, keepdim=True)
    mag = flow_fw.pow(2).sum(1, keepdim=True) + bw_warped.pow(2).sum(1, keepdim=True)
    return (diff < alpha1 * mag + alpha2).float()


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv1 = nn.Conv2d(3, dim, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(dim, dim, 3, stride=2, padding=1)
        self.norm = nn.InstanceNorm2d(dim)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        return self.norm(F.relu(self.conv2(x)))


class UpdateBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv2d(2 * dim + 2, dim, 3, padding=1)
        self.flow_head = nn.Conv2d(dim, 2, 3, padding=1)

    def forward(self, feat1, feat2_warped, flow):
        h = F.relu(self.conv(torch.cat([feat1, feat2_warped, flow], dim=1)))
        return self.flow_head(h)


class FlowNet(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.encoder = Encoder(dim)
        self.update = UpdateBlock(dim)

    def forward(self, img1, img2, iters=4, flow_init=None):
        f1, f2 = self.encoder(img1), self.encoder(img2)
        b, _, h, w = f1.shape
        if flow_init is None:
            flow = torch.zeros(b, 2, h, w, device=img1.device)
        else:
            scale = w / flow_init.shape[-1]
            flow = F.interpolate(flow_init, size=(h, w), mode="bilinear", align_corners=True) * scale
        predictions = []
        for _ in range(iters):
            f2w = warp(f2, flow)
            flow = flow + self.update(f1, f2w, flow)
            up = F.interpolate(flow, scale_factor=4, mode="bilinear", align_corners=True) * 4
            predictions.append(up)
        return predictions


def photometric_loss(img1, img2, flows, gamma=0.8, occ=None):
    n = len(flows)
    total = 0.0
    for i, flow in enumerate(flows):
        weight = gamma ** (n - i - 1)
        diff = (img1 - warp(img2, flow)).abs()
        if occ is not None:
            diff = diff * occ
            loss = diff.sum() / (occ.sum() * img1.shape[1] + 1e-6)
        else:
            loss = diff.mean()
        total = total + weight * loss
    return total


def smoothness_loss(flow, img, edge_weight=10.0):
    dx_f = flow[:, :, :, 1:] - flow[:, :, :, :-1]
    dy_f = flow[:, :, 1:] - flow[:, :, :-1]
    dx_i = (img[:, :, :, 1:] - img[:, :, :, :-1]).abs().mean(1, keepdim=True)
    dy_i = (img[:, :, 1:] - img[:, :, :-1]).abs().mean(1, keepdim=True)
    return (dx_f.abs() * torch.exp(-edge_weight * dx_i)).mean() + (
        dy_f.abs() * torch.exp(-edge_weight * dy_i)
    ).mean()


torch.manual_seed(0)
model = FlowNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)


def train_step(img1, img2, iters, smooth_weight, use_occlusion):
    flows_fw = model(img1, img2, iters=iters)
    if use_occlusion:
        flows_bw = model(img2, img1, iters=iters)
        occ = occlusion_mask(flows_fw[-1], flows_bw[-1]).detach()
    else:
        occ = None
    loss = photometric_loss(img1, img2, flows_fw, occ=occ)
    loss = loss + smooth_weight * smoothness_loss(flows_fw[-1], img1)
    if not torch.isfinite(loss):
        print("non-finite loss, skipping batch")
        return None
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


compiled_step = torch.compile(train_step)


def make_pair(b, h, w):
    img1 = torch.rand(b, 3, h, w)
    shift = torch.randint(-2, 3, (2,))
    img2 = torch.roll(img1, shifts=(int(shift[0]), int(shift[1])), dims=(2, 3))
    return img1, img2 + 0.01 * torch.randn_like(img2)


def main():
    for step in range(6):
        h, w = (32, 48) if step < 3 else (40, 56)
        iters = 2 if step < 4 else 3  # curriculum: more refinement steps later
        smooth_weight = 0.1 * min(1.0, step / 3)
        img1, img2 = make_pair(2, h, w)
        loss = compiled_step(img1, img2, iters, smooth_weight, use_occlusion=step >= 2)
        print(f"step {step} loss {loss:.4f}")

    model.eval()
    infer = torch.compile(model)
    frames = [torch.rand(1, 3, 32, 48) for _ in range(4)]
    prev = None
    with torch.no_grad():
        for t in range(3):
            flows = infer(frames[t], frames[t + 1], iters=4, flow_init=prev)
            prev = flows[-1][:, :, ::4, ::4]
            print(f"frame {t} mean |flow| {flows[-1].abs().mean():.3f}")


if __name__ == "__main__":
    main()
