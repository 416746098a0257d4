"""Semi-supervised image classification in the FixMatch style, with class-wise adaptive thresholds
(FlexMatch) and an EMA teacher.

Each step sees a labelled batch and weak/strong views of an unlabelled batch; confident weak-view
predictions become pseudo-labels for the strong view. The unsupervised weight ramps up, the EMA decay
warms up, and the per-class thresholds follow how often each class is confidently predicted.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNet(nn.Module):
    def __init__(self, n_classes=5, width=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(2 * width, n_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class EMA:
    def __init__(self, model, max_decay=0.999):
        self.model = copy.deepcopy(model).eval()
        self.max_decay = max_decay
        self.updates = 0

    @torch.no_grad()
    def update(self, model):
        self.updates += 1
        decay = min(self.max_decay, (1 + self.updates) / (10 + self.updates))
        for ema_p, p in zip(self.model.parameters(), model.parameters()):
            ema_p.mul_(decay).add_(p.detach(), alpha=1 - decay)
        for ema_b, b in zip(self.model.buffers(), model.buffers()):
            ema_b.copy_(b)


class FlexThresholds:
    def __init__(self, n_classes, n_unlabelled, base=0.95, warmup=True):
        self.base = base
        self.warmup = warmup
        self.n_classes = n_classes
        self.selected = torch.full((n_unlabelled,), -1, dtype=torch.long)

    def thresholds(self):
        counts = torch.bincount(self.selected[self.selected >= 0], minlength=self.n_classes).float()
        if self.warmup:
            unused = (self.selected < 0).sum()
            denom = torch.maximum(counts.max(), unused.float())
        else:
            denom = counts.max()
        beta = counts / denom.clamp(min=1)
        return self.base * (beta / (2 - beta))  # convex mapping

    def update(self, idx, pseudo, confident):
        self.selected[idx[confident]] = pseudo[confident]


N_CLASSES, N_UNLABELLED = 5, 64
torch.manual_seed(0)
model = ConvNet(N_CLASSES)
ema = EMA(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, nesterov=True)
flex = FlexThresholds(N_CLASSES, N_UNLABELLED)


def fixmatch_step(x_l, y_l, x_uw, x_us, u_idx, lambda_u, temperature=1.0):
    n_l, n_u = x_l.shape[0], x_uw.shape[0]
    logits = model(torch.cat([x_l, x_uw, x_us]))
    logits_l, logits_uw, logits_us = logits.split([n_l, n_u, n_u])
    loss_x = F.cross_entropy(logits_l, y_l)

    probs = torch.softmax(logits_uw.detach() / temperature, dim=-1)
    max_p, pseudo = probs.max(dim=-1)
    class_thr = flex.thresholds()
    mask = max_p >= class_thr[pseudo]
    flex.update(u_idx, pseudo, mask)
    loss_u = (F.cross_entropy(logits_us, pseudo, reduction="none") * mask.float()).mean()

    loss = loss_x + lambda_u * loss_u
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ema.update(model)
    return {"loss": loss.item(), "loss_u": loss_u.item(), "mask_rate": mask.float().mean().item()}


@torch.no_grad()
def evaluate(x, y, use_ema=True):
    net = ema.model if use_ema else model
    net.eval()
    acc = (net(x).argmax(-1) == y).float().mean()
    return acc


step_fn = torch.compile(fixmatch_step)
eval_fn = torch.compile(evaluate)


def main():
    ramp_up = 4
    for step in range(6):
        b_l, mu = 4, 2
        x_l = torch.randn(b_l, 3, 16, 16)
        y_l = torch.randint(0, N_CLASSES, (b_l,))
        u_idx = torch.randperm(N_UNLABELLED)[: b_l * mu]
        x_uw = torch.randn(b_l * mu, 3, 16, 16)
        x_us = x_uw + 0.3 * torch.randn_like(x_uw)
        lambda_u = min(1.0, step / ramp_up)
        stats = step_fn(x_l, y_l, x_uw, x_us, u_idx, lambda_u)
        print(f"step {step} " + " ".join(f"{k}={v:.3f}" for k, v in stats.items()))
    x, y = torch.randn(10, 3, 16, 16), torch.randint(0, N_CLASSES, (10,))
    for use_ema in (True, False):
        print("acc", use_ema, eval_fn(x, y, use_ema=use_ema).item())


if __name__ == "__main__":
    main()
