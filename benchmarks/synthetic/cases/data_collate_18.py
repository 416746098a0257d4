"""Batch preparation done inside the model: padding ragged sequences, length masks, packing for the RNN."""
from typing import List

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


class SequenceEncoder(nn.Module):
    def __init__(self, vocab=30, dim=8, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.emb = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.proj = nn.Linear(dim, dim)

    def forward(self, seqs: List[torch.Tensor]):
        lengths = torch.tensor([len(s) for s in seqs])
        tokens = pad_sequence(seqs, batch_first=True, padding_value=self.pad_id)
        mask = torch.arange(tokens.shape[1])[None, :] < lengths[:, None]
        h = self.proj(self.emb(tokens)) * mask.unsqueeze(-1)
        return h.sum(1) / lengths[:, None]


class PackedGRU(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.gru = nn.GRU(dim, dim, batch_first=True)

    def forward(self, x, lengths):
        max_len = int(lengths.max())
        x = x[:, :max_len]
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return out


def make_inputs():
    return [((), ([torch.randint(1, 30, (5,)), torch.randint(1, 30, (3,)), torch.randint(1, 30, (4,))],))
            for _ in range(2)]


def make_inputs_gru():
    return [((), (torch.randn(3, 6, 8), torch.tensor(lens))) for lens in ([6, 4, 2], [5, 4, 2])]


EXAMPLES = {"SequenceEncoder": make_inputs, "PackedGRU": make_inputs_gru}
