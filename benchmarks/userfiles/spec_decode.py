"""Speculative decoding: a small draft model proposes ``k`` tokens, the target model scores them in one
pass, and tokens are accepted by the usual rejection-sampling rule. Sampling uses temperature and
nucleus (top-p) filtering; greedy decoding when the temperature is 0.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=32, layers=2, heads=4, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def top_p_filter(logits, top_p):
    sorted_logits, sorted_idx = torch.sort(logits, descending=True)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    remove = cum > top_p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
    return logits.scatter(-1, sorted_idx, sorted_logits)


def probs_from_logits(logits, temperature, top_p):
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    logits = logits / temperature
    if top_p < 1.0:
        logits = top_p_filter(logits, top_p)
    return logits.softmax(-1)


@torch.no_grad()
def speculative_generate(target, draft, prompt, max_new_tokens, k=4, temperature=1.0, top_p=1.0, eos_id=None):
    tokens = prompt
    n_prompt = prompt.shape[1]
    accepted_total = 0
    while tokens.shape[1] - n_prompt < max_new_tokens:
        # 1. the draft proposes k tokens autoregressively
        proposal = tokens
        q_list = []
        for _ in range(k):
            q = probs_from_logits(draft(proposal)[:, -1], temperature, top_p)
            nxt = torch.multinomial(q, 1)
            q_list.append(q)
            proposal = torch.cat([proposal, nxt], dim=1)
        # 2. the target scores all of them at once
        p_all = probs_from_logits(target(proposal)[:, -k - 1 :], temperature, top_p)
        drafted = proposal[:, -k:]
        # 3. accept each drafted token with probability min(1, p/q)
        n_accept = 0
        for i in range(k):
            tok = drafted[0, i]
            ratio = p_all[0, i, tok] / q_list[i][0, tok]
            if torch.rand(()) < ratio:
                n_accept += 1
            else:
                break
        if n_accept < k:
            residual = (p_all[:, n_accept] - q_list[n_accept]).clamp(min=0)
            residual = residual / residual.sum(-1, keepdim=True)
            extra = torch.multinomial(residual, 1)
        else:
            extra = torch.multinomial(p_all[:, k], 1)
        tokens = torch.cat([tokens, drafted[:, :n_accept], extra], dim=1)
        accepted_total += n_accept
        if eos_id is not None and (tokens[0, -n_accept - 1 :] == eos_id).any():
            break
    return tokens[:, : n_prompt + max_new_tokens], accepted_total


torch.manual_seed(0)
target_model = TinyLM(dim=48, layers=3).eval()
draft_model = TinyLM(dim=16, layers=1).eval()
generate = torch.compile(speculative_generate)


def main():
    prompts = [torch.randint(0, 64, (1, 5)), torch.randint(0, 64, (1, 9))]
    settings = [
        {"temperature": 1.0, "top_p": 0.9, "k": 3},
        {"temperature": 0.7, "top_p": 0.9, "k": 3},
        {"temperature": 0.0, "top_p": 1.0, "k": 4},
    ]
    for prompt in prompts:
        for cfg in settings:
            out, acc = generate(target_model, draft_model, prompt, 6, eos_id=1, **cfg)
            print(f"prompt {prompt.shape[1]} {cfg} -> {out.shape[1]} tokens, accepted {acc}")


if __name__ == "__main__":
    main()
