"""Tiny random-weight transformers models for ``benchmarks/verify_bench.py``: factories and input sets.

Each factory builds a model from a small config (random weights, nothing downloaded); each input
factory gives a short stream of token batches of one shape (the steady state of a serving loop).
"""
from __future__ import annotations

import torch
import torch.nn as nn

VOCAB, SEQ, BATCH, CALLS = 512, 32, 2, 4


def _small(config_cls, **extra):
    return config_cls(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=128, max_position_embeddings=128, **extra)


def tiny_bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    return BertModel(_small(BertConfig))


def tiny_llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    return LlamaModel(_small(LlamaConfig, num_key_value_heads=2))


def tiny_gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=128))


def token_inputs():
    g = torch.Generator().manual_seed(0)
    return [((), (torch.randint(0, VOCAB, (BATCH, SEQ), generator=g),)) for _ in range(CALLS)]
