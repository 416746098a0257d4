"""Beam-search bookkeeping: reorder hypotheses, length-penalised scores, and finished-beam tracking."""
from typing import List, NamedTuple

import torch


class BeamState(NamedTuple):
    tokens: torch.Tensor
    scores: torch.Tensor
    finished: torch.Tensor


def length_penalty(lengths: torch.Tensor, alpha: float = 0.6) -> torch.Tensor:
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def beam_step(state: BeamState, log_probs: torch.Tensor, beam_size: int, eos_id: int = 1) -> BeamState:
    batch_beam, vocab = log_probs.shape
    batch = batch_beam // beam_size
    log_probs = torch.where(state.finished[:, None], torch.full_like(log_probs, -1e9), log_probs)
    cand = (state.scores[:, None] + log_probs).view(batch, beam_size * vocab)
    top_scores, top_idx = cand.topk(beam_size, dim=-1)
    beam_idx = torch.div(top_idx, vocab, rounding_mode="floor")
    tok_idx = top_idx % vocab
    base = (torch.arange(batch) * beam_size)[:, None]
    src = (base + beam_idx).view(-1)
    tokens = torch.cat([state.tokens[src], tok_idx.view(-1, 1)], dim=1)
    finished = state.finished[src] | (tok_idx.view(-1) == eos_id)
    return BeamState(tokens, top_scores.view(-1), finished)


def finalize_beams(state: BeamState, beam_size: int) -> List[List[int]]:
    lengths = torch.full_like(state.scores, state.tokens.shape[1])
    normed = state.scores / length_penalty(lengths)
    best = normed.view(-1, beam_size).argmax(-1)
    hyps = []
    for b, k in enumerate(best.tolist()):
        hyps.append(state.tokens[b * beam_size + k].tolist())
    return hyps


def make_state():
    return BeamState(torch.randint(2, 9, (4, 3)), torch.randn(4), torch.zeros(4, dtype=torch.bool))


def make_inputs_step():
    return [(make_state(), torch.log_softmax(torch.randn(4, 9), -1), 2) for _ in range(2)]


def make_inputs_final():
    return [(make_state(), 2) for _ in range(2)]


EXAMPLES = {"beam_step": make_inputs_step, "finalize_beams": make_inputs_final}
