"""Logit processors and sampling for autoregressive decoding: temperature, top-k, top-p, greedy loop."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("inf"), min_tokens_to_keep=1):
    if top_k > 0:
        top_k = min(max(top_k, min_tokens_to_keep), logits.size(-1))
        kth = torch.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(logits < kth, filter_value)
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_to_remove = cumulative_probs > top_p
        sorted_to_remove[..., :min_tokens_to_keep] = 0
        to_remove = sorted_to_remove.scatter(1, sorted_indices, sorted_to_remove)
        logits = logits.masked_fill(to_remove, filter_value)
    return logits


class TinyLM(nn.Module):
    def __init__(self, vocab=20, dim=16, eos_id=0):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRUCell(dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.eos_id = eos_id

    def step(self, tok, h):
        h = self.rnn(self.emb(tok), h)
        return self.head(h), h

    @torch.no_grad()
    def forward(self, prompt_last, max_new_tokens: int = 6):
        h = torch.zeros(prompt_last.shape[0], self.emb.embedding_dim)
        tok = prompt_last
        out = []
        finished = torch.zeros_like(tok, dtype=torch.bool)
        step = 0
        while step < max_new_tokens:
            logits, h = self.step(tok, h)
            tok = logits.argmax(-1)
            tok = tok.masked_fill(finished, self.eos_id)
            out.append(tok)
            finished |= tok == self.eos_id
            if finished.all():
                break
            step += 1
        return torch.stack(out, 1)


def sample_next(logits, temperature=0.8, top_k=5, top_p=0.9):
    logits = logits / max(temperature, 1e-5)
    logits = top_k_top_p_filtering(logits, top_k=top_k, top_p=top_p)
    probs = F.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1)


def make_inputs():
    return [(torch.randn(3, 20),) for _ in range(2)]


def make_inputs_lm():
    return [((), (torch.tensor([3, 4]),)) for _ in range(2)]


EXAMPLES = {"sample_next": make_inputs, "TinyLM": make_inputs_lm}
