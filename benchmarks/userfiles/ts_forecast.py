"""Multi-horizon time-series forecasting with missing values.

An LSTM encoder reads the observed window (values with NaNs for gaps, plus the observation mask); a GRU
cell decodes the horizon one step at a time with known future covariates, fed either its own prediction
or the ground truth (scheduled teacher forcing). Series are normalised per instance over the observed
values only, and the loss is a masked MAE.
"""
import random

import torch
import torch.nn as nn


class InstanceNorm:
    """Per-series normalisation over observed values (RevIN without the affine part)."""

    def __init__(self, eps=1e-5):
        self.eps = eps

    def fit(self, x, mask):
        n = mask.sum(1, keepdim=True).clamp(min=1)
        x0 = torch.nan_to_num(x)
        self.mean = (x0 * mask).sum(1, keepdim=True) / n
        var = (((x0 - self.mean) * mask) ** 2).sum(1, keepdim=True) / n
        self.std = torch.sqrt(var + self.eps)
        return self

    def norm(self, x):
        return (x - self.mean) / self.std

    def denorm(self, y):
        return y * self.std[..., :1] + self.mean[..., :1]


class Forecaster(nn.Module):
    def __init__(self, n_features=3, n_covariates=2, hidden=32, horizon=6):
        super().__init__()
        self.horizon = horizon
        self.encoder = nn.LSTM(2 * n_features, hidden, batch_first=True)
        self.decoder = nn.GRUCell(1 + n_covariates, hidden)
        self.head = nn.Linear(hidden, 1)
        self.dropout = nn.Dropout(0.1)

    def forward(self, past, past_mask, future_cov, target=None, teacher_forcing=0.0, horizon=None):
        horizon = horizon or self.horizon
        x = torch.cat([torch.nan_to_num(past), past_mask.float()], dim=-1)
        _, (h, _) = self.encoder(self.dropout(x))
        h = h[-1]
        y_prev = torch.nan_to_num(past[:, -1, :1])
        outputs = []
        for t in range(horizon):
            h = self.decoder(torch.cat([y_prev, future_cov[:, t]], dim=-1), h)
            y = self.head(h)
            outputs.append(y)
            if target is not None and random.random() < teacher_forcing:
                y_prev = target[:, t : t + 1]
            else:
                y_prev = y
        return torch.cat(outputs, dim=1)


def masked_mae(pred, target, mask):
    mask = mask.float()
    if mask.sum() == 0:
        return pred.sum() * 0.0
    return ((pred - torch.nan_to_num(target)).abs() * mask).sum() / mask.sum()


torch.manual_seed(0)
random.seed(0)
model = Forecaster()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
norm = InstanceNorm()


def train_step(past, future, future_cov, teacher_forcing):
    past_mask = ~torch.isnan(past)
    future_mask = ~torch.isnan(future)
    norm.fit(past, past_mask)
    past_n = norm.norm(past)
    target_n = norm.norm(future)[..., 0]
    pred = model(past_n, past_mask, future_cov, target=target_n, teacher_forcing=teacher_forcing)
    loss = masked_mae(pred, target_n, future_mask[..., 0])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def forecast(past, future_cov, horizon):
    past_mask = ~torch.isnan(past)
    norm.fit(past, past_mask)
    pred = model(norm.norm(past), past_mask, future_cov, horizon=horizon)
    return norm.denorm(pred)


step_fn = torch.compile(train_step)
forecast_fn = torch.compile(forecast)


def make_batch(b, lookback, horizon, missing=0.1):
    t = torch.arange(lookback + horizon, dtype=torch.float32)
    phase = torch.rand(b, 1) * 6.28
    series = torch.sin(t / 4 + phase)[..., None] + 0.1 * torch.randn(b, lookback + horizon, 3)
    series[torch.rand(b, lookback + horizon, 3) < missing] = float("nan")
    cov = torch.stack([torch.sin(t / 12), torch.cos(t / 12)], -1).expand(b, -1, -1)
    return series[:, :lookback], series[:, lookback:], cov[:, lookback:]


def main():
    epochs = 5
    for epoch in range(epochs):
        teacher_forcing = max(0.0, 1.0 - epoch / (epochs - 1))  # linear decay to free running
        lookback = 24 if epoch % 2 == 0 else 36
        past, future, cov = make_batch(4, lookback, 6)
        loss = step_fn(past, future, cov, teacher_forcing)
        print(f"epoch {epoch} tf={teacher_forcing:.2f} lookback={lookback} loss {loss:.4f}")

    model.eval()
    for horizon in (6, 12):
        past, _, cov = make_batch(2, 24, horizon, missing=0.0)
        pred = forecast_fn(past, cov, horizon)
        print("forecast", tuple(pred.shape))


if __name__ == "__main__":
    main()
