"""Seq2seq decoder with teacher forcing and an attention-over-encoder step, unrolled over a fixed length."""
import random

import torch
import torch.nn as nn


class AdditiveAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w = nn.Linear(2 * dim, dim)
        self.v = nn.Linear(dim, 1, bias=False)

    def forward(self, query, keys):
        q = query.unsqueeze(1).expand(-1, keys.size(1), -1)
        energy = self.v(torch.tanh(self.w(torch.cat([q, keys], -1)))).squeeze(-1)
        weights = energy.softmax(-1)
        return torch.bmm(weights.unsqueeze(1), keys).squeeze(1)


class AttnDecoder(nn.Module):
    def __init__(self, vocab=12, dim=8, teacher_forcing=0.5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.attn = AdditiveAttention(dim)
        self.cell = nn.LSTMCell(2 * dim, dim)
        self.out = nn.Linear(dim, vocab)
        self.teacher_forcing = teacher_forcing

    def forward(self, enc_out, targets):
        B, T = targets.shape
        h = enc_out.mean(1)
        c = torch.zeros_like(h)
        tok = targets[:, 0]
        logits = []
        for t in range(1, T):
            ctx = self.attn(h, enc_out)
            h, c = self.cell(torch.cat([self.emb(tok), ctx], -1), (h, c))
            step_logits = self.out(h)
            logits.append(step_logits)
            use_tf = self.training and random.random() < self.teacher_forcing
            tok = targets[:, t] if use_tf else step_logits.argmax(-1)
        return torch.stack(logits, 1)


class GreedyDecoder(AttnDecoder):
    def __init__(self):
        super().__init__(teacher_forcing=0.0)
        self.eval()


def make_inputs():
    return [((), (torch.randn(2, 5, 8), torch.randint(0, 12, (2, 4)))) for _ in range(2)]


EXAMPLES = {"AttnDecoder": make_inputs, "GreedyDecoder": make_inputs}
