"""A small CTC speech recogniser: log-mel features -> conv subsampling -> transformer encoder -> CTC.

Training applies SpecAugment (random time and frequency masks) inside the model, uses padded batches
with per-utterance lengths, and CTC loss. Evaluation decodes greedily (collapse repeats, drop blanks)
and reports the character error rate.
"""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = ["<blank>", " "] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["'"]


class SpecAugment(nn.Module):
    def __init__(self, freq_masks=2, freq_width=4, time_masks=2, time_width=6):
        super().__init__()
        self.freq_masks, self.freq_width = freq_masks, freq_width
        self.time_masks, self.time_width = time_masks, time_width

    def forward(self, feats, lengths):
        if not self.training:
            return feats
        feats = feats.clone()
        b, t, f = feats.shape
        for i in range(b):
            for _ in range(self.freq_masks):
                w = random.randint(0, self.freq_width)
                f0 = random.randint(0, f - w)
                feats[i, :, f0 : f0 + w] = 0.0
            max_t = int(lengths[i])
            for _ in range(self.time_masks):
                w = random.randint(0, min(self.time_width, max_t // 5))
                t0 = random.randint(0, max_t - w)
                feats[i, t0 : t0 + w, :] = 0.0
        return feats


class ConvSubsample(nn.Module):
    def __init__(self, n_mels, dim):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.out = nn.Linear(8 * ((n_mels + 3) // 4), dim)

    def forward(self, x, lengths):
        x = self.conv(x.unsqueeze(1))
        b, c, t, f = x.shape
        x = self.out(x.transpose(1, 2).reshape(b, t, c * f))
        lengths = (lengths + 1) // 2
        lengths = (lengths + 1) // 2
        return x, lengths


class CTCModel(nn.Module):
    def __init__(self, n_mels=20, dim=32, layers=2, vocab=len(VOCAB)):
        super().__init__()
        self.specaug = SpecAugment()
        self.subsample = ConvSubsample(n_mels, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.classifier = nn.Linear(dim, vocab)

    def forward(self, feats, feat_lens):
        feats = self.specaug(feats, feat_lens)
        x, out_lens = self.subsample(feats, feat_lens)
        pad_mask = torch.arange(x.shape[1], device=x.device)[None, :] >= out_lens[:, None]
        x = self.encoder(x, src_key_padding_mask=pad_mask)
        return self.classifier(x).log_softmax(-1), out_lens


def greedy_decode(log_probs, lengths, blank=0):
    best = log_probs.argmax(-1)
    hyps = []
    for b in range(best.shape[0]):
        seq = best[b, : lengths[b]]
        seq = torch.unique_consecutive(seq)
        seq = seq[seq != blank]
        hyps.append("".join(VOCAB[i] for i in seq.tolist()))
    return hyps


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, cb in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (ca != cb))
    return d[-1]


torch.manual_seed(0)
random.seed(0)
model = CTCModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)


def train_step(feats, feat_lens, targets, target_lens):
    log_probs, out_lens = model(feats, feat_lens)
    loss = F.ctc_loss(
        log_probs.transpose(0, 1), targets, out_lens, target_lens, blank=0, zero_infinity=True
    )
    optimizer.zero_grad()
    loss.backward()
    grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    return loss.detach(), grad_norm


@torch.no_grad()
def evaluate(feats, feat_lens, references):
    log_probs, out_lens = model(feats, feat_lens)
    hyps = greedy_decode(log_probs, out_lens)
    errors = sum(edit_distance(h, r) for h, r in zip(hyps, references))
    return hyps, errors / max(1, sum(len(r) for r in references))


train_fn = torch.compile(train_step)
eval_fn = torch.compile(evaluate)


def make_batch(b, max_frames, n_mels=20):
    lens = torch.randint(max_frames // 2, max_frames + 1, (b,))
    lens[0] = max_frames
    feats = torch.randn(b, max_frames, n_mels)
    texts = ["".join(random.choice(VOCAB[1:]) for _ in range(random.randint(2, 5))) for _ in range(b)]
    targets = torch.tensor([VOCAB.index(c) for t in texts for c in t])
    target_lens = torch.tensor([len(t) for t in texts])
    return feats, lens, targets, target_lens, texts


def main():
    model.train()
    for step in range(4):
        max_frames = 48 if step < 2 else 64
        feats, lens, targets, target_lens, _ = make_batch(3, max_frames)
        loss, gnorm = train_fn(feats, lens, targets, target_lens)
        print(f"step {step} loss {loss.item():.3f} grad {gnorm.item():.2f}")
    model.eval()
    for max_frames in (40, 56):
        feats, lens, _, _, texts = make_batch(2, max_frames)
        hyps, cer = eval_fn(feats, lens, texts)
        print(f"eval cer {cer:.2f} hyp0={hyps[0]!r}")


if __name__ == "__main__":
    main()
