"""A tiny NeRF: stratified + hierarchical sampling along rays, volume rendering, and an evaluation
renderer that marches rays until they are opaque.

Training renders random ray batches from two scenes with their own near/far bounds; evaluation renders
a full (tiny) image in chunks without jitter.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, num_freqs, include_input=True):
        super().__init__()
        self.include_input = include_input
        self.register_buffer("freqs", 2.0 ** torch.arange(num_freqs) * math.pi, persistent=False)

    def forward(self, x):
        xb = x[..., None] * self.freqs
        enc = torch.cat([xb.sin(), xb.cos()], dim=-1).flatten(-2)
        return torch.cat([x, enc], dim=-1) if self.include_input else enc


class TinyNeRF(nn.Module):
    def __init__(self, width=32, pos_freqs=6, dir_freqs=2):
        super().__init__()
        self.pos_enc = PositionalEncoding(pos_freqs)
        self.dir_enc = PositionalEncoding(dir_freqs)
        in_pos = 3 + 6 * pos_freqs
        in_dir = 3 + 6 * dir_freqs
        self.trunk = nn.Sequential(
            nn.Linear(in_pos, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()
        )
        self.sigma = nn.Linear(width, 1)
        self.rgb = nn.Sequential(nn.Linear(width + in_dir, width // 2), nn.ReLU(), nn.Linear(width // 2, 3))

    def forward(self, pts, dirs):
        h = self.trunk(self.pos_enc(pts))
        sigma = self.sigma(h).squeeze(-1)
        d = self.dir_enc(dirs)[..., None, :].expand(*h.shape[:-1], -1)
        rgb = torch.sigmoid(self.rgb(torch.cat([h, d], dim=-1)))
        return sigma, rgb


def stratified_samples(rays_o, rays_d, near, far, n_samples, perturb):
    t = torch.linspace(0.0, 1.0, n_samples, device=rays_o.device)
    z = near * (1.0 - t) + far * t
    z = z.expand(rays_o.shape[0], n_samples)
    if perturb > 0:
        mids = 0.5 * (z[..., 1:] + z[..., :-1])
        upper = torch.cat([mids, z[..., -1:]], -1)
        lower = torch.cat([z[..., :1], mids], -1)
        z = lower + (upper - lower) * torch.rand_like(z) * perturb
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z[..., :, None]
    return pts, z


def volume_render(sigma, rgb, z, rays_d, white_bkgd=False, noise_std=0.0):
    deltas = z[..., 1:] - z[..., :-1]
    deltas = torch.cat([deltas, torch.full_like(deltas[..., :1], 1e10)], -1)
    deltas = deltas * rays_d.norm(dim=-1, keepdim=True)
    if noise_std > 0:
        sigma = sigma + torch.randn_like(sigma) * noise_std
    alpha = 1.0 - torch.exp(-F.relu(sigma) * deltas)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1.0 - alpha + 1e-10], -1), -1)
    weights = alpha * trans[..., :-1]
    rgb_map = (weights[..., None] * rgb).sum(-2)
    depth = (weights * z).sum(-1)
    acc = weights.sum(-1)
    if white_bkgd:
        rgb_map = rgb_map + (1.0 - acc[..., None])
    return rgb_map, depth, weights


def sample_pdf(bins, weights, n_samples, det=False):
    weights = weights + 1e-5
    pdf = weights / weights.sum(-1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch.linspace(0.0, 1.0, n_samples).expand(*cdf.shape[:-1], n_samples).contiguous()
    else:
        u = torch.rand(*cdf.shape[:-1], n_samples)
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.clamp(inds - 1, min=0)
    above = torch.clamp(inds, max=cdf.shape[-1] - 1)
    cdf_lo, cdf_hi = cdf.gather(-1, below), cdf.gather(-1, above)
    bin_lo, bin_hi = bins.gather(-1, below), bins.gather(-1, above)
    denom = cdf_hi - cdf_lo
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_lo) / denom
    return bin_lo + t * (bin_hi - bin_lo)


class Renderer(nn.Module):
    def __init__(self, n_samples=16, n_importance=16, chunk=64):
        super().__init__()
        self.coarse = TinyNeRF()
        self.fine = TinyNeRF()
        self.n_samples = n_samples
        self.n_importance = n_importance
        self.chunk = chunk

    def render_rays(self, rays_o, rays_d, near, far, perturb, white_bkgd):
        dirs = F.normalize(rays_d, dim=-1)
        pts, z = stratified_samples(rays_o, rays_d, near, far, self.n_samples, perturb)
        sigma, rgb = self.coarse(pts, dirs)
        noise = 1.0 if self.training else 0.0
        rgb_c, depth_c, w = volume_render(sigma, rgb, z, rays_d, white_bkgd, noise_std=noise)
        out = {"rgb_coarse": rgb_c, "depth_coarse": depth_c}
        if self.n_importance > 0:
            z_mid = 0.5 * (z[..., 1:] + z[..., :-1])
            z_fine = sample_pdf(z_mid, w[..., 1:-1].detach(), self.n_importance, det=perturb == 0)
            z_all, _ = torch.sort(torch.cat([z, z_fine], -1), -1)
            pts = rays_o[..., None, :] + rays_d[..., None, :] * z_all[..., :, None]
            sigma, rgb = self.fine(pts, dirs)
            rgb_f, depth_f, _ = volume_render(sigma, rgb, z_all, rays_d, white_bkgd, noise_std=noise)
            out["rgb_fine"], out["depth_fine"] = rgb_f, depth_f
        return out

    def forward(self, rays_o, rays_d, near, far, perturb=1.0, white_bkgd=False):
        outs = []
        for i in range(0, rays_o.shape[0], self.chunk):
            outs.append(
                self.render_rays(
                    rays_o[i : i + self.chunk], rays_d[i : i + self.chunk], near, far, perturb, white_bkgd
                )
            )
        return {k: torch.cat([o[k] for o in outs], 0) for k in outs[0]}


@torch.no_grad()
def march_until_opaque(field, rays_o, rays_d, near, far, step_size, min_transmittance=1e-3):
    """Fixed-step ray marching with early termination, for fast previews."""
    dirs = F.normalize(rays_d, dim=-1)
    color = torch.zeros(rays_o.shape[0], 3)
    trans = torch.ones(rays_o.shape[0])
    t = near
    while t < far:
        pts = rays_o + rays_d * t
        sigma, rgb = field(pts[:, None], dirs)
        alpha = 1.0 - torch.exp(-F.relu(sigma[:, 0]) * step_size)
        color += (trans * alpha)[:, None] * rgb[:, 0]
        trans = trans * (1.0 - alpha)
        if trans.max() < min_transmittance:
            break
        t += step_size
    return color


def psnr(pred, target):
    mse = F.mse_loss(pred, target)
    return -10.0 * math.log10(mse.item())


def get_rays(h, w, focal, c2w):
    i, j = torch.meshgrid(torch.arange(w, dtype=torch.float32), torch.arange(h, dtype=torch.float32), indexing="xy")
    dirs = torch.stack([(i - w * 0.5) / focal, -(j - h * 0.5) / focal, -torch.ones_like(i)], -1)
    rays_d = (dirs[..., None, :] * c2w[:3, :3]).sum(-1)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o.reshape(-1, 3), rays_d.reshape(-1, 3)


torch.manual_seed(0)
renderer = Renderer()
optimizer = torch.optim.Adam(renderer.parameters(), lr=5e-4)


@torch.compile
def train_step(rays_o, rays_d, target, near, far, white_bkgd):
    out = renderer(rays_o, rays_d, near, far, perturb=1.0, white_bkgd=white_bkgd)
    loss = F.mse_loss(out["rgb_coarse"], target)
    if "rgb_fine" in out:
        loss = loss + F.mse_loss(out["rgb_fine"], target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach(), psnr(out["rgb_fine"], target)


def main():
    scenes = [
        {"near": 2.0, "far": 6.0, "white_bkgd": False},
        {"near": 0.5, "far": 2.5, "white_bkgd": True},
    ]
    for it in range(6):
        scene = scenes[it % 2]
        n_rays = 96 if it < 4 else 128
        rays_o = torch.randn(n_rays, 3) * 0.1
        rays_d = torch.randn(n_rays, 3)
        target = torch.rand(n_rays, 3)
        loss, p = train_step(rays_o, rays_d, target, scene["near"], scene["far"], scene["white_bkgd"])
        print(f"iter {it} loss {loss.item():.4f} psnr {p:.2f}")

    renderer.eval()
    render = torch.compile(renderer)
    c2w = torch.eye(4)[:3]
    c2w[2, 3] = 4.0
    with torch.no_grad():
        rays_o, rays_d = get_rays(12, 16, 20.0, c2w)
        img = render(rays_o, rays_d, 2.0, 6.0, perturb=0.0)["rgb_fine"].reshape(12, 16, 3)
        print("render", tuple(img.shape))
    preview = torch.compile(march_until_opaque)
    for step_size in (0.5, 0.25):
        col = preview(renderer.coarse, rays_o[:32], rays_d[:32], 2.0, 6.0, step_size)
        print("preview", step_size, col.mean().item())


if __name__ == "__main__":
    main()
